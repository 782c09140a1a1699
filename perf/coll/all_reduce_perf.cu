// all_reduce_perf: ccl_allreduce (and ncclAllReduce with --compare-nccl) through the shared driver.
#include "driver.hpp"

namespace {

double expected(int, int n, size_t i, ccl_redop_t op, int, bool is_unsigned) {
  double acc = perf::input_value(0, i, is_unsigned);
  for (int q = 1; q < n; ++q) {
    const double v = perf::input_value(q, i, is_unsigned);
    if (op == ccl_sum || op == ccl_avg)
      acc += v;
    else if (op == ccl_prod)
      acc *= v;
    else if (op == ccl_min)
      acc = v < acc ? v : acc;
    else
      acc = v > acc ? v : acc;
  }
  return op == ccl_avg ? acc / n : acc;
}

ccl_result_t run(const void* s, void* r, size_t count, ccl_datatype_t d, ccl_redop_t op, int,
                 ccl_comm_t comm, cudaStream_t st) {
  return ccl_allreduce(s, r, count, d, op, comm, st);
}

int run_nccl(const perf::Nccl& nccl, const void* s, void* r, size_t count, ccl_datatype_t d,
             ccl_redop_t op, int, void* comm, cudaStream_t st) {
  return nccl.allreduce(s, r, count, d, op, comm, st);
}

}  // namespace

int main(int argc, char** argv) {
  return perf::run_driver(argc, argv, {"all_reduce", true, false, run, run_nccl, expected});
}
