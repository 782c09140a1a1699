// SPDX-License-Identifier: Apache-2.0
// broadcast_perf: gicl_broadcast beside ncclBroadcast: every rank receives the root's buffer.
#include "driver.hpp"

namespace {

perf::Counts counts(size_t elems, int, int) {
  return {elems, elems, elems};
}
double expected(int, int, size_t i, size_t, gicl_redop_t, int root, bool uns) {
  return perf::input_value(root, i, uns);
}
// The root's data crosses one link to each peer; a pipelined chain moves it at link speed.
double busbw_factor(int) {
  return 1.0;
}

}  // namespace

int main(int argc, char** argv) {
  return perf::run_driver(
      argc, argv,
      {.name = "broadcast",
       .has_op = false,
       .has_root = true,
       .counts = counts,
       .expected = expected,
       .busbw_factor = busbw_factor,
       .busbw_formula = "1",
       .run = [](const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t, int root,
                 gicl_comm_t c,
                 cudaStream_t st) { return gicl_broadcast(s, r, n, d, root, c, st); },
       .run_nccl = [](const perf::Nccl& x, const void* s, void* r, size_t n, gicl_datatype_t d,
                      gicl_redop_t, int root, void* c,
                      cudaStream_t st) { return x.broadcast(s, r, n, d, root, c, st); }});
}
