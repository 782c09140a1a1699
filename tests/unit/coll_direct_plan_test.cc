// SPDX-License-Identifier: Apache-2.0
// plan_direct: the direct kernels' buffer handling (zero copy, staging, push mode, push first,
// swaps, extra local blocks) and the pieces a call is cut into, from the facts alone.
#include <gtest/gtest.h>

#include "collectives/host/direct_plan.hpp"
#include "collectives/schedule/direct.hpp"

namespace gicl::coll {
namespace {

constexpr size_t kStage = size_t{1} << 20;  // one staging buffer

DirectCall call(DirectKind kind, size_t count, bool windows) {
  DirectCall c;
  c.kind = kind;
  c.nranks = 4;
  c.rank = 1;
  c.count = count;
  c.esize = 4;
  c.stage_bytes = kStage;
  c.local_blocks_fit = true;
  if (windows) c.send_window = 4096, c.recv_window = 1 << 24;
  return c;
}

TEST(DirectPlan, SymmetricBuffersRunZeroCopyInOnePiece) {
  const DirectPlan p = plan_direct(call(DirectKind::kTwoShot, 64 << 20, true));
  EXPECT_TRUE(p.src_zero);
  EXPECT_TRUE(p.dst_zero);
  EXPECT_FALSE(p.pushes || p.push_first || p.stage_src || p.unstage);
  EXPECT_EQ(p.piece, size_t{64} << 20);
}

TEST(DirectPlan, AStagedTwoShotPushesFirstInInboxSlotPieces) {
  const DirectCall c = call(DirectKind::kTwoShot, 16 << 20, false);
  const DirectPlan p = plan_direct(c);
  EXPECT_FALSE(p.src_zero);
  EXPECT_TRUE(p.pushes);
  EXPECT_TRUE(p.push_first);
  EXPECT_FALSE(p.stage_src);  // pushes instead of staging
  EXPECT_TRUE(p.unstage);     // no destination window: results land in the staging
  // n inbox slots of a rank block (each rounded to 16 bytes) fill the staging; a two-shot piece
  // is n of them.
  EXPECT_EQ(p.piece, direct::inbox_block_limit(kStage, c.nranks, c.esize) * c.nranks);
  EXPECT_LE(p.piece * c.esize, kStage);
}

TEST(DirectPlan, ThePushFirstRangeMakesEveryRankPushWhateverItsBuffers) {
  DirectCall c = call(DirectKind::kTwoShot, 32 << 20, true);
  c.push_first_range = true;
  const DirectPlan p = plan_direct(c);
  EXPECT_TRUE(p.push_first);
  EXPECT_FALSE(p.src_zero);  // none publishes a source window
  EXPECT_TRUE(p.pushes);
  EXPECT_TRUE(p.dst_zero);  // results still go straight into the symmetric output
}

TEST(DirectPlan, AnInPlaceOneShotStagesItsInput) {
  DirectCall c = call(DirectKind::kOneShot, 1000, true);
  c.send_is_recv = true;
  const DirectPlan p = plan_direct(c);
  EXPECT_FALSE(p.src_zero);
  EXPECT_TRUE(p.stage_src);
  EXPECT_FALSE(p.pushes);
}

TEST(DirectPlan, AnInPlaceAlltoallSwapsOnlyAcrossPiecesWithAWindowAndNoTimeSlicing) {
  DirectCall c = call(DirectKind::kAllToAll, 1 << 20, true);
  c.send_is_recv = true;
  c.recv_swap_window = 1 << 24;
  DirectPlan p = plan_direct(c);
  EXPECT_TRUE(p.pushes);
  EXPECT_LT(p.piece, c.count);
  EXPECT_TRUE(p.swaps);
  EXPECT_FALSE(p.dst_zero);  // peers must not write blocks not yet sent
  c.time_sliced = true;
  EXPECT_FALSE(plan_direct(c).swaps);
  c.time_sliced = false;
  c.count = 64;  // one piece
  EXPECT_FALSE(plan_direct(c).swaps);
  c.count = 1 << 20;
  c.recv_swap_window = kNoWindow;
  EXPECT_FALSE(plan_direct(c).swaps);
}

TEST(DirectPlan, ABroadcastNonRootCutsAsTheRootWould) {
  DirectCall c = call(DirectKind::kBroadcast, 4 << 20, false);
  c.root = 0;
  c.send_null = true;
  c.recv_as_send_window = 1 << 24;  // its receive buffer is symmetric: the root's is taken so
  DirectPlan p = plan_direct(c);
  EXPECT_EQ(p.piece, size_t{4} << 20);
  EXPECT_FALSE(p.stage_src);  // non-roots publish nothing
  c.recv_as_send_window = kNoWindow;
  p = plan_direct(c);
  EXPECT_EQ(p.piece, kStage / 4);
}

// Non-roots take pushes of their peers' parts into a symmetric receive buffer; the root writes
// its own and takes none, so it publishes no destination window.
TEST(DirectPlan, ABroadcastNonRootWithASymmetricReceiveBufferTakesPushes) {
  DirectCall c = call(DirectKind::kBroadcast, 1 << 20, true);
  c.root = 0;
  char send[64], recv[64];
  DirectPlan p = plan_direct(c);
  EXPECT_TRUE(p.dst_zero);
  EXPECT_EQ(piece_args(c, p, send, recv, 0).dst_off, c.recv_window);
  c.root = c.rank;
  p = plan_direct(c);
  EXPECT_FALSE(p.dst_zero);
  EXPECT_EQ(piece_args(c, p, send, recv, 0).dst_off, kNoWindow);
  c.root = 0;
  // A cudaMalloc receive buffer: pushes go to its staging where its pieces fit there, as they do
  // where its send buffer (standing for the root's) is staged too.
  c.recv_window = kNoWindow;
  p = plan_direct(c);
  EXPECT_FALSE(p.dst_zero);
  EXPECT_FALSE(p.unstage);  // a symmetric send buffer: one piece of 4 MiB, more than the staging
  c.send_window = kNoWindow;
  p = plan_direct(c);
  EXPECT_TRUE(p.unstage);
  EXPECT_EQ(p.piece, kStage / 4);
  EXPECT_TRUE(piece_args(c, p, send, recv, 0).unstage_dst);
}

TEST(DirectPlan, AllgatherCopiesItsOwnBlockOnExtraBlocksFromOneMiB) {
  DirectCall c = call(DirectKind::kAllGather, 1 << 18, true);  // 1 MiB rank blocks
  EXPECT_EQ(plan_direct(c).local_blocks, kLocalBlocks);
  c.own_block_in_place = true;
  EXPECT_EQ(plan_direct(c).local_blocks, 0);
  c.own_block_in_place = false;
  c.local_blocks_fit = false;
  EXPECT_EQ(plan_direct(c).local_blocks, 0);
  c.local_blocks_fit = true;
  c.count = 1000;
  EXPECT_EQ(plan_direct(c).local_blocks, 0);
}

TEST(DirectPlan, PieceArgumentsWalkTheCall) {
  DirectCall c = call(DirectKind::kReduceScatter, 1 << 20, false);
  const DirectPlan p = plan_direct(c);
  ASSERT_GT(p.piece, 0u);
  ASSERT_LT(p.piece, c.count);
  char send[64], recv[64];
  const DirectArgs a0 = piece_args(c, p, send, recv, 0);
  const DirectArgs a1 = piece_args(c, p, send, recv, p.piece);
  EXPECT_EQ(a0.count, p.piece);
  EXPECT_EQ(static_cast<const char*>(a1.send) - static_cast<const char*>(a0.send),
            static_cast<ptrdiff_t>(p.piece * c.esize));
  EXPECT_EQ(a0.send_ld, c.count);  // rank blocks of the whole call
  EXPECT_EQ(a0.src_off, kNoWindow);
  const DirectArgs last = piece_args(c, p, send, recv, c.count - 5);
  EXPECT_EQ(last.count, 5u);
}

// Every kind strides its buffers as its collective does: per-rank blocks of the whole call where
// the collective splits a buffer, none elsewhere.
TEST(DirectPlan, BlockStridesFollowTheCollective) {
  struct Case {
    DirectKind kind;
    bool send_blocks, recv_blocks;
  } cases[] = {
      {DirectKind::kOneShot, false, false},      {DirectKind::kTwoShot, false, false},
      {DirectKind::kReduceScatter, true, false}, {DirectKind::kReduce, false, false},
      {DirectKind::kAllGather, false, true},     {DirectKind::kBroadcast, false, false},
      {DirectKind::kAllToAll, true, true},       {DirectKind::kNvlsAllReduce, false, false},
      {DirectKind::kNvlsAllGather, false, true}};
  char send[64], recv[64];
  for (const Case& k : cases) {
    for (bool windows : {false, true}) {
      const DirectCall c = call(k.kind, 1 << 20, windows);
      const DirectPlan p = plan_direct(c);
      ASSERT_GT(p.piece, 0u);
      const DirectArgs a = piece_args(c, p, send, recv, 0);
      SCOPED_TRACE(static_cast<int>(k.kind));
      EXPECT_EQ(a.send_ld, k.send_blocks ? c.count : 0u);
      EXPECT_EQ(a.recv_ld, k.recv_blocks ? c.count : 0u);
      EXPECT_EQ(a.dst_ld, k.recv_blocks ? (p.dst_zero ? c.count : a.count) : 0u);
    }
  }
}

}  // namespace
}  // namespace gicl::coll
