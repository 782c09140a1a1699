// SPDX-License-Identifier: Apache-2.0
// all_reduce_perf: gicl_allreduce (and ncclAllReduce with --compare-nccl) through the shared
// driver. Every rank's buffer holds the whole result.
#include "driver.hpp"

namespace {

perf::Counts counts(size_t elems, int, int) {
  return {elems, elems, elems};
}
double expected(int, int n, size_t i, size_t, gicl_redop_t op, int, bool uns) {
  return perf::reduce_inputs(n, i, op, uns);
}
// Each rank sends and receives (n-1)/n of the buffer twice (reduce-scatter, then allgather).
double busbw_factor(int n) {
  return n > 1 ? 2.0 * (n - 1) / n : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  return perf::run_driver(
      argc, argv,
      {.name = "all_reduce",
       .has_op = true,
       .has_root = false,
       .counts = counts,
       .expected = expected,
       .busbw_factor = busbw_factor,
       .busbw_formula = "2(n-1)/n",
       .run = [](const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t op, int,
                 gicl_comm_t c, cudaStream_t st) { return gicl_allreduce(s, r, n, d, op, c, st); },
       .run_nccl = [](const perf::Nccl& x, const void* s, void* r, size_t n, gicl_datatype_t d,
                      gicl_redop_t op, int, void* c,
                      cudaStream_t st) { return x.allreduce(s, r, n, d, op, c, st); }});
}
