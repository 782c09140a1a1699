// reduce_scatter_perf: ccl_reduce_scatter beside ncclReduceScatter.
#include "driver.hpp"

int main(int argc, char** argv) {
  return perf::run_driver(
      argc, argv,
      {"reduce_scatter", perf::Kind::kReduceScatter, true, false,
       [](const void* s, void* r, size_t n, ccl_datatype_t d, ccl_redop_t op, int, ccl_comm_t c,
          cudaStream_t st) { return ccl_reduce_scatter(s, r, n, d, op, c, st); },
       [](const perf::Nccl& x, const void* s, void* r, size_t n, ccl_datatype_t d, ccl_redop_t op,
          int, void* c, cudaStream_t st) { return x.reduce_scatter(s, r, n, d, op, c, st); }});
}
