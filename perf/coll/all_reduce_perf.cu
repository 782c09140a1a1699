// SPDX-License-Identifier: Apache-2.0
// all_reduce_perf: gicl_allreduce (and ncclAllReduce with --compare-nccl) through the shared
// driver.
#include "driver.hpp"

int main(int argc, char** argv) {
  return perf::run_driver(
      argc, argv,
      {"all_reduce", perf::Kind::kAllReduce, true, false,
       [](const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t op, int, gicl_comm_t c,
          cudaStream_t st) { return gicl_allreduce(s, r, n, d, op, c, st); },
       [](const perf::Nccl& x, const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t op,
          int, void* c, cudaStream_t st) { return x.allreduce(s, r, n, d, op, c, st); }});
}
