// SPDX-License-Identifier: Apache-2.0
// all_gather_perf: gicl_allgather beside ncclAllGather.
#include "driver.hpp"

int main(int argc, char** argv) {
  return perf::run_driver(
      argc, argv,
      {"all_gather", perf::Kind::kAllGather, false, false,
       [](const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t, int, gicl_comm_t c,
          cudaStream_t st) { return gicl_allgather(s, r, n, d, c, st); },
       [](const perf::Nccl& x, const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t,
          int, void* c, cudaStream_t st) { return x.allgather(s, r, n, d, c, st); }});
}
