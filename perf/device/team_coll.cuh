// SPDX-License-Identifier: Apache-2.0
// Device-side team collectives (gicl/device/coll.cuh) beside NVSHMEM's (nvshmem[x]_float_*): one
// CTA calls the collective `inner` times in one kernel over the whole communicator (NVSHMEM:
// NVSHMEM_TEAM_WORLD), float32, sum for the reductions; time per call and bandwidth. --scope
// picks the caller: one thread, one warp, or (default) a block of -t threads. "bytes" is the
// count each call takes x 4: a member's block for fcollect, alltoall and reduce-scatter, the
// whole buffer for broadcast and allreduce. After each size every rank checks its result
// (source = rank + 1 everywhere), for both libraries: a wrong result stops the benchmark.
// Run with several ranks: gicl-run -n 2 ./reduction_latency -b 8 -e 1M
#pragma once

#include "bench.cuh"

namespace perf {

enum class TeamColl { kAllreduce, kReduceScatter, kFcollect, kBroadcast, kAlltoall };

constexpr int kInner = 10;  // calls per kernel

__global__ void fill_kernel(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += gridDim.x * static_cast<size_t>(blockDim.x))
    p[i] = v;
}

template <TeamColl K, gicl::dev::Scope S, gicl::dev::Completion C>
__device__ __forceinline__ bool gicl_team_call(const gicl_device_comm_t& c, float* dst,
                                               const float* src, size_t count) {
  namespace dev = gicl::dev;
  if constexpr (K == TeamColl::kAllreduce) return dev::allreduce<gicl_sum, S>(c, dst, src, count);
  if constexpr (K == TeamColl::kReduceScatter)
    return dev::reduce_scatter<gicl_sum, S>(c, dst, src, count);
  if constexpr (K == TeamColl::kFcollect) return dev::fcollect<S, C>(c, dst, src, count);
  if constexpr (K == TeamColl::kBroadcast) return dev::broadcast<S, C>(c, dst, src, count, 0);
  if constexpr (K == TeamColl::kAlltoall) return dev::alltoall<S, C>(c, dst, src, count);
  return false;
}

/// Back-to-back calls into the same dst: with Completion::kLocal a member may write the next
/// call's data into a peer still in the last call, which is harmless here (the same data).
template <TeamColl K, gicl::dev::Scope S, gicl::dev::Completion C>
__global__ void gicl_team_kernel(gicl_device_comm_t c, float* dst, const float* src, size_t count,
                                 int* failed) {
  for (int i = 0; i < kInner; ++i)
    if (!gicl_team_call<K, S, C>(c, dst, src, count)) {
      if (threadIdx.x == 0) *failed = 1;
      return;
    }
}

#ifdef GICL_PERF_NVSHMEM
// NVSHMEM's thread (0), warp (1) and block (2) variants of the same call.
template <TeamColl K, int S>
__device__ __forceinline__ void nvshmem_team_call(float* dst, const float* src, size_t count) {
  const nvshmem_team_t w = NVSHMEM_TEAM_WORLD;
  if constexpr (K == TeamColl::kAllreduce) {
    if constexpr (S == 0) nvshmem_float_sum_reduce(w, dst, src, count);
    if constexpr (S == 1) nvshmemx_float_sum_reduce_warp(w, dst, src, count);
    if constexpr (S == 2) nvshmemx_float_sum_reduce_block(w, dst, src, count);
  } else if constexpr (K == TeamColl::kReduceScatter) {
    if constexpr (S == 0) nvshmem_float_sum_reducescatter(w, dst, src, count);
    if constexpr (S == 1) nvshmemx_float_sum_reducescatter_warp(w, dst, src, count);
    if constexpr (S == 2) nvshmemx_float_sum_reducescatter_block(w, dst, src, count);
  } else if constexpr (K == TeamColl::kFcollect) {
    if constexpr (S == 0) nvshmem_float_fcollect(w, dst, src, count);
    if constexpr (S == 1) nvshmemx_float_fcollect_warp(w, dst, src, count);
    if constexpr (S == 2) nvshmemx_float_fcollect_block(w, dst, src, count);
  } else if constexpr (K == TeamColl::kBroadcast) {
    if constexpr (S == 0) nvshmem_float_broadcast(w, dst, src, count, 0);
    if constexpr (S == 1) nvshmemx_float_broadcast_warp(w, dst, src, count, 0);
    if constexpr (S == 2) nvshmemx_float_broadcast_block(w, dst, src, count, 0);
  } else {
    if constexpr (S == 0) nvshmem_float_alltoall(w, dst, src, count);
    if constexpr (S == 1) nvshmemx_float_alltoall_warp(w, dst, src, count);
    if constexpr (S == 2) nvshmemx_float_alltoall_block(w, dst, src, count);
  }
}

