// sendrecv_perf: every rank sends to rank+1 and receives from rank-1 in one group (ccl_send /
// ccl_recv beside ncclSend / ncclRecv), as nccl-tests' sendrecv_perf.
#include "driver.hpp"

namespace {

ccl_result_t ccl_sendrecv(const void* s, void* r, size_t n, ccl_datatype_t d, ccl_redop_t, int,
                          ccl_comm_t c, cudaStream_t st) {
  int rank = 0, nranks = 1;
  ccl_comm_rank(c, &rank);
  ccl_comm_size(c, &nranks);
  ccl_result_t rc = ccl_group_start();
  if (rc == CCL_SUCCESS) rc = ccl_send(s, n, d, (rank + 1) % nranks, c, st);
  if (rc == CCL_SUCCESS) rc = ccl_recv(r, n, d, (rank + nranks - 1) % nranks, c, st);
  const ccl_result_t rc2 = ccl_group_end();
  return rc != CCL_SUCCESS ? rc : rc2;
}

int nccl_sendrecv(const perf::Nccl& x, const void* s, void* r, size_t n, ccl_datatype_t d,
                  ccl_redop_t, int, void* c, cudaStream_t st) {
  const int rank = perf::nccl_rank(), nranks = perf::nccl_ranks();
  int rc = x.group_start();
  if (rc == 0) rc = x.send(s, n, d, (rank + 1) % nranks, c, st);
  if (rc == 0) rc = x.recv(r, n, d, (rank + nranks - 1) % nranks, c, st);
  const int rc2 = x.group_end();
  return rc ? rc : rc2;
}

}  // namespace

int main(int argc, char** argv) {
  return perf::run_driver(
      argc, argv, {"sendrecv", perf::Kind::kSendRecv, false, false, ccl_sendrecv, nccl_sendrecv});
}
