// SPDX-License-Identifier: Apache-2.0
// alltoall_perf: gicl_alltoall beside NCCL's alltoall, run both ways NCCL offers where it has
// them: a group of ncclSend/ncclRecv with every rank (as nccl-tests runs it) and ncclAlltoAll
// (NCCL 2.28 and later); each size reports the faster. `--p2p` makes gicl's side the same grouped
// send/recv (gicl_send / gicl_recv), as a framework's alltoall of them would.
#include "driver.hpp"
#include "values.hpp"

namespace {

int nccl_grouped(const perf::Nccl& x, const void* s, void* r, size_t n, gicl_datatype_t d,
                 gicl_redop_t, int, void* c, cudaStream_t st) {
  const int nranks = perf::nccl_ranks();
  const size_t es = gicl_datatype_size(d);
  int rc = x.group_start();
  for (int q = 0; q < nranks && rc == 0; ++q) {
    rc = x.send(static_cast<const char*>(s) + q * n * es, n, d, q, c, st);
    if (rc == 0) rc = x.recv(static_cast<char*>(r) + q * n * es, n, d, q, c, st);
  }
  const int rc2 = x.group_end();
  return rc ? rc : rc2;
}

/// --p2p: the same pattern from gicl_send / gicl_recv in one group (with every rank, itself
/// included: one group of 2 x nranks operations).
gicl_result_t gicl_grouped(const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t, int,
                           gicl_comm_t c, cudaStream_t st) {
  int nranks = 1;
  gicl_comm_size(c, &nranks);
  const size_t es = gicl_datatype_size(d);
  gicl_result_t rc = gicl_group_start();
  for (int q = 0; q < nranks && rc == GICL_SUCCESS; ++q) {
    rc = gicl_send(static_cast<const char*>(s) + q * n * es, n, d, q, c, st);
    if (rc == GICL_SUCCESS) rc = gicl_recv(static_cast<char*>(r) + q * n * es, n, d, q, c, st);
  }
  const gicl_result_t rc2 = gicl_group_end();
  return rc != GICL_SUCCESS ? rc : rc2;
}

int nccl_native(const perf::Nccl& x, const void* s, void* r, size_t n, gicl_datatype_t d,
                gicl_redop_t, int, void* c, cudaStream_t st) {
  return x.alltoall(s, r, n, d, c, st);
}

// The size is each buffer (n blocks); block j of rank r's send lands in block r of rank j's recv.
perf::Counts counts(size_t elems, int n, int) {
  const size_t count = elems / n;
  return {count, count * n, count * n};
}
double expected(int rank, int, size_t i, size_t count, gicl_redop_t, int, bool uns) {
  return perf::input_value(static_cast<int>(i / count), rank * count + i % count, uns);
}
// Each rank sends n-1 of its n blocks and receives n-1.
double busbw_factor(int n) {
  return n > 1 ? double(n - 1) / n : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  perf::CollDesc desc{
      .name = "alltoall",
      .has_op = false,
      .has_root = false,
      .counts = counts,
      .expected = expected,
      .busbw_factor = busbw_factor,
      .busbw_formula = "(n-1)/n",
      .run = [](const void* s, void* r, size_t n, gicl_datatype_t d, gicl_redop_t, int,
                gicl_comm_t c, cudaStream_t st) { return gicl_alltoall(s, r, n, d, c, st); },
      .run_nccl = nccl_grouped};
  desc.run_nccl_alt = nccl_native;
  desc.nccl_alt_ready = [](const perf::Nccl& x) { return x.has_alltoall(); };
  desc.nccl_ways = "grouped ncclSend/ncclRecv and ncclAlltoAll";
  desc.run_p2p = gicl_grouped;
  return perf::run_driver(argc, argv, desc);
}