template <TeamColl K, int S>
__global__ void nvshmem_team_kernel(float* dst, const float* src, size_t count) {
  for (int i = 0; i < kInner; ++i) nvshmem_team_call<K, S>(dst, src, count);
}
#endif

/// Elements of dst that one call writes at this rank, and what each must hold.
template <TeamColl K>
size_t check_result(const float* host, size_t count, int n) {
  const float all = n * (n + 1) / 2.0f;  // sum over ranks of rank + 1
  size_t wrong = 0;
  const size_t elems = K == TeamColl::kFcollect || K == TeamColl::kAlltoall ? count * n : count;
  for (size_t i = 0; i < elems; ++i) {
    float want = all;
    if (K == TeamColl::kBroadcast) want = 1.0f;  // root 0's rank + 1
    if (K == TeamColl::kFcollect || K == TeamColl::kAlltoall)
      want = static_cast<float>(i / count + 1);
    wrong += host[i] != want;
  }
  return wrong;
}

template <TeamColl K>
int team_coll_main(const char* name, int argc, char** argv) {
  using gicl::dev::Completion;
  using gicl::dev::Scope;
  Options defaults;
  defaults.min_bytes = 8;
  defaults.max_bytes = 1 << 20;
  defaults.factor = 4;
  const Options o = parse(argc, argv, defaults);
  if (o.local && (K == TeamColl::kAllreduce || K == TeamColl::kReduceScatter)) {
    std::fprintf(stderr, "%s: --local is for broadcast, fcollect and alltoall\n", name);
    return 2;
  }
  Env env = start(argc, argv);
  const int n = env.n;
  // Both libraries' kernels get the same block: at most what either can launch (NVSHMEM's
  // block-scope reductions hold too many registers for 512 threads).
  int threads = o.scope == 0 ? 1 : o.scope == 1 ? 32 : o.threads;
  if (o.scope == 2) {
    cudaFuncAttributes a;
    PERF_CUDA(cudaFuncGetAttributes(&a, gicl_team_kernel<K, Scope::kBlock, Completion::kAll>));
    threads = std::min(threads, a.maxThreadsPerBlock);
#ifdef GICL_PERF_NVSHMEM
    PERF_CUDA(cudaFuncGetAttributes(&a, nvshmem_team_kernel<K, 2>));
    threads = std::min(threads, a.maxThreadsPerBlock);
#endif
  }
  const size_t max_elems = o.max_bytes / sizeof(float) * n;
  float *src = nullptr, *dst = nullptr;
  PERF_GICL(gicl_mem_alloc(env.comm, max_elems * sizeof(float), reinterpret_cast<void**>(&src)));
  PERF_GICL(gicl_mem_alloc(env.comm, max_elems * sizeof(float), reinterpret_cast<void**>(&dst)));
  int* failed = nullptr;
  PERF_CUDA(cudaMalloc(&failed, sizeof(int)));
  PERF_CUDA(cudaMemset(failed, 0, sizeof(int)));
#ifdef GICL_PERF_NVSHMEM
  auto* nsrc = static_cast<float*>(nvshmem_malloc(max_elems * sizeof(float)));
  auto* ndst = static_cast<float*>(nvshmem_malloc(max_elems * sizeof(float)));
  if (nsrc == nullptr || ndst == nullptr) {
    std::fprintf(stderr, "nvshmem_malloc failed\n");
    return 5;
  }
#endif
  std::vector<float> host(max_elems);
  // Every rank checks what it received; a wrong value ends the run with the size and library.
  auto check = [&](const float* d, size_t count, const char* lib) {
    const size_t elems = K == TeamColl::kFcollect || K == TeamColl::kAlltoall ? count * n : count;
    PERF_CUDA(cudaMemcpy(host.data(), d, elems * sizeof(float), cudaMemcpyDeviceToHost));
    const size_t wrong = check_result<K>(host.data(), count, n);
    if (wrong != 0) {
      std::fprintf(stderr, "%s: rank %d, %s, count %zu: %zu wrong elements\n", name, env.rank, lib,
                   count, wrong);
      std::exit(6);
    }
  };
  Table t{name, "GB/s", true};
  if (env.rank == 0)
    std::printf(
        "# one CTA of %d thread(s) calls it %d times a kernel; float32, sum; gicl's "
        "completion: %s\n",
        threads, kInner, o.local ? "local (as NVSHMEM's)" : "at every member");
  t.print_header(env);
  for (size_t bytes : sizes(o)) {
    const size_t count = bytes / sizeof(float);
    if (count == 0) continue;
    fill_kernel<<<64, 256, 0, env.stream>>>(src, max_elems, static_cast<float>(env.rank + 1));
    PERF_CUDA(cudaMemsetAsync(dst, 0, max_elems * sizeof(float), env.stream));
    auto launch = [&]<Completion C>(cudaStream_t s) {
      if (o.scope == 0)
        gicl_team_kernel<K, Scope::kThread, C><<<1, 1, 0, s>>>(env.dc, dst, src, count, failed);
      else if (o.scope == 1)
        gicl_team_kernel<K, Scope::kWarp, C><<<1, 32, 0, s>>>(env.dc, dst, src, count, failed);
      else
        gicl_team_kernel<K, Scope::kBlock, C>
            <<<1, threads, 0, s>>>(env.dc, dst, src, count, failed);
    };
    const double gicl_us = time_us(env, o,
                                   [&](cudaStream_t s) {
                                     if (o.local)
                                       launch.template operator()<Completion::kLocal>(s);
                                     else
                                       launch.template operator()<Completion::kAll>(s);
                                   }) /
                           kInner;
    int bad = 0;
    PERF_CUDA(cudaMemcpy(&bad, failed, sizeof(int), cudaMemcpyDeviceToHost));
    if (bad) {
      std::fprintf(stderr, "%s: a gicl team collective failed (count %zu): %s\n", name, count,
                   gicl_get_last_error());
      return 6;
    }
    check(dst, count, "gicl");
    Row r{count * sizeof(float), gicl_us, count * sizeof(float) / gicl_us / 1e3};
#ifdef GICL_PERF_NVSHMEM
    fill_kernel<<<64, 256, 0, env.stream>>>(nsrc, max_elems, static_cast<float>(env.rank + 1));
    PERF_CUDA(cudaMemsetAsync(ndst, 0, max_elems * sizeof(float), env.stream));
    PERF_CUDA(cudaStreamSynchronize(env.stream));
    r.ref_us = time_us(env, o,
                       [&](cudaStream_t s) {
                         void* args[] = {&ndst, &nsrc, const_cast<size_t*>(&count)};
                         const void* k =
                             o.scope == 0 ? reinterpret_cast<const void*>(nvshmem_team_kernel<K, 0>)
                             : o.scope == 1
                                 ? reinterpret_cast<const void*>(nvshmem_team_kernel<K, 1>)
                                 : reinterpret_cast<const void*>(nvshmem_team_kernel<K, 2>);
                         nvshmemx_collective_launch(k, 1, threads, args, 0, s);
                       }) /
               kInner;
    check(ndst, count, "NVSHMEM");
    r.ref_value = count * sizeof(float) / r.ref_us / 1e3;
#endif
    PERF_CUDA(cudaGetLastError());
    t.add(env, r);
  }
  t.write_json(env, o);
#ifdef GICL_PERF_NVSHMEM
  nvshmem_free(nsrc);
  nvshmem_free(ndst);
#endif
  PERF_CUDA(cudaFree(failed));
  PERF_GICL(gicl_mem_free(env.comm, src));
  PERF_GICL(gicl_mem_free(env.comm, dst));
  finish(env);
  return 0;
}

}  // namespace perf
