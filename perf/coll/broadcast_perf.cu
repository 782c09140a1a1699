// SPDX-License-Identifier: Apache-2.0
// broadcast_perf: gicl_broadcast beside ncclBroadcast.
#include "driver.hpp"

int main(int argc, char** argv) {
  return perf::run_driver(
      argc, argv,
      {"broadcast", perf::Kind::kBroadcast, false, true,
       [](const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t, int root,
          gicl_comm_t c, cudaStream_t st) { return gicl_broadcast(s, r, n, d, root, c, st); },
       [](const perf::Nccl& x, const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t,
          int root, void* c, cudaStream_t st) { return x.broadcast(s, r, n, d, root, c, st); }});
}
