// SPDX-License-Identifier: Apache-2.0
// LL rows are rewritten whole once every 2^31 calls per row (ll_refresh,
// collectives/schedule/ll_flag.hpp), so a unit no call wrote for a long time cannot carry the
// flag of a later call. Reaching that age takes 2 x (2^32 - 1) calls of a row; the test plants
// it instead: each rank writes entries carrying the flag of a future call T into units beyond
// the small calls' reach of its row from the peer, the counters start just below a refresh
// (GICL_EPOCH_BASE), the small calls run across it, and at T a call reaches those units while
// rank 0 holds back its data. Without the refresh rank 1 takes the planted entries as rank 0's
// data (built with ll_refresh returning false, it fails so); with it rank 1 waits for the real
// ones. The LL one-shot allreduce (epoch rows) and point-to-point LL (slot rows), each on a
// communicator of its own; and the epoch rows again with the refresh epochs falling on SIMPLE
// (direct) allreduces, which must refresh the LL rows too (the collective epoch advances with
// every kernel).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "collectives/common/coll_args.h"
#include "collectives/host/coll_state.hpp"
#include "collectives/schedule/ll_flag.hpp"
#include "collectives/schedule/p2p.hpp"
#include "gicl/gicl.h"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

using coll::CollScratch;
using coll::CollState;

constexpr uint64_t kRefreshAt = uint64_t{1} << 30;  // ll_refresh's first numbers
constexpr size_t kPlantFrom = 16, kPlantTo = 1024;  // units planted (small calls use 1 or 2)

/// Writes entries with `flag` and garbage data into units [kPlantFrom, kPlantTo) of the row at
/// `row` (this rank's local view).
int plant(uint64_t* row, uint32_t flag) {
  std::vector<uint64_t> entries(2 * (kPlantTo - kPlantFrom));
  for (uint64_t& v : entries) v = 0x7f7f7f7full | (static_cast<uint64_t>(flag) << 32);
  RANK_CUDA(cudaMemcpy(row + 2 * kPlantFrom, entries.data(), entries.size() * sizeof(uint64_t),
                       cudaMemcpyHostToDevice));
  return 0;
}

int scratch_of(gicl_comm_t comm, CollScratch* out) {
  CollState* st = nullptr;
  RANK_CHECK(coll::coll_state(comm, &st).ok(), "no collective state");
  *out = st->scratch;
  return 0;
}

