// SPDX-License-Identifier: Apache-2.0
// p_bw / g_bw: the rate of scalar 4-byte p or g from every thread of C CTAs x T threads, each
// thread on consecutive elements (grid-stride), rank 0 to rank 1. Value: millions of ops/s.
#pragma once

#include "bench.cuh"

namespace perf {

template <bool kG>
__global__ void gicl_scalar_kernel(gicl_device_comm_t c, int* sym, int* sink, size_t count,
                                   int peer) {
  int acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    if (kG)
      acc += gicl::dev::g(c, sym + i, peer);
    else
      gicl::dev::p(c, sym + i, static_cast<int>(i), peer);
  }
  if (kG && acc == 0x7fffffff) *sink = acc;  // keeps the loads alive
  if (!kG && threadIdx.x == 0) gicl::dev::quiet(c);
}

#ifdef GICL_PERF_NVSHMEM
template <bool kG>
__global__ void nvshmem_scalar_kernel(int* sym, int* sink, size_t count, int peer) {
  int acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    if (kG)
      acc += nvshmem_int_g(sym + i, peer);
    else
      nvshmem_int_p(sym + i, static_cast<int>(i), peer);
  }
  if (kG && acc == 0x7fffffff) *sink = acc;
  if (!kG && threadIdx.x == 0) nvshmem_quiet();
}
#endif

template <bool kG>
int scalar_bw_main(int argc, char** argv) {
  Options defaults;
  defaults.min_bytes = 4 << 10;
  defaults.max_bytes = 64 << 20;
  defaults.factor = 4;
  const Options o = parse(argc, argv, defaults);
  Env env = start(argc, argv);
  int* sym = nullptr;
  int* sink = nullptr;
  PERF_GICL(gicl_mem_alloc(env.comm, o.max_bytes, reinterpret_cast<void**>(&sym)));
  PERF_CUDA(cudaMalloc(&sink, sizeof(int)));
  PERF_CUDA(cudaMemset(sym, 1, o.max_bytes));
#ifdef GICL_PERF_NVSHMEM
  int* nsym = static_cast<int*>(nvshmem_malloc(o.max_bytes));
  PERF_CUDA(cudaMemset(nsym, 1, o.max_bytes));
#endif
  PERF_CUDA(cudaDeviceSynchronize());
  const int peer = (env.rank + 1) % env.n;
  const bool active = o.bidir || env.rank == 0;
  Table t{kG ? "g_bw (4-byte g)" : "p_bw (4-byte p)", "Mops/s"};
  t.print_header(env);
  for (size_t bytes : sizes(o)) {
    const size_t count = bytes / 4;
    Row r{bytes, 0, 0};
    r.gicl_us = time_us(env, o, [&](cudaStream_t s) {
      if (active)
        gicl_scalar_kernel<kG><<<o.ctas, o.threads, 0, s>>>(env.dc, sym, sink, count, peer);
    });
    r.gicl_value = count / r.gicl_us;
#ifdef GICL_PERF_NVSHMEM
    r.ref_us = time_us(env, o, [&](cudaStream_t s) {
      if (active) nvshmem_scalar_kernel<kG><<<o.ctas, o.threads, 0, s>>>(nsym, sink, count, peer);
    });
    r.ref_value = count / r.ref_us;
#endif
    PERF_CUDA(cudaGetLastError());
    t.add(env, r);
  }
  t.write_json(env, o);
#ifdef GICL_PERF_NVSHMEM
  nvshmem_free(nsym);
#endif
  PERF_GICL(gicl_mem_free(env.comm, sym));
  finish(env);
  return 0;
}

}  // namespace perf
