// SPDX-License-Identifier: Apache-2.0
// atomic_rate: non-fetching 64-bit atomic adds and fetching adds from every thread of C CTAs x T
// threads to rank 1, on distinct words (one per thread, so the rate is the link's, not one
// address's). The "bytes" column is the number of operations per launch.
#include "bench.cuh"

namespace perf {

template <bool kFetch>
__global__ void gicl_atomic_kernel(gicl_device_comm_t c, uint64_t* ctr, size_t ops, int peer,
                                   uint64_t* sink) {
  const size_t tid = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t nth = static_cast<size_t>(gridDim.x) * blockDim.x;
  uint64_t acc = 0;
  for (size_t i = tid; i < ops; i += nth) {
    if (kFetch)
      acc += gicl::dev::atomic_fetch_add(c, ctr + tid, uint64_t{1}, peer);
    else
      gicl::dev::atomic_add(c, ctr + tid, uint64_t{1}, peer);
  }
  if (kFetch && acc == 1) *sink = acc;
  if (threadIdx.x == 0) gicl::dev::quiet(c);
}

#ifdef GICL_PERF_NVSHMEM
template <bool kFetch>
__global__ void nvshmem_atomic_kernel(uint64_t* ctr, size_t ops, int peer, uint64_t* sink) {
  const size_t tid = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t nth = static_cast<size_t>(gridDim.x) * blockDim.x;
  uint64_t acc = 0;
  for (size_t i = tid; i < ops; i += nth) {
    if (kFetch)
      acc += nvshmem_uint64_atomic_fetch_add(ctr + tid, 1, peer);
    else
      nvshmem_uint64_atomic_add(ctr + tid, 1, peer);
  }
  if (kFetch && acc == 1) *sink = acc;
  if (threadIdx.x == 0) nvshmem_quiet();
}
#endif

template <bool kFetch>
void run(Env& env, const Options& o, uint64_t* ctr, uint64_t* nctr, uint64_t* sink) {
  (void)nctr;
  const int peer = (env.rank + 1) % env.n;
  const bool active = o.bidir || env.rank == 0;
  Table t{kFetch ? "atomic_rate (fetch_add u64)" : "atomic_rate (add u64, non-fetching)", "Mops/s"};
  t.print_header(env);
  for (size_t ops : sizes(o)) {
    Row r{ops, 0, 0};
    r.gicl_us = time_us(env, o, [&](cudaStream_t s) {
      if (active)
        gicl_atomic_kernel<kFetch><<<o.ctas, o.threads, 0, s>>>(env.dc, ctr, ops, peer, sink);
    });
    r.gicl_value = ops / r.gicl_us;
#ifdef GICL_PERF_NVSHMEM
    r.ref_us = time_us(env, o, [&](cudaStream_t s) {
      if (active) nvshmem_atomic_kernel<kFetch><<<o.ctas, o.threads, 0, s>>>(nctr, ops, peer, sink);
    });
    r.ref_value = ops / r.ref_us;
#endif
    PERF_CUDA(cudaGetLastError());
    t.add(env, r);
  }
  if (!kFetch) t.write_json(env, o);
}

}  // namespace perf

int main(int argc, char** argv) {
  using namespace perf;
  Options defaults;
  defaults.min_bytes = 1 << 16;
  defaults.max_bytes = 1 << 22;
  defaults.factor = 4;
  const Options o = parse(argc, argv, defaults);
  Env env = start(argc, argv);
  const size_t words = static_cast<size_t>(o.ctas) * o.threads;
  uint64_t* ctr = nullptr;
  uint64_t* sink = nullptr;
  uint64_t* nctr = nullptr;
  PERF_GICL(gicl_mem_alloc(env.comm, words * 8, reinterpret_cast<void**>(&ctr)));
  PERF_CUDA(cudaMalloc(&sink, 8));
#ifdef GICL_PERF_NVSHMEM
  nctr = static_cast<uint64_t*>(nvshmem_malloc(words * 8));
#endif
  run<false>(env, o, ctr, nctr, sink);
  run<true>(env, o, ctr, nctr, sink);
  finish(env);
  return 0;
}
