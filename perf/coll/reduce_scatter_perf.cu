// SPDX-License-Identifier: Apache-2.0
// reduce_scatter_perf: gicl_reduce_scatter beside ncclReduceScatter.
#include "driver.hpp"

int main(int argc, char** argv) {
  return perf::run_driver(
      argc, argv,
      {"reduce_scatter", perf::Kind::kReduceScatter, true, false,
       [](const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t op, int, gicl_comm_t c,
          cudaStream_t st) { return gicl_reduce_scatter(s, r, n, d, op, c, st); },
       [](const perf::Nccl& x, const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t op,
          int, void* c, cudaStream_t st) { return x.reduce_scatter(s, r, n, d, op, c, st); }});
}
