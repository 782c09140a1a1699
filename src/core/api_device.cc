// SPDX-License-Identifier: Apache-2.0
// C API: device handles, queue pairs, host stream operations, collective launch.
#include "core/api_guard.hpp"
#include "core/comm.hpp"
#include "core/stream_kernels.cuh"

using gicl::Status;

namespace {

Status need_comm(gicl_comm_t comm) {
  GICL_ARG_CHECK(comm != nullptr, "comm must not be NULL");
  return GICL_SUCCESS;
}

// The peer's copy of a symmetric range, with the checks every stream operation makes.
Status peer_range(gicl_comm_t comm, const void* sym, size_t bytes, int peer, const char* what,
                  void** out) {
  if (!comm->heap)
    return GICL_FAIL(GICL_UNSUPPORTED, "this communicator has no symmetric heap (no CUDA device)");
  GICL_ARG_CHECK(peer >= 0 && peer < comm->nranks, "peer=%d is out of range [0, %d)", peer,
                 comm->nranks);
  uint64_t off = 0;
  GICL_ARG_CHECK(comm->heap->offset_of(sym, &off), "%s=%p is not in the symmetric heap", what, sym);
  GICL_ARG_CHECK(bytes <= comm->heap->mapped_bytes() - off,
                 "bytes=%zu runs past the end of the symmetric heap from %s", bytes, what);
  *out = comm->heap->peer_ptr(sym, peer);
  if (*out == nullptr)
    return GICL_FAIL(GICL_UNSUPPORTED,
                     "rank %d is not load/store reachable and this build has no "
                     "network transport yet",
                     peer);
  return GICL_SUCCESS;
}

}  // namespace

extern "C" {

gicl_result_t gicl_comm_get_device_comm(gicl_comm_t comm, gicl_device_comm_t* dcomm) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(need_comm(comm));
    GICL_ARG_CHECK(dcomm != nullptr, "dcomm must not be NULL");
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    gicl::CommOp op(comm);
    GICL_CHECK(op.check());
    return gicl::device_comm_handle(comm, dcomm);
  });
}

gicl_result_t gicl_team_get_device(gicl_team_t team, gicl_device_team_t* dteam) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(team != nullptr, "team must not be NULL");
    GICL_ARG_CHECK(dteam != nullptr, "dteam must not be NULL");
    std::lock_guard<std::mutex> lock(team->comm->op_mutex);
    return gicl::device_team(team->comm, team, dteam);
  });
}

gicl_result_t gicl_qp_create(gicl_comm_t comm, int n, gicl_qp_t* qps) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(need_comm(comm));
    GICL_ARG_CHECK(qps != nullptr, "qps must not be NULL");
    GICL_ARG_CHECK(n >= 1 && n <= 4096, "n=%d must be in [1, 4096]", n);
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    gicl::CommOp op(comm);
    GICL_CHECK(op.check());
    // Collective so that every rank agrees on the queue pairs once network transports exist.
    std::vector<int32_t> counts(comm->nranks);
    counts[comm->rank] = n;
    GICL_CHECK(comm->bootstrap->allgather(counts.data(), sizeof(int32_t)));
    for (int r = 0; r < comm->nranks; ++r)
      if (counts[r] != n)
        return GICL_FAIL(GICL_INVALID_ARGUMENT,
                         "gicl_qp_create: rank %d asked for %d queue pairs, "
                         "rank %d for %d",
                         r, counts[r], comm->rank, n);
    for (int r = 0; r < comm->nranks && !comm->net; ++r)
      if (comm->paths[r] == gicl::PeerPath::kNetwork)
        return GICL_FAIL(GICL_UNSUPPORTED,
                         "rank %d is on the network path and this communicator has none "
                         "(GICL_NET; libfabric did not open)",
                         r);
    // Over NVLink extra queue pairs bring nothing: every one is the default. With a network path
    // ids count up alike on every rank (the call is collective), and id k posts to ring
    // 1 + (k - 1) % GICL_NET_QP_RINGS (gicl/device/detail/proxy_ring.h, ProxyRingSet).
    for (int i = 0; i < n; ++i)
      qps[i].id = comm->net ? static_cast<int32_t>(comm->next_qp_id++) : GICL_QP_DEFAULT_ID;
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_put_on_stream(gicl_comm_t comm, void* dst, const void* src, size_t bytes,
                                 int peer, cudaStream_t stream) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(need_comm(comm));
    GICL_ARG_CHECK(src != nullptr || bytes == 0, "src must not be NULL");
    void* remote = nullptr;
    GICL_CHECK(peer_range(comm, dst, bytes, peer, "dst", &remote));
    if (bytes == 0) return GICL_SUCCESS;
    // The copy engine moves it; over NVLink it reaches the link rate without using SMs.
    GICL_CUDA_CHECK(cudaMemcpyAsync(remote, src, bytes, cudaMemcpyDefault, stream));
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_signal_on_stream(gicl_comm_t comm, uint64_t* sig, uint64_t value, int op,
                                    int peer, cudaStream_t stream) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(need_comm(comm));
    GICL_ARG_CHECK(op == GICL_SIGNAL_SET || op == GICL_SIGNAL_ADD,
                   "op=%d is not GICL_SIGNAL_SET or GICL_SIGNAL_ADD", op);
    GICL_ARG_CHECK((reinterpret_cast<uintptr_t>(sig) & 7) == 0, "sig=%p is not 8-byte aligned",
                   sig);
    void* remote = nullptr;
    GICL_CHECK(peer_range(comm, sig, sizeof(uint64_t), peer, "sig", &remote));
    GICL_CUDA_CHECK(
        gicl::launch_signal(static_cast<uint64_t*>(remote), value, op, {stream, comm->pdl}));
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_wait_signal_on_stream(gicl_comm_t comm, const uint64_t* sig, int cmp,
                                         uint64_t value, cudaStream_t stream) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(need_comm(comm));
    GICL_ARG_CHECK(cmp >= GICL_CMP_EQ && cmp <= GICL_CMP_AT_LEAST,
                   "cmp=%d is not a GICL_CMP_* value", cmp);
    GICL_ARG_CHECK((reinterpret_cast<uintptr_t>(sig) & 7) == 0, "sig=%p is not 8-byte aligned",
                   sig);
    void* local = nullptr;
    GICL_CHECK(peer_range(comm, sig, sizeof(uint64_t), comm->rank, "sig", &local));
    if (!comm->dev) return GICL_FAIL(GICL_UNSUPPORTED, "device waits need the VMM heap");
    GICL_CUDA_CHECK(
        gicl::launch_wait_signal(comm->dev->handle, sig, cmp, value, {stream, comm->pdl}));
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_barrier_on_stream(gicl_comm_t comm, cudaStream_t stream) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(need_comm(comm));
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    gicl::CommOp op(comm);
    GICL_CHECK(op.check());
    gicl_device_comm_t h;
    GICL_CHECK(gicl::device_comm_handle(comm, &h));
    GICL_CUDA_CHECK(gicl::launch_barrier(h, {stream, comm->pdl}));
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_quiet_on_stream(gicl_comm_t comm, cudaStream_t stream) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(need_comm(comm));
    GICL_CUDA_CHECK(gicl::launch_quiet({stream, comm->pdl}));
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_set_last_error(gicl_result_t code, const char* message) {
  return gicl::fail(code, "header", 0, "%s", message ? message : "").code();
}

}  // extern "C"
