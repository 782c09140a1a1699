// SPDX-License-Identifier: Apache-2.0
// Every collective algorithm's schedule, simulated on CPU with exact integer data for 1..64 ranks
// (non-powers of two included) and counts that are zero, smaller than the rank count, not
// divisible by it, and large.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "collectives/schedule/direct.hpp"
#include "collectives/schedule/ll_flag.hpp"
#include "collectives/schedule/p2p.hpp"
#include "collectives/sim/simulator.hpp"

namespace gicl::coll {
namespace {

struct Pair {
  Collective coll;
  Algorithm algo;
};

const Pair kPairs[] = {
    {Collective::kAllReduce, Algorithm::kRing},
    {Collective::kAllReduce, Algorithm::kRecursiveDoubling},
    {Collective::kAllReduce, Algorithm::kRabenseifner},
    {Collective::kAllReduce, Algorithm::kOneShot},
    {Collective::kAllReduce, Algorithm::kTwoShot},
    {Collective::kAllReduce, Algorithm::kNvls},
    {Collective::kAllGather, Algorithm::kNvls},
    {Collective::kReduceScatter, Algorithm::kRing},
    {Collective::kReduceScatter, Algorithm::kDirect},
    {Collective::kAllGather, Algorithm::kRing},
    {Collective::kAllGather, Algorithm::kRecursiveDoubling},
    {Collective::kAllGather, Algorithm::kDirect},
    {Collective::kBroadcast, Algorithm::kRing},
    {Collective::kBroadcast, Algorithm::kDirect},
    {Collective::kReduce, Algorithm::kRing},
    {Collective::kReduce, Algorithm::kDirect},
    {Collective::kAllToAll, Algorithm::kRing},
    {Collective::kAllToAll, Algorithm::kDirect},
    {Collective::kAllGather, Algorithm::kCopyEngine},
    {Collective::kBroadcast, Algorithm::kCopyEngine},
    {Collective::kAllToAll, Algorithm::kCopyEngine},
    {Collective::kAllGather, Algorithm::kSendRecv},
    {Collective::kBroadcast, Algorithm::kSendRecv},
    {Collective::kAllToAll, Algorithm::kSendRecv},
};

// Reduce-scatter, allgather and alltoall move equal blocks: their whole-buffer count is a
// multiple of n.
bool blocked(Collective c) {
  return c == Collective::kReduceScatter || c == Collective::kAllGather ||
         c == Collective::kAllToAll;
}

std::vector<size_t> counts_for(Collective c, int n, std::mt19937& rng, bool big) {
  if (blocked(c)) {
    std::vector<size_t> v = {0, size_t(n), 2 * size_t(n), 3 * size_t(n),
                             (1 + rng() % 97) * size_t(n)};
    if (big) v.push_back((1 + rng() % 2000) * size_t(n));
    return v;
  }
  std::vector<size_t> v = {
      0, 1, size_t(n > 1 ? n - 1 : 1), size_t(n + 1), 2 * size_t(n) + 3, 1 + rng() % 999};
  if (big) v.push_back(20000 + rng() % 80000);
  return v;
}

class Schedules : public ::testing::TestWithParam<Pair> {};

TEST_P(Schedules, ExactResultsFor1To64Ranks) {
  const Pair pr = GetParam();
  std::mt19937 rng(1234 + static_cast<int>(pr.coll) * 17 + static_cast<int>(pr.algo));
  for (int n = 1; n <= 64; ++n) {
    const bool big = n == 2 || n == 3 || n == 8 || n == 13 || n == 63;
    for (size_t count : counts_for(pr.coll, n, rng, big)) {
      Shape sh{pr.coll, pr.algo, n, count};
      sh.root = static_cast<int>(rng() % n);
      sh.chunks = 1 + static_cast<int>(rng() % 8);
      const SimResult r = simulate(sh, rng());
      ASSERT_TRUE(r.ok) << r.error << " (root " << sh.root << ", chunks " << sh.chunks << ")";
    }
  }
}

// The pipe algorithms beyond the direct kernels' 64 ranks (the tuner's choice there), up to
// kMaxPipeRanks: every collective each runs.
TEST(Schedules, PipeAlgorithmsAreExactBeyond64Ranks) {
  std::mt19937 rng(4321);
  for (const Pair& pr : kPairs) {
    if (pr.algo != Algorithm::kRing && pr.algo != Algorithm::kRecursiveDoubling &&
        pr.algo != Algorithm::kRabenseifner)
      continue;
    for (int n : {65, 72, 127, 200, kMaxPipeRanks}) {
      // At the most ranks one count: the simulator moves n^2 blocks a step.
      const std::vector<size_t> counts =
          n == kMaxPipeRanks ? std::vector<size_t>{size_t(n)} : counts_for(pr.coll, n, rng, false);
      for (size_t count : counts) {
        Shape sh{pr.coll, pr.algo, n, count};
        sh.root = static_cast<int>(rng() % n);
        sh.chunks = 1 + static_cast<int>(rng() % 4);
        const SimResult r = simulate(sh, rng());
        ASSERT_TRUE(r.ok) << collective_name(pr.coll) << " " << algorithm_name(pr.algo) << " n "
                          << n << " count " << count << ": " << r.error;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, Schedules, ::testing::ValuesIn(kPairs), [](const auto& info) {
  return std::string(collective_name(info.param.coll)) + "_" + algorithm_name(info.param.algo);
});

TEST(Schedules, BlockSlicesStartOnWholePacks) {
  // The direct kernels' block slices (partition_units): contiguous, covering the range, every
  // part but empty ones starting on a unit boundary, sizes within one unit of each other.
  for (size_t unit : {size_t{1}, size_t{2}, size_t{4}, size_t{16}})
    for (size_t count : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{1000}, size_t{70001},
                         size_t{4194304}})
      for (int parts : {1, 3, 16, 24, 28, 32, 33, 64}) {
        size_t next = 0, most = 0, least = SIZE_MAX;
        for (int i = 0; i < parts; ++i) {
          size_t lo = 0, n = 0;
          partition_units(count, parts, i, unit, &lo, &n);
          EXPECT_EQ(lo, next) << count << " " << parts << " " << i;
          if (n > 0) {
            EXPECT_EQ(lo % unit, 0u) << count << " " << parts << " " << i;
          }
          next = lo + n;
          if (lo + n < count) {
            most = std::max(most, n);
            least = std::min(least, n);
          }
        }
        EXPECT_EQ(next, count) << count << " " << parts;
        if (least != SIZE_MAX) {
          EXPECT_LE(most - least, unit) << count << " " << parts;
        }
      }
  // 4M floats over 33 blocks: 127104 or 127100 elements (whole packs of 4), not 127100.1.
  size_t lo = 0, n = 0;
  partition_units(4194304, 33, 1, 4, &lo, &n);
  EXPECT_EQ(lo % 4, 0u);
}

// Two-shot and NVLS allreduce as the kernels cut them (rank blocks in 16-byte packs of the
// element size, two_shot_block): exact results for 1..64 ranks and every element size, every
// non-empty block starting on a pack, none larger than the inbox slot push mode gives it.
TEST(Schedules, TwoShotRankBlocksAreWholePacksAndExact) {
  std::mt19937 rng(99);
  for (Algorithm algo : {Algorithm::kTwoShot, Algorithm::kNvls})
    for (size_t esize : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
      const size_t unit = 16 / esize;
      for (int n = 1; n <= 64; ++n) {
        const bool big = n == 2 || n == 3 || n == 8 || n == 13 || n == 63;
        for (size_t count : counts_for(Collective::kAllReduce, n, rng, big)) {
          Shape sh{Collective::kAllReduce, algo, n, count};
          sh.esize = esize;
          const SimResult r = simulate(sh, rng());
          ASSERT_TRUE(r.ok) << r.error << " (esize " << esize << ")";
          const size_t slot = direct::inbox_stride((count + n - 1) / n, esize);
          for (int s = 0; s < num_steps(sh); ++s)
            for (int q = 0; q < n; ++q) {
              const Step st = make_step(sh, q, s);
              for (const Transfer& t : {st.send, st.recv}) {
                if (t.count == 0) continue;
                EXPECT_EQ(t.offset % unit, 0u) << n << " " << count << " " << esize;
                EXPECT_LE(t.count * esize, slot) << n << " " << count << " " << esize;
              }
            }
        }
      }
    }
  // The cut differs from the element-wise one where a block is not whole packs: 3 ranks, 100
  // floats (25 packs): 36 + 32 + 32, not 34 + 33 + 33.
  const Transfer b = direct::two_shot_block(1, 100, 3, 1, 4);
  EXPECT_EQ(b.offset, 36u);
  EXPECT_EQ(b.count, 32u);
  EXPECT_EQ(direct::two_shot_block(2, 100, 3, 2, 4).offset, 68u);
  EXPECT_EQ(direct::two_shot_block(1, 100, 3, 1, 0).offset, 34u);
}

TEST(Schedules, StepCountsAreTheTextbookOnes) {
  EXPECT_EQ(num_steps({Collective::kAllReduce, Algorithm::kRing, 8, 100}), 14);
  EXPECT_EQ(num_steps({Collective::kAllReduce, Algorithm::kRecursiveDoubling, 8, 100}), 3);
  EXPECT_EQ(num_steps({Collective::kAllReduce, Algorithm::kRecursiveDoubling, 6, 100}),
            2 + 2);  // folded
  EXPECT_EQ(num_steps({Collective::kAllReduce, Algorithm::kRabenseifner, 16, 100}), 8);
  EXPECT_EQ(num_steps({Collective::kAllReduce, Algorithm::kOneShot, 4, 100}), 3);
  EXPECT_EQ(num_steps({Collective::kAllReduce, Algorithm::kTwoShot, 4, 100}), 6);
  EXPECT_EQ(num_steps({Collective::kAllReduce, Algorithm::kRing, 1, 100}), 0);
}

TEST(Schedules, RingAndRabenseifnerMoveTheBandwidthOptimalAmount) {
  // Each rank sends 2 (n-1)/n of the buffer: the bandwidth-optimal allreduce.
  for (Algorithm a : {Algorithm::kRing, Algorithm::kRabenseifner, Algorithm::kTwoShot}) {
    const SimResult r = simulate({Collective::kAllReduce, a, 8, 8000}, 7);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.elements_moved, 2u * 7 * 1000) << algorithm_name(a);
  }
  const SimResult one = simulate({Collective::kAllReduce, Algorithm::kOneShot, 8, 8000}, 7);
  EXPECT_EQ(one.elements_moved, 7u * 8000);  // latency-optimal, bandwidth-hungry
}

TEST(Schedules, RingReduceIsAChainIntoTheRootCarryingTheBufferOnce) {
  // The mirror of the ring broadcast: every rank but the root sends the buffer once, in `chunks`
  // pieces over chunks + n - 2 steps, where a ring allreduce sends 2 (n - 1)/n of it twice over.
  Shape sh{Collective::kReduce, Algorithm::kRing, 8, 8000};
  sh.root = 3;
  sh.chunks = 5;
  EXPECT_EQ(num_steps(sh), 5 + 8 - 2);
  const SimResult r = simulate(sh, 7);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.elements_moved, 8000u);
  for (int s = 0; s < num_steps(sh); ++s) {
    EXPECT_LT(make_step(sh, 3, s).send.peer, 0) << "the root sends at step " << s;
    EXPECT_LT(make_step(sh, 4, s).recv.peer, 0) << "the chain's start receives at step " << s;
  }
}

TEST(Schedules, UnsupportedPairsAreRefused) {
  EXPECT_FALSE(supported(Collective::kAllToAll, Algorithm::kRecursiveDoubling));
  EXPECT_FALSE(supported(Collective::kReduce, Algorithm::kRabenseifner));
  EXPECT_FALSE(simulate({Collective::kAllToAll, Algorithm::kRecursiveDoubling, 4, 16}, 1).ok);
}

// Push mode: a launch the host sizes by inbox_block_limit keeps every sender's slot inside the
// receiver's staging and 16-byte aligned, for two-shot (blocks of a partitioned count) and
// reduce-scatter (the rank block itself). A limit of one more element would overflow.
TEST(Schedules, PushInboxSlotsFitTheStaging) {
  for (size_t stage : {size_t{4096}, size_t{1} << 20, (size_t{32} << 20) + 4096})
    for (int n = 1; n <= 64; ++n)
      for (size_t esize : {1, 2, 4, 8}) {
        const size_t limit = direct::inbox_block_limit(stage, n, esize);
        ASSERT_GT(limit, 0u) << stage << " " << n;
        const size_t two_shot = limit * n;  // the largest two-shot piece
        const size_t block = (two_shot + n - 1) / n;
        EXPECT_LE(n * direct::inbox_stride(block, esize), stage)
            << stage << " " << n << " " << esize;
        EXPECT_LE(n * direct::inbox_stride(limit, esize), stage);
        EXPECT_EQ(direct::inbox_stride(block, esize) % 16, 0u);
        EXPECT_GT(n * direct::inbox_stride(limit + 1, esize), stage);
      }
}

// The in-place alltoall's swaps: at every step each rank's partner has it as partner (a
// matching: nobody waits for a rank busy with a third), and over the n steps every rank meets
// each other rank exactly once and itself once.
TEST(Schedules, SwapPartnersAreAMatchingAtEveryStep) {
  for (int n = 1; n <= 64; ++n) {
    std::vector<int> met(static_cast<size_t>(n) * n, 0);
    for (int k = 0; k < n; ++k)
      for (int r = 0; r < n; ++r) {
        const int j = direct::swap_partner(k, r, n);
        ASSERT_GE(j, 0);
        ASSERT_LT(j, n);
        EXPECT_EQ(direct::swap_partner(k, j, n), r) << "n " << n << " step " << k << " rank " << r;
        ++met[static_cast<size_t>(r) * n + j];
      }
    for (int r = 0; r < n; ++r)
      for (int j = 0; j < n; ++j) EXPECT_EQ(met[static_cast<size_t>(r) * n + j], 1) << n;
  }
}

// LL entries start zeroed and carry ll_flag of a 64-bit epoch or sequence number: the flag is
// never 0 (the low 32 bits were, at 2^32), and numbers closer than 2^32 - 1 never share one.
TEST(Schedules, LLFlagsAreNeverZeroAndRepeatOnlyAfterTwoToThe32MinusOne) {
  const uint64_t period = 0xffffffffull;
  for (uint64_t k = 0; k < 4; ++k)
    for (uint64_t around : {k << 32, k * period, (k << 32) + k})
      for (uint64_t q = around > 64 ? around - 64 : 1; q < around + 64; ++q) {
        EXPECT_NE(ll_flag(q), 0u) << q;
        EXPECT_NE(ll_flag(q), ll_flag(q + 1)) << q;
        EXPECT_EQ(ll_flag(q), ll_flag(q + period)) << q;
        EXPECT_NE(ll_flag(q), ll_flag(q + period - 1)) << q;
      }
  EXPECT_NE(ll_flag(uint64_t{1} << 32), 0u);
  EXPECT_NE(ll_flag(uint64_t{1} << 32), ll_flag(0));
}

// Every row is rewritten whole once per 2^31 numbers (ll_refresh), so no unit of it keeps a flag
// long enough to meet it again: rows x (2^32 - 1) numbers, the distance at which calls of one
// row share a flag.
TEST(Schedules, EveryLLRowIsRefreshedLongBeforeItsFlagsRepeat) {
  const uint64_t period = 0xffffffffull, every = uint64_t{1} << 31;
  for (unsigned rows : {2u, unsigned(kP2pLLSlots)}) {
    // Within one 2^31 window: exactly `rows` refreshing numbers, one per row.
    for (uint64_t window : {uint64_t{0}, every, 5 * every, (uint64_t{1} << 40) + every}) {
      std::vector<int> per_row(rows, 0);
      for (uint64_t q = window + (uint64_t{1} << 30) - 8; q < window + (uint64_t{1} << 30) + 8; ++q)
        if (ll_refresh(q, rows)) ++per_row[q % rows];
      for (unsigned r = 0; r < rows; ++r)
        EXPECT_EQ(per_row[r], 1) << rows << " " << window << " " << r;
      EXPECT_FALSE(ll_refresh(window, rows));
      EXPECT_FALSE(ll_refresh(window + every - 1, rows));
    }
    // Not among a communicator's first calls (counters start at 0 or GICL_EPOCH_BASE).
    for (uint64_t q = 0; q < 4096; ++q) EXPECT_FALSE(ll_refresh(q, rows)) << q;
    // The same row refreshes again 2^31 numbers on; a flag of that row repeats only after
    // rows x (2^32 - 1) (ll_flag, the period a multiple of rows away).
    const uint64_t first = (uint64_t{1} << 30) + 1;
    EXPECT_TRUE(ll_refresh(first, rows));
    EXPECT_TRUE(ll_refresh(first + every, rows));
    EXPECT_LT(every + rows, rows * period);
    EXPECT_EQ(ll_flag(first), ll_flag(first + rows * period));
  }
}

}  // namespace
}  // namespace gicl::coll
