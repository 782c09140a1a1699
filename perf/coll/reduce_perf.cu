// SPDX-License-Identifier: Apache-2.0
// reduce_perf: gicl_reduce beside ncclReduce.
#include "driver.hpp"

int main(int argc, char** argv) {
  return perf::run_driver(
      argc, argv,
      {"reduce", perf::Kind::kReduce, true, true,
       [](const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t op, int root,
          gicl_comm_t c, cudaStream_t st) { return gicl_reduce(s, r, n, d, op, root, c, st); },
       [](const perf::Nccl& x, const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t op,
          int root, void* c, cudaStream_t st) { return x.reduce(s, r, n, d, op, root, c, st); }});
}
