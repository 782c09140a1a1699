// SPDX-License-Identifier: Apache-2.0
// barrier_latency: `inner` device barriers of all ranks in one kernel (one thread per rank);
// time per barrier. NVSHMEM: nvshmem_barrier_all from one thread. The "bytes" column is unused.
#include "bench.cuh"

namespace perf {

__global__ void gicl_barrier_kernel(gicl_device_comm_t c, int inner) {
  for (int i = 0; i < inner; ++i) gicl::dev::barrier(c);
}

#ifdef GICL_PERF_NVSHMEM
__global__ void nvshmem_barrier_kernel(int inner) {
  for (int i = 0; i < inner; ++i) nvshmem_barrier_all();
}
#endif

}  // namespace perf

int main(int argc, char** argv) {
  using namespace perf;
  Options defaults;
  defaults.min_bytes = 8;
  defaults.max_bytes = 8;
  const Options o = parse(argc, argv, defaults);
  const int inner = 2000;
  Env env = start(argc, argv);
  Table t{"barrier_latency", "us", false};
  t.print_header(env);
  Row r{0, 0, 0};
  r.gicl_us =
      time_us(env, o, [&](cudaStream_t s) { gicl_barrier_kernel<<<1, 1, 0, s>>>(env.dc, inner); }) /
      inner;
  r.gicl_value = r.gicl_us;
#ifdef GICL_PERF_NVSHMEM
  r.ref_us = time_us(env, o,
                     [&](cudaStream_t s) {
                       void* args[] = {const_cast<int*>(&inner)};
                       nvshmemx_collective_launch(
                           reinterpret_cast<const void*>(nvshmem_barrier_kernel), 1, 1, args, 0, s);
                     }) /
             inner;
  r.ref_value = r.ref_us;
#endif
  PERF_CUDA(cudaGetLastError());
  t.add(env, r);
  t.write_json(env, o);
  finish(env);
  return 0;
}
