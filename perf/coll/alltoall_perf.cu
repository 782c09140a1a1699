// alltoall_perf: ccl_alltoall beside NCCL's alltoall as nccl-tests runs it (a group of
// ncclSend/ncclRecv with every rank).
#include "driver.hpp"

namespace {

int nccl_alltoall(const perf::Nccl& x, const void* s, void* r, size_t n, ccl_datatype_t d,
                  ccl_redop_t, int, void* c, cudaStream_t st) {
  int nranks = perf::nccl_ranks(), es = perf::type_bytes(d);
  int rc = x.group_start();
  for (int q = 0; q < nranks && rc == 0; ++q) {
    rc = x.send(static_cast<const char*>(s) + q * n * es, n, d, q, c, st);
    if (rc == 0) rc = x.recv(static_cast<char*>(r) + q * n * es, n, d, q, c, st);
  }
  const int rc2 = x.group_end();
  return rc ? rc : rc2;
}

}  // namespace

int main(int argc, char** argv) {
  return perf::run_driver(
      argc, argv,
      {"alltoall", perf::Kind::kAllToAll, false, false,
       [](const void* s, void* r, size_t n, ccl_datatype_t d, ccl_redop_t, int, ccl_comm_t c,
          cudaStream_t st) { return ccl_alltoall(s, r, n, d, c, st); },
       nccl_alltoall});
}
