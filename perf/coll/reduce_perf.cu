// SPDX-License-Identifier: Apache-2.0
// reduce_perf: gicl_reduce beside ncclReduce: the root receives every rank's buffer reduced.
#include "driver.hpp"

namespace {

perf::Counts counts(size_t elems, int, int) {
  return {elems, elems, elems};
}
double expected(int, int n, size_t i, size_t, gicl_redop_t op, int, bool uns) {
  return perf::reduce_inputs(n, i, op, uns);
}
// Each rank's data crosses one link toward the root; a pipelined chain moves it at link speed.
double busbw_factor(int) {
  return 1.0;
}

}  // namespace

int main(int argc, char** argv) {
  return perf::run_driver(
      argc, argv,
      {.name = "reduce",
       .has_op = true,
       .has_root = true,
       .counts = counts,
       .expected = expected,
       .busbw_factor = busbw_factor,
       .busbw_formula = "1",
       .run = [](const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t op, int root,
                 gicl_comm_t c,
                 cudaStream_t st) { return gicl_reduce(s, r, n, d, op, root, c, st); },
       .run_nccl = [](const perf::Nccl& x, const void* s, void* r, size_t n, gicl_datatype_t d,
                      gicl_redop_t op, int root, void* c,
                      cudaStream_t st) { return x.reduce(s, r, n, d, op, root, c, st); },
       .root_receives_only = true});
}
