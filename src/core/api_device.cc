// C API: device handles, queue pairs, host stream operations, collective launch.
#include "core/api_guard.hpp"
#include "core/comm.hpp"
#include "core/stream_kernels.cuh"

using ccl::Status;

namespace {

Status need_comm(ccl_comm_t comm) {
  CCL_ARG_CHECK(comm != nullptr, "comm must not be NULL");
  return CCL_SUCCESS;
}

// The peer's copy of a symmetric range, with the checks every stream operation makes.
Status peer_range(ccl_comm_t comm, const void* sym, size_t bytes, int peer, const char* what,
                  void** out) {
  if (!comm->heap)
    return CCL_FAIL(CCL_UNSUPPORTED, "this communicator has no symmetric heap (no CUDA device)");
  CCL_ARG_CHECK(peer >= 0 && peer < comm->nranks, "peer=%d is out of range [0, %d)", peer,
                comm->nranks);
  uint64_t off = 0;
  CCL_ARG_CHECK(comm->heap->offset_of(sym, &off), "%s=%p is not in the symmetric heap", what, sym);
  CCL_ARG_CHECK(bytes <= comm->heap->mapped_bytes() - off,
                "bytes=%zu runs past the end of the symmetric heap from %s", bytes, what);
  *out = comm->heap->peer_ptr(sym, peer);
  if (*out == nullptr)
    return CCL_FAIL(CCL_UNSUPPORTED,
                    "rank %d is not load/store reachable and this build has no "
                    "network transport yet",
                    peer);
  return CCL_SUCCESS;
}

}  // namespace

