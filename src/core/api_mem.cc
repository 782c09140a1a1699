// SPDX-License-Identifier: Apache-2.0
// C API: symmetric memory.
#include "core/api_guard.hpp"
#include "core/comm.hpp"

using gicl::Status;

namespace {
Status need_heap(gicl_comm_t comm) {
  GICL_ARG_CHECK(comm != nullptr, "comm must not be NULL");
  if (!comm->heap)
    return GICL_FAIL(GICL_UNSUPPORTED,
                     "this communicator has no symmetric heap: some rank has no CUDA device");
  return GICL_SUCCESS;
}
}  // namespace

extern "C" {

gicl_result_t gicl_mem_alloc(gicl_comm_t comm, size_t bytes, void** ptr) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(ptr != nullptr, "ptr must not be NULL");
    *ptr = nullptr;
    GICL_CHECK(need_heap(comm));
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    gicl::CommOp op(comm);
    GICL_CHECK(op.check());
    // bytes == 0 is rejected after the size agreement so that every rank fails together.
    GICL_CHECK(comm->heap->alloc(bytes, ptr));
    gicl::device_resources_note_heap(comm);  // GICL_DEVICE_CHECKS bounds follow the heap's growth
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_mem_free(gicl_comm_t comm, void* ptr) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(need_heap(comm));
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    gicl::CommOp op(comm);
    GICL_CHECK(op.check());
    return comm->heap->free(ptr);
  });
}

gicl_result_t gicl_comm_register(gicl_comm_t comm, void* buff, size_t size, void** handle) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(handle != nullptr, "gicl_comm_register: handle must not be NULL");
    *handle = nullptr;
    GICL_CHECK(need_heap(comm));
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    gicl::CommOp op(comm);
    GICL_CHECK(op.check());
    gicl::DeviceScope device(comm->device);
    if (!comm->registry)
      GICL_CHECK(gicl::BufferRegistry::create(comm->bootstrap.get(), comm->peers, comm->paths,
                                              comm->device, &comm->registry));
    Status bad = GICL_SUCCESS;
    if (buff == nullptr)
      bad = GICL_FAIL(GICL_INVALID_ARGUMENT, "gicl_comm_register: buff must not be NULL");
    else if (size == 0)
      bad = GICL_FAIL(GICL_INVALID_ARGUMENT, "gicl_comm_register: size must be > 0");
    // Still collective: the peers learn that this rank failed instead of waiting for it.
    GICL_CHECK(comm->bootstrap->agree(bad, "register a buffer"));
    uintptr_t h = 0;
    GICL_CHECK(comm->registry->add(buff, size, comm->heap.get(), &h));
    *handle = reinterpret_cast<void*>(h);
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_comm_deregister(gicl_comm_t comm, void* handle) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(need_heap(comm));
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    gicl::CommOp op(comm);
    GICL_CHECK(op.check());
    if (!comm->registry)
      return GICL_FAIL(
          GICL_INVALID_ARGUMENT,
          "gicl_comm_deregister: handle=%p: nothing is registered on this communicator", handle);
    return comm->registry->remove(reinterpret_cast<uintptr_t>(handle));
  });
}

gicl_result_t gicl_mem_peer_ptr(gicl_comm_t comm, const void* ptr, int peer, void** peer_ptr) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(need_heap(comm));
    GICL_ARG_CHECK(peer_ptr != nullptr, "peer_ptr must not be NULL");
    GICL_ARG_CHECK(peer >= 0 && peer < comm->nranks, "peer=%d is out of range [0, %d)", peer,
                   comm->nranks);
    uint64_t off = 0;
    GICL_ARG_CHECK(comm->heap->offset_of(ptr, &off),
                   "ptr=%p is not an address in this communicator's symmetric heap", ptr);
    *peer_ptr = comm->heap->peer_ptr(ptr, peer);
    return GICL_SUCCESS;
  });
}

}  // extern "C"