/// The LL one-shot allreduce of `count` floats (1 + r per element); rank 0 waits `hold` first.
int allreduce(gicl_comm_t comm, float* in, float* out, size_t count, int r, cudaStream_t s,
              std::chrono::milliseconds hold = {}) {
  std::this_thread::sleep_for(hold);
  RANK_OK(gicl_allreduce(in, out, count, gicl_float32, gicl_sum, comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  std::vector<float> got(count);
  RANK_CUDA(cudaMemcpy(got.data(), out, count * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; ++i)
    RANK_CHECK(got[i] == 3.0f, "rank %d: LL allreduce of %zu: element %zu is %g, not 3", r, count,
               i, got[i]);
  return 0;
}

/// One send/recv of `bytes` with the peer (LL-sized); rank 0 waits `hold` first.
int exchange(gicl_comm_t comm, uint8_t* in, uint8_t* out, size_t bytes, int r, cudaStream_t s,
             std::chrono::milliseconds hold = {}) {
  std::this_thread::sleep_for(hold);
  RANK_CUDA(cudaMemset(out, 0, bytes));
  RANK_OK(gicl_group_start());
  RANK_OK(gicl_send(in, bytes, gicl_uint8, 1 - r, comm, s));
  RANK_OK(gicl_recv(out, bytes, gicl_uint8, 1 - r, comm, s));
  RANK_OK(gicl_group_end());
  RANK_CUDA(cudaStreamSynchronize(s));
  std::vector<uint8_t> got(bytes);
  RANK_CUDA(cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < bytes; ++i)
    RANK_CHECK(got[i] == static_cast<uint8_t>(1 - r + 1),
               "rank %d: send/recv of %zu: byte %zu is %d", r, bytes, i, got[i]);
  return 0;
}

/// One of two ranks on a communicator whose counters start just below the refresh, with the
/// LL one-shot forced for allreduce.
int open_comm(gicl_unique_id_t id, int r, gicl_comm_t* comm, cudaStream_t* s) {
  setenv("GICL_EPOCH_BASE", std::to_string(kRefreshAt - 8).c_str(), 1);
  setenv("GICL_PROTO", "LL", 1);
  setenv("GICL_ALGO", "allreduce:one_shot", 1);
  setenv("GICL_WAIT_TIMEOUT", "3000", 1);
  if (init_on_gpu(id, 2, r, comm)) return 1;
  RANK_CUDA(cudaStreamCreate(s));
  return 0;
}

/// Rank 0 holds back its data of the call that reaches the planted units.
std::chrono::milliseconds hold(int r) {
  return std::chrono::milliseconds(r == 0 ? 300 : 0);
}

/// Epoch rows: [parity][sender][ll_entries]; T = the refresh of parity 0, + 2. With
/// `simple_at_refresh` the calls at the refresh epochs are SIMPLE one-shot allreduces (past the LL
/// rows: the direct kernel), not LL ones.
int collective_rows(gicl_unique_id_t id, int r, bool simple_at_refresh) {
  gicl_comm_t comm;
  cudaStream_t s;
  if (open_comm(id, r, &comm, &s)) return 1;
  const size_t big = 2 * kPlantTo;                                 // floats: kPlantTo units
  const size_t simple = coll::ll_capacity(2) / sizeof(float) * 2;  // past the LL rows
  float *in = nullptr, *out = nullptr;
  RANK_CUDA(cudaMalloc(&in, simple * sizeof(float)));
  RANK_CUDA(cudaMalloc(&out, simple * sizeof(float)));
  std::vector<float> ones(simple, static_cast<float>(1 + r));
  RANK_CUDA(cudaMemcpy(in, ones.data(), simple * sizeof(float), cudaMemcpyHostToDevice));
  if (int rc = allreduce(comm, in, out, 4, r, s)) return rc;
  CollScratch sc;
  if (int rc = scratch_of(comm, &sc)) return rc;
  uint64_t done = 0;
  auto epoch = [&] {
    return cudaMemcpy(&done, sc.epoch + r, sizeof(done), cudaMemcpyDeviceToHost);
  };
  RANK_CUDA(epoch());
  const uint64_t t = kRefreshAt + 2;
  RANK_CHECK(done + 4 < kRefreshAt, "epoch %llu: not below the refresh",
             static_cast<unsigned long long>(done));
  if (int rc = plant(sc.ll + ((t & 1) * 2 + (1 - r)) * sc.ll_entries, coll::ll_flag(t))) return rc;
  // Every rank makes the same calls, so every rank reads the same epochs.
  while (done + 1 < t) {
    const bool at_refresh = coll::ll_refresh(done + 1, 2);
    const size_t count = simple_at_refresh && at_refresh ? simple : 4;
    if (int rc = allreduce(comm, in, out, count, r, s)) return rc;
    RANK_CUDA(epoch());
  }
  RANK_CHECK(done + 1 == t, "epoch %llu before the large call, not %llu",
             static_cast<unsigned long long>(done), static_cast<unsigned long long>(t - 1));
  if (int rc = allreduce(comm, in, out, big, r, s, hold(r))) return rc;
  RANK_CUDA(epoch());
  RANK_CHECK(done == t, "the large call ran at epoch %llu, not %llu",
             static_cast<unsigned long long>(done), static_cast<unsigned long long>(t));
  RANK_CUDA(cudaFree(in));
  RANK_CUDA(cudaFree(out));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// Point-to-point slot rows: [slot][sender][p2p_ll_entries]; T = slot 0's refresh +
/// kP2pLLSlots.
int p2p_rows(gicl_unique_id_t id, int r) {
  gicl_comm_t comm;
  cudaStream_t s;
  if (open_comm(id, r, &comm, &s)) return 1;
  uint8_t *in = nullptr, *out = nullptr;
  const size_t bytes = 8 * kPlantTo;
  RANK_CUDA(cudaMalloc(&in, bytes));
  RANK_CUDA(cudaMalloc(&out, bytes));
  RANK_CUDA(cudaMemset(in, 1 + r, bytes));
  if (int rc = exchange(comm, in, out, 8, r, s)) return rc;
  CollScratch sc;
  if (int rc = scratch_of(comm, &sc)) return rc;
  coll::P2pCounts pc{};
  RANK_CUDA(cudaMemcpy(&pc, sc.p2p + (1 - r), sizeof(pc), cudaMemcpyDeviceToHost));
  const uint64_t q = kRefreshAt + coll::kP2pLLSlots;
  RANK_CHECK(pc.ll_rcvd + 4 < kRefreshAt && pc.ll_rcvd == pc.ll_sent,
             "LL operations %llu / %llu: not below the refresh",
             static_cast<unsigned long long>(pc.ll_sent),
             static_cast<unsigned long long>(pc.ll_rcvd));
  uint64_t* row =
      sc.p2p_ll + (static_cast<size_t>(coll::p2p_ll_slot(q)) * 2 + (1 - r)) * sc.p2p_ll_entries;
  if (int rc = plant(row, coll::ll_flag(q))) return rc;
  for (uint64_t k = pc.ll_rcvd + 1; k < q; ++k)
    if (int rc = exchange(comm, in, out, 8, r, s)) return rc;
  if (int rc = exchange(comm, in, out, bytes, r, s, hold(r))) return rc;
  RANK_CUDA(cudaMemcpy(&pc, sc.p2p + (1 - r), sizeof(pc), cudaMemcpyDeviceToHost));
  RANK_CHECK(pc.ll_rcvd == q, "the large receive was LL operation %llu, not %llu",
             static_cast<unsigned long long>(pc.ll_rcvd), static_cast<unsigned long long>(q));
  RANK_CUDA(cudaFree(in));
  RANK_CUDA(cudaFree(out));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

void run_two_ranks(int (*body)(gicl_unique_id_t, int)) {
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(
      2, [&](int r) { return body(id, r); }, 60000);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

TEST(CollectiveCounters, LLCollectiveRowsAreRefreshedBeforeTheirFlagsRepeat) {
  REQUIRE_GPUS(1);
  run_two_ranks([](gicl_unique_id_t id, int r) { return collective_rows(id, r, false); });
}

TEST(CollectiveCounters, LLCollectiveRowsAreRefreshedWhenTheRefreshFallsOnOtherKernels) {
  REQUIRE_GPUS(1);
  run_two_ranks([](gicl_unique_id_t id, int r) { return collective_rows(id, r, true); });
}

TEST(CollectiveCounters, PointToPointLLRowsAreRefreshedBeforeTheirFlagsRepeat) {
  REQUIRE_GPUS(1);
  run_two_ranks(p2p_rows);
}

}  // namespace
}  // namespace gicl::test
