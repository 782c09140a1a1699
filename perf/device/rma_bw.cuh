// SPDX-License-Identifier: Apache-2.0
// put_bw / get_bw: put or get of `bytes` split over C CTAs of T threads, rank 0 to rank 1 (both
// directions at once with --bidir), quiet at the end of each kernel. --scope picks who issues
// each call: every thread, every warp or (default) every block gets one slice. Same launch shape
// for NVSHMEM (nvshmem_putmem / nvshmemx_putmem_warp / nvshmemx_putmem_block, likewise get).
#pragma once

#include "bench.cuh"

namespace perf {

// The slice of scope instance `unit` of `units`.
__device__ __forceinline__ void slice(size_t bytes, size_t unit, size_t units, size_t* lo,
                                      size_t* n) {
  size_t chunk = (bytes + units - 1) / units;
  chunk = (chunk + 15) & ~size_t{15};
  *lo = unit * chunk;
  const size_t hi = *lo + chunk < bytes ? *lo + chunk : bytes;
  *n = hi > *lo ? hi - *lo : 0;
}

__device__ __forceinline__ void unit_of(int scope, size_t* unit, size_t* units) {
  const size_t warps = blockDim.x / 32;
  if (scope == 0)
    *unit = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x,
    *units = gridDim.x * static_cast<size_t>(blockDim.x);
  else if (scope == 1)
    *unit = blockIdx.x * warps + threadIdx.x / 32, *units = gridDim.x * warps;
  else
    *unit = blockIdx.x, *units = gridDim.x;
}

template <bool kGet, gicl::dev::Scope S>
__device__ __forceinline__ void gicl_rma(const gicl_device_comm_t& c, char* sym, char* local,
                                         size_t lo, size_t n, int peer) {
  if (kGet)
    gicl::dev::get<S>(c, local + lo, sym + lo, n, peer);
  else
    gicl::dev::put<S>(c, sym + lo, local + lo, n, peer);
}

template <bool kGet>
__global__ void gicl_rma_kernel(gicl_device_comm_t c, char* sym, char* local, size_t bytes,
                                int peer, int scope) {
  size_t unit, units, lo, n;
  unit_of(scope, &unit, &units);
  slice(bytes, unit, units, &lo, &n);
  if (n) {
    if (scope == 0)
      gicl_rma<kGet, gicl::dev::Scope::kThread>(c, sym, local, lo, n, peer);
    else if (scope == 1)
      gicl_rma<kGet, gicl::dev::Scope::kWarp>(c, sym, local, lo, n, peer);
    else
      gicl_rma<kGet, gicl::dev::Scope::kBlock>(c, sym, local, lo, n, peer);
  }
  if (threadIdx.x == 0) gicl::dev::quiet(c);
}

#ifdef GICL_PERF_NVSHMEM
template <bool kGet>
__global__ void nvshmem_rma_kernel(char* sym, char* local, size_t bytes, int peer, int scope) {
  size_t unit, units, lo, n;
  unit_of(scope, &unit, &units);
  slice(bytes, unit, units, &lo, &n);
  if (n) {
    if (scope == 0)
      kGet ? nvshmem_getmem(local + lo, sym + lo, n, peer)
           : nvshmem_putmem(sym + lo, local + lo, n, peer);
    else if (scope == 1)
      kGet ? nvshmemx_getmem_warp(local + lo, sym + lo, n, peer)
           : nvshmemx_putmem_warp(sym + lo, local + lo, n, peer);
    else
      kGet ? nvshmemx_getmem_block(local + lo, sym + lo, n, peer)
           : nvshmemx_putmem_block(sym + lo, local + lo, n, peer);
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
  PERF_GICL(gicl_mem_alloc(env.comm, cap, reinterpret_cast<void**>(&sym)));
  // In the heap too: to a peer on the network path a put's source and a get's destination must
  // be (the proxy reaches them by offset); over NVLink it is plain device memory all the same.
  PERF_GICL(gicl_mem_alloc(env.comm, cap, reinterpret_cast<void**>(&local)));
  PERF_CUDA(cudaMemset(local, env.rank + 1, cap));  // real data, never zeros
  PERF_CUDA(cudaMemset(sym, env.rank + 3, cap));
#ifdef GICL_PERF_NVSHMEM
  char* nsym = static_cast<char*>(nvshmem_malloc(cap));
  PERF_CUDA(cudaMemset(nsym, env.rank + 5, cap));
#endif
  PERF_CUDA(cudaDeviceSynchronize());
  const int peer = (env.rank + 1) % env.n;
  const bool active = o.bidir || env.rank == 0;
  Table t{kGet ? "get_bw" : "put_bw", "GB/s"};
  t.name += std::string(o.scope == 0 ? " thread" : o.scope == 1 ? " warp" : " block") + " scope";
  t.name += o.bidir ? ", both directions, per direction" : ", one direction";
  t.print_header(env);
  for (size_t bytes : sizes(o)) {
    Row r{bytes, 0, 0};
    r.gicl_us = time_us(env, o, [&](cudaStream_t s) {
      if (active)
        gicl_rma_kernel<kGet>
            <<<o.ctas, o.threads, 0, s>>>(env.dc, sym, local, bytes, peer, o.scope);
    });
    r.gicl_value = bytes / r.gicl_us / 1e3;
#ifdef GICL_PERF_NVSHMEM
    r.ref_us = time_us(env, o, [&](cudaStream_t s) {
      if (active)
        nvshmem_rma_kernel<kGet><<<o.ctas, o.threads, 0, s>>>(nsym, local, bytes, peer, o.scope);
    });
    r.ref_value = bytes / r.ref_us / 1e3;
#endif
    PERF_CUDA(cudaGetLastError());
    t.add(env, r);
  }
  t.write_json(env, o);
#ifdef GICL_PERF_NVSHMEM
  nvshmem_free(nsym);
#endif
  PERF_GICL(gicl_mem_free(env.comm, local));
  PERF_GICL(gicl_mem_free(env.comm, sym));
  finish(env);
  return 0;
}

}  // namespace perf
