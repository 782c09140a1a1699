// put_bw / get_bw: block-scope put or get of `bytes` split over C CTAs of T threads, rank 0 to
// rank 1 (both directions at once with --bidir), quiet at the end of each kernel. Same launch
// shape for NVSHMEM (nvshmemx_putmem_block / nvshmemx_getmem_block + nvshmem_quiet).
#pragma once

#include "bench.cuh"

namespace perf {

__device__ __forceinline__ void slice(size_t bytes, size_t* lo, size_t* n) {
  size_t chunk = (bytes + gridDim.x - 1) / gridDim.x;
  chunk = (chunk + 15) & ~size_t{15};
  *lo = blockIdx.x * chunk;
  const size_t hi = *lo + chunk < bytes ? *lo + chunk : bytes;
  *n = hi > *lo ? hi - *lo : 0;
}

template <bool kGet>
__global__ void ccl_rma_kernel(ccl_device_comm_t c, char* sym, char* local, size_t bytes, int peer) {
  size_t lo, n;
  slice(bytes, &lo, &n);
  if (n) {
    if (kGet) ccl::dev::get<ccl::dev::Scope::kBlock>(c, local + lo, sym + lo, n, peer);
    else ccl::dev::put<ccl::dev::Scope::kBlock>(c, sym + lo, local + lo, n, peer);
  }
  if (threadIdx.x == 0) ccl::dev::quiet(c);
}

#ifdef CCL_PERF_NVSHMEM
template <bool kGet>
__global__ void nvshmem_rma_kernel(char* sym, char* local, size_t bytes, int peer) {
  size_t lo, n;
  slice(bytes, &lo, &n);
  if (n) {
    if (kGet) nvshmemx_getmem_block(local + lo, sym + lo, n, peer);
    else nvshmemx_putmem_block(sym + lo, local + lo, n, peer);
  }
  if (threadIdx.x == 0) nvshmem_quiet();
}
#endif

template <bool kGet>
int rma_bw_main(int argc, char** argv) {
  Options defaults;
  defaults.min_bytes = 1 << 10;
  defaults.max_bytes = 1 << 30;
  const Options o = parse(argc, argv, defaults);
  Env env = start(argc, argv);
  const size_t cap = o.max_bytes;
  char* sym = nullptr;
  char* local = nullptr;
  PERF_CCL(ccl_mem_alloc(env.comm, cap, reinterpret_cast<void**>(&sym)));
  PERF_CUDA(cudaMalloc(&local, cap));
  PERF_CUDA(cudaMemset(local, env.rank + 1, cap));  // real data, never zeros
  PERF_CUDA(cudaMemset(sym, env.rank + 3, cap));
#ifdef CCL_PERF_NVSHMEM
  char* nsym = static_cast<char*>(nvshmem_malloc(cap));
  PERF_CUDA(cudaMemset(nsym, env.rank + 5, cap));
#endif
  PERF_CUDA(cudaDeviceSynchronize());
  const int peer = (env.rank + 1) % env.n;
  const bool active = o.bidir || env.rank == 0;
  Table t{kGet ? "get_bw" : "put_bw", "GB/s"};
  t.name += o.bidir ? " (both directions, per direction)" : " (one direction)";
  t.print_header(env);
  for (size_t bytes : sizes(o)) {
    Row r{bytes, 0, 0};
    r.ccl_us = time_us(env, o, [&](cudaStream_t s) {
      if (active) ccl_rma_kernel<kGet><<<o.ctas, o.threads, 0, s>>>(env.dc, sym, local, bytes, peer);
    });
    r.ccl_value = bytes / r.ccl_us / 1e3;
#ifdef CCL_PERF_NVSHMEM
    r.ref_us = time_us(env, o, [&](cudaStream_t s) {
      if (active) nvshmem_rma_kernel<kGet><<<o.ctas, o.threads, 0, s>>>(nsym, local, bytes, peer);
    });
    r.ref_value = bytes / r.ref_us / 1e3;
#endif
    PERF_CUDA(cudaGetLastError());
    t.add(env, r);
  }
  t.write_json(env, o);
#ifdef CCL_PERF_NVSHMEM
  nvshmem_free(nsym);
#endif
  PERF_CUDA(cudaFree(local));
  PERF_CCL(ccl_mem_free(env.comm, sym));
  finish(env);
  return 0;
}

}  // namespace perf