extern "C" {

ccl_result_t ccl_comm_get_device_comm(ccl_comm_t comm, ccl_device_comm_t* dcomm) {
  return ccl::api_call([&]() -> Status {
    CCL_CHECK(need_comm(comm));
    CCL_ARG_CHECK(dcomm != nullptr, "dcomm must not be NULL");
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    ccl::CommOp op(comm);
    CCL_CHECK(op.check());
    return ccl::device_comm_handle(comm, dcomm);
  });
}

ccl_result_t ccl_team_get_device(ccl_team_t team, ccl_device_team_t* dteam) {
  return ccl::api_call([&]() -> Status {
    CCL_ARG_CHECK(team != nullptr, "team must not be NULL");
    CCL_ARG_CHECK(dteam != nullptr, "dteam must not be NULL");
    std::lock_guard<std::mutex> lock(team->comm->op_mutex);
    return ccl::device_team(team->comm, team, dteam);
  });
}

ccl_result_t ccl_qp_create(ccl_comm_t comm, int n, ccl_qp_t* qps) {
  return ccl::api_call([&]() -> Status {
    CCL_CHECK(need_comm(comm));
    CCL_ARG_CHECK(qps != nullptr, "qps must not be NULL");
    CCL_ARG_CHECK(n >= 1 && n <= 4096, "n=%d must be in [1, 4096]", n);
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    ccl::CommOp op(comm);
    CCL_CHECK(op.check());
    // Collective so that every rank agrees on the queue pairs once network transports exist.
    std::vector<int32_t> counts(comm->nranks);
    counts[comm->rank] = n;
    CCL_CHECK(comm->bootstrap->allgather(counts.data(), sizeof(int32_t)));
    for (int r = 0; r < comm->nranks; ++r)
      if (counts[r] != n)
        return CCL_FAIL(CCL_INVALID_ARGUMENT,
                        "ccl_qp_create: rank %d asked for %d queue pairs, "
                        "rank %d for %d",
                        r, counts[r], comm->rank, n);
    for (int r = 0; r < comm->nranks; ++r)
      if (comm->paths[r] == ccl::PeerPath::kNetwork)
        return CCL_FAIL(CCL_UNSUPPORTED,
                        "rank %d needs a network transport, which this build "
                        "does not have yet",
                        r);
    // Every peer over NVLink: extra queue pairs bring nothing, all map to the default.
    for (int i = 0; i < n; ++i) qps[i].id = CCL_QP_DEFAULT_ID;
    return CCL_SUCCESS;
  });
}

ccl_result_t ccl_put_on_stream(ccl_comm_t comm, void* dst, const void* src, size_t bytes, int peer,
                               cudaStream_t stream) {
  return ccl::api_call([&]() -> Status {
    CCL_CHECK(need_comm(comm));
    CCL_ARG_CHECK(src != nullptr || bytes == 0, "src must not be NULL");
    void* remote = nullptr;
    CCL_CHECK(peer_range(comm, dst, bytes, peer, "dst", &remote));
    if (bytes == 0) return CCL_SUCCESS;
    // The copy engine moves it; over NVLink it reaches the link rate without using SMs.
    CCL_CUDA_CHECK(cudaMemcpyAsync(remote, src, bytes, cudaMemcpyDefault, stream));
    return CCL_SUCCESS;
  });
}

ccl_result_t ccl_signal_on_stream(ccl_comm_t comm, uint64_t* sig, uint64_t value, int op, int peer,
                                  cudaStream_t stream) {
  return ccl::api_call([&]() -> Status {
    CCL_CHECK(need_comm(comm));
    CCL_ARG_CHECK(op == CCL_SIGNAL_SET || op == CCL_SIGNAL_ADD,
                  "op=%d is not CCL_SIGNAL_SET or CCL_SIGNAL_ADD", op);
    CCL_ARG_CHECK((reinterpret_cast<uintptr_t>(sig) & 7) == 0, "sig=%p is not 8-byte aligned", sig);
    void* remote = nullptr;
    CCL_CHECK(peer_range(comm, sig, sizeof(uint64_t), peer, "sig", &remote));
    CCL_CUDA_CHECK(
        ccl::launch_signal(static_cast<uint64_t*>(remote), value, op, {stream, comm->pdl}));
    return CCL_SUCCESS;
  });
}

ccl_result_t ccl_wait_signal_on_stream(ccl_comm_t comm, const uint64_t* sig, int cmp,
                                       uint64_t value, cudaStream_t stream) {
  return ccl::api_call([&]() -> Status {
    CCL_CHECK(need_comm(comm));
    CCL_ARG_CHECK(cmp >= CCL_CMP_EQ && cmp <= CCL_CMP_AT_LEAST, "cmp=%d is not a CCL_CMP_* value",
                  cmp);
    CCL_ARG_CHECK((reinterpret_cast<uintptr_t>(sig) & 7) == 0, "sig=%p is not 8-byte aligned", sig);
    void* local = nullptr;
    CCL_CHECK(peer_range(comm, sig, sizeof(uint64_t), comm->rank, "sig", &local));
    if (!comm->dev) return CCL_FAIL(CCL_UNSUPPORTED, "device waits need the VMM heap");
    CCL_CUDA_CHECK(
        ccl::launch_wait_signal(comm->dev->handle, sig, cmp, value, {stream, comm->pdl}));
    return CCL_SUCCESS;
  });
}

ccl_result_t ccl_barrier_on_stream(ccl_comm_t comm, cudaStream_t stream) {
  return ccl::api_call([&]() -> Status {
    CCL_CHECK(need_comm(comm));
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    ccl::CommOp op(comm);
    CCL_CHECK(op.check());
    ccl_device_comm_t h;
    CCL_CHECK(ccl::device_comm_handle(comm, &h));
    CCL_CUDA_CHECK(ccl::launch_barrier(h, {stream, comm->pdl}));
    return CCL_SUCCESS;
  });
}

ccl_result_t ccl_quiet_on_stream(ccl_comm_t comm, cudaStream_t stream) {
  return ccl::api_call([&]() -> Status {
    CCL_CHECK(need_comm(comm));
    CCL_CUDA_CHECK(ccl::launch_quiet({stream, comm->pdl}));
    return CCL_SUCCESS;
  });
}

ccl_result_t ccl_set_last_error(ccl_result_t code, const char* message) {
  return ccl::fail(code, "header", 0, "%s", message ? message : "").code();
}

}  // extern "C"
