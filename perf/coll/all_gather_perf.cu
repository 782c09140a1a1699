// SPDX-License-Identifier: Apache-2.0
// all_gather_perf: gicl_allgather beside ncclAllGather. The size is the receive buffer (n rank
// blocks); block r is rank r's send buffer. In place, the send buffer is the rank's own block.
#include "driver.hpp"

namespace {

perf::Counts counts(size_t elems, int n, int rank) {
  const size_t count = elems / n;
  return {count, count, count * n, static_cast<size_t>(rank) * count, 0};
}
double expected(int, int, size_t i, size_t count, gicl_redop_t, int, bool uns) {
  return perf::input_value(static_cast<int>(i / count), i % count, uns);
}
// Each rank receives the n-1 blocks it does not have.
double busbw_factor(int n) {
  return n > 1 ? double(n - 1) / n : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  return perf::run_driver(
      argc, argv,
      {.name = "all_gather",
       .has_op = false,
       .has_root = false,
       .counts = counts,
       .expected = expected,
       .busbw_factor = busbw_factor,
       .busbw_formula = "(n-1)/n",
       .run = [](const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t, int,
                 gicl_comm_t c, cudaStream_t st) { return gicl_allgather(s, r, n, d, c, st); },
       .run_nccl = [](const perf::Nccl& x, const void* s, void* r, size_t n, gicl_datatype_t d,
                      gicl_redop_t, int, void* c,
                      cudaStream_t st) { return x.allgather(s, r, n, d, c, st); }});
}
