// SPDX-License-Identifier: Apache-2.0
// reduce_scatter_perf: gicl_reduce_scatter beside ncclReduceScatter. The size is the send
// buffer (n rank blocks); rank r receives block r reduced. In place, the receive buffer is the
// rank's own block of the send buffer.
#include "driver.hpp"

namespace {

perf::Counts counts(size_t elems, int n, int rank) {
  const size_t count = elems / n;
  return {count, count * n, count, 0, static_cast<size_t>(rank) * count};
}
double expected(int rank, int n, size_t i, size_t count, gicl_redop_t op, int, bool uns) {
  return perf::reduce_inputs(n, rank * count + i, op, uns);
}
// Each rank sends n-1 of its n blocks and receives n-1.
double busbw_factor(int n) {
  return n > 1 ? double(n - 1) / n : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  return perf::run_driver(
      argc, argv,
      {.name = "reduce_scatter",
       .has_op = true,
       .has_root = false,
       .counts = counts,
       .expected = expected,
       .busbw_factor = busbw_factor,
       .busbw_formula = "(n-1)/n",
       .run = [](const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t op, int,
                 gicl_comm_t c,
                 cudaStream_t st) { return gicl_reduce_scatter(s, r, n, d, op, c, st); },
       .run_nccl = [](const perf::Nccl& x, const void* s, void* r, size_t n, gicl_datatype_t d,
                      gicl_redop_t op, int, void* c,
                      cudaStream_t st) { return x.reduce_scatter(s, r, n, d, op, c, st); }});
}
