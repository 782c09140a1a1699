// C API: symmetric memory.
#include "core/api_guard.hpp"
#include "core/comm.hpp"

using ccl::Status;

namespace {
Status need_heap(ccl_comm_t comm) {
  CCL_ARG_CHECK(comm != nullptr, "comm must not be NULL");
  if (!comm->heap)
    return CCL_FAIL(CCL_UNSUPPORTED,
                    "this communicator has no symmetric heap: some rank has no CUDA device");
  return CCL_SUCCESS;
}
}  // namespace

extern "C" {

ccl_result_t ccl_mem_alloc(ccl_comm_t comm, size_t bytes, void** ptr) {
  return ccl::api_call([&]() -> Status {
    CCL_ARG_CHECK(ptr != nullptr, "ptr must not be NULL");
    *ptr = nullptr;
    CCL_CHECK(need_heap(comm));
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    ccl::CommOp op(comm);
    CCL_CHECK(op.check());
    // bytes == 0 is rejected after the size agreement so that every rank fails together.
    CCL_CHECK(comm->heap->alloc(bytes, ptr));
    ccl::device_resources_note_heap(comm);  // CCL_DEVICE_CHECKS bounds follow the heap's growth
    return CCL_SUCCESS;
  });
}

ccl_result_t ccl_mem_free(ccl_comm_t comm, void* ptr) {
  return ccl::api_call([&]() -> Status {
    CCL_CHECK(need_heap(comm));
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    ccl::CommOp op(comm);
    CCL_CHECK(op.check());
    return comm->heap->free(ptr);
  });
}

ccl_result_t ccl_comm_register(ccl_comm_t comm, void* buff, size_t size, void** handle) {
  return ccl::api_call([&]() -> Status {
    CCL_ARG_CHECK(handle != nullptr, "ccl_comm_register: handle must not be NULL");
    *handle = nullptr;
    CCL_CHECK(need_heap(comm));
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    ccl::CommOp op(comm);
    CCL_CHECK(op.check());
    ccl::DeviceScope device(comm->device);
    if (!comm->registry)
      CCL_CHECK(ccl::BufferRegistry::create(comm->bootstrap.get(), comm->peers, comm->paths,
                                            comm->device, &comm->registry));
    Status bad = CCL_SUCCESS;
    if (buff == nullptr)
      bad = CCL_FAIL(CCL_INVALID_ARGUMENT, "ccl_comm_register: buff must not be NULL");
    else if (size == 0)
      bad = CCL_FAIL(CCL_INVALID_ARGUMENT, "ccl_comm_register: size must be > 0");
    // Still collective: the peers learn that this rank failed instead of waiting for it.
    CCL_CHECK(comm->bootstrap->agree(bad, "register a buffer"));
    uintptr_t h = 0;
    CCL_CHECK(comm->registry->add(buff, size, comm->heap.get(), &h));
    *handle = reinterpret_cast<void*>(h);
    return CCL_SUCCESS;
  });
}

ccl_result_t ccl_comm_deregister(ccl_comm_t comm, void* handle) {
  return ccl::api_call([&]() -> Status {
    CCL_CHECK(need_heap(comm));
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    ccl::CommOp op(comm);
    CCL_CHECK(op.check());
    if (!comm->registry)
      return CCL_FAIL(CCL_INVALID_ARGUMENT,
                      "ccl_comm_deregister: handle=%p: nothing is registered on this communicator",
                      handle);
    return comm->registry->remove(reinterpret_cast<uintptr_t>(handle));
  });
}

ccl_result_t ccl_mem_peer_ptr(ccl_comm_t comm, const void* ptr, int peer, void** peer_ptr) {
  return ccl::api_call([&]() -> Status {
    CCL_CHECK(need_heap(comm));
    CCL_ARG_CHECK(peer_ptr != nullptr, "peer_ptr must not be NULL");
    CCL_ARG_CHECK(peer >= 0 && peer < comm->nranks, "peer=%d is out of range [0, %d)", peer,
                  comm->nranks);
    uint64_t off = 0;
    CCL_ARG_CHECK(comm->heap->offset_of(ptr, &off),
                  "ptr=%p is not an address in this communicator's symmetric heap", ptr);
    *peer_ptr = comm->heap->peer_ptr(ptr, peer);
    return CCL_SUCCESS;
  });
}

}  // extern "C"
