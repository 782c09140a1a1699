// SPDX-License-Identifier: Apache-2.0
// sendrecv_perf: every rank sends to rank+1 and receives from rank-1 in one group (gicl_send /
// gicl_recv beside ncclSend / ncclRecv), as nccl-tests' sendrecv_perf.
#include "driver.hpp"

namespace {

gicl_result_t gicl_sendrecv(const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t, int,
                            gicl_comm_t c, cudaStream_t st) {
  int rank = 0, nranks = 1;
  gicl_comm_rank(c, &rank);
  gicl_comm_size(c, &nranks);
  gicl_result_t rc = gicl_group_start();
  if (rc == GICL_SUCCESS) rc = gicl_send(s, n, d, (rank + 1) % nranks, c, st);
  if (rc == GICL_SUCCESS) rc = gicl_recv(r, n, d, (rank + nranks - 1) % nranks, c, st);
  const gicl_result_t rc2 = gicl_group_end();
  return rc != GICL_SUCCESS ? rc : rc2;
}

int nccl_sendrecv(const perf::Nccl& x, const void* s, void* r, size_t n, gicl_datatype_t d,
                  gicl_redop_t, int, void* c, cudaStream_t st) {
  const int rank = perf::nccl_rank(), nranks = perf::nccl_ranks();
  int rc = x.group_start();
  if (rc == 0) rc = x.send(s, n, d, (rank + 1) % nranks, c, st);
  if (rc == 0) rc = x.recv(r, n, d, (rank + nranks - 1) % nranks, c, st);
  const int rc2 = x.group_end();
  return rc ? rc : rc2;
}

perf::Counts counts(size_t elems, int, int) {
  return {elems, elems, elems};
}
double expected(int rank, int n, size_t i, size_t, gicl_redop_t, int, bool uns) {
  return perf::input_value((rank + n - 1) % n, i, uns);
}
// Each rank's buffer crosses one link.
double busbw_factor(int) {
  return 1.0;
}

}  // namespace

int main(int argc, char** argv) {
  return perf::run_driver(argc, argv,
                          {.name = "sendrecv",
                           .has_op = false,
                           .has_root = false,
                           .counts = counts,
                           .expected = expected,
                           .busbw_factor = busbw_factor,
                           .busbw_formula = "1",
                           .run = gicl_sendrecv,
                           .run_nccl = nccl_sendrecv,
                           .in_place = false});
}
