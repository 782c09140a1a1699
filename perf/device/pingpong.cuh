// SPDX-License-Identifier: Apache-2.0
// put_latency / signal_latency: ping-pong between rank 0 and rank 1 inside one kernel, `inner`
// round trips per launch; one-way latency = kernel time / inner / 2. put_latency moves `bytes`
// with put_signal (one warp) each way; signal_latency only the 8-byte signal.
#pragma once

#include "bench.cuh"

namespace perf {

// Signals count up forever (base + i): no reset between launches, waits use "at least".
template <bool kPayload>
__global__ void gicl_pingpong(gicl_device_comm_t c, char* data, const char* src, size_t bytes,
                              uint64_t* sig, uint64_t base, int inner, int peer) {
  using namespace gicl::dev;
  for (int i = 1; i <= inner; ++i) {
    const uint64_t v = base + i;
    if (c.rank == 0) {
      if (kPayload)
        put_signal<Scope::kWarp>(c, data, src, bytes, sig, v, SignalOp::kSet, peer);
      else if (threadIdx.x == 0)
        signal(c, sig, v, SignalOp::kSet, peer);
      if (threadIdx.x == 0) signal_wait_until(c, sig, Cmp::kAtLeast, v);
      __syncwarp();
    } else {
      if (threadIdx.x == 0) signal_wait_until(c, sig, Cmp::kAtLeast, v);
      __syncwarp();
      if (kPayload)
        put_signal<Scope::kWarp>(c, data, src, bytes, sig, v, SignalOp::kSet, peer);
      else if (threadIdx.x == 0)
        signal(c, sig, v, SignalOp::kSet, peer);
    }
  }
}

#ifdef GICL_PERF_NVSHMEM
template <bool kPayload>
__global__ void nvshmem_pingpong(char* data, const char* src, size_t bytes, uint64_t* sig,
                                 uint64_t base, int inner, int me, int peer) {
  for (int i = 1; i <= inner; ++i) {
    const uint64_t v = base + i;
    if (me == 0) {
      if (kPayload)
        nvshmemx_putmem_signal_warp(data, src, bytes, sig, v, NVSHMEM_SIGNAL_SET, peer);
      else if (threadIdx.x == 0)
        nvshmemx_signal_op(sig, v, NVSHMEM_SIGNAL_SET, peer);
      if (threadIdx.x == 0) nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
      __syncwarp();
    } else {
      if (threadIdx.x == 0) nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
      __syncwarp();
      if (kPayload)
        nvshmemx_putmem_signal_warp(data, src, bytes, sig, v, NVSHMEM_SIGNAL_SET, peer);
      else if (threadIdx.x == 0)
        nvshmemx_signal_op(sig, v, NVSHMEM_SIGNAL_SET, peer);
    }
  }
}
#endif

template <bool kPayload>
int pingpong_main(int argc, char** argv) {
  Options defaults;
  defaults.min_bytes = 8;
  defaults.max_bytes = kPayload ? 64 << 10 : 8;
  defaults.iters = 5;
  const Options o = parse(argc, argv, defaults);
  const int inner = 2000;
  Env env = start(argc, argv);
  if (env.n < 2) {
    std::fprintf(stderr, "needs 2 ranks\n");
    return 2;
  }
  char* data = nullptr;
  char* src = nullptr;
  uint64_t* sig = nullptr;
  PERF_GICL(gicl_mem_alloc(env.comm, o.max_bytes, reinterpret_cast<void**>(&data)));
  PERF_GICL(gicl_mem_alloc(env.comm, 64, reinterpret_cast<void**>(&sig)));
  // The source in the symmetric heap too: a put to a rank on the network path reads it there.
  PERF_GICL(gicl_mem_alloc(env.comm, o.max_bytes, reinterpret_cast<void**>(&src)));
  PERF_CUDA(cudaMemset(src, 7, o.max_bytes));
  PERF_CUDA(cudaMemset(sig, 0, 64));
#ifdef GICL_PERF_NVSHMEM
  char* ndata = static_cast<char*>(nvshmem_malloc(o.max_bytes));
  uint64_t* nsig = static_cast<uint64_t*>(nvshmem_malloc(64));
  PERF_CUDA(cudaMemset(nsig, 0, 64));
#endif
  PERF_CUDA(cudaDeviceSynchronize());
  const int peer = env.rank == 0 ? 1 : 0;
  const bool active = env.rank < 2;
  Table t{kPayload ? "put_latency (put_signal ping-pong, one way)"
                   : "signal_latency (ping-pong, one way)",
          "us", false};
  t.print_header(env);
  uint64_t base = 0;
#ifdef GICL_PERF_NVSHMEM
  uint64_t nbase = 0;
#endif
  for (size_t bytes : sizes(o)) {
    Row r{bytes, 0, 0};
    r.gicl_us = time_us(env, o,
                        [&](cudaStream_t s) {
                          if (active)
                            gicl_pingpong<kPayload>
                                <<<1, 32, 0, s>>>(env.dc, data, src, bytes, sig, base, inner, peer);
                          base += inner;
                        }) /
                inner / 2;
    r.gicl_value = r.gicl_us;
#ifdef GICL_PERF_NVSHMEM
    r.ref_us = time_us(env, o,
                       [&](cudaStream_t s) {
                         if (active)
                           nvshmem_pingpong<kPayload><<<1, 32, 0, s>>>(
                               ndata, src, bytes, nsig, nbase, inner, env.rank, peer);
                         nbase += inner;
                       }) /
               inner / 2;
    r.ref_value = r.ref_us;
#endif
    PERF_CUDA(cudaGetLastError());
    t.add(env, r);
  }
  t.write_json(env, o);
  gicl_result_t async;
  PERF_GICL(gicl_comm_get_async_error(env.comm, &async, nullptr));
  if (async != GICL_SUCCESS) {
    std::fprintf(stderr, "device error during the benchmark\n");
    return 6;
  }
  finish(env);
  return 0;
}

}  // namespace perf
