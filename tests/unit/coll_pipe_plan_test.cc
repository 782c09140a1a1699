// SPDX-License-Identifier: Apache-2.0
// The pipe collectives' launches (collectives/host/pipe_plan.hpp): which calls run in pieces of
// the temp buffer, and how deep each launch's chain is pipelined.
#include "collectives/host/pipe_plan.hpp"

#include <gtest/gtest.h>

namespace gicl::coll {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(PipePlan, TheCallsThatWorkInTheTempBufferRunInPiecesOfIt) {
  const size_t stage = 8 * kMiB, count = 32 * kMiB;  // 128 MiB of floats
  EXPECT_EQ(pipe_piece(Collective::kReduce, count, 4, 2, stage), stage / 4);
  EXPECT_EQ(pipe_piece(Collective::kReduceScatter, count, 4, 4, stage), stage / 4 / 4);
  EXPECT_EQ(pipe_piece(Collective::kAllToAll, count, 4, 4, stage), stage / 4 / 4);
  for (Collective c : {Collective::kAllReduce, Collective::kBroadcast, Collective::kAllGather})
    EXPECT_EQ(pipe_piece(c, count, 4, 4, stage), count);
  EXPECT_EQ(pipe_piece(Collective::kReduce, count, 16, 2, 8), 1u) << "at least an element";
}

// A reduce of 128 MiB runs in 16 pieces of 8 MiB; each piece's chain has the depth of a lone
// 8 MiB call (a slot's worth per chunk), not the whole call's 64, which cut every piece into
// messages an eighth of a slot long.
TEST(PipePlan, APiecesChainIsAsDeepAsTheLaunchNotTheCall) {
  const size_t stage = 8 * kMiB, slot = 256 << 10;
  const int blocks = 8;
  const size_t piece = pipe_piece(Collective::kReduce, 32 * kMiB, 4, 2, stage);
  EXPECT_EQ(pipe_chunks(piece, 4, blocks, slot), 4);  // 1 MiB per block over 256 KiB slots
  EXPECT_EQ(pipe_chunks(piece, 4, blocks, slot), pipe_chunks(2 * kMiB, 4, blocks, slot));
  EXPECT_EQ(pipe_chunks(8, 4, blocks, slot), 1) << "at least one chunk";
  EXPECT_EQ(pipe_chunks(size_t{1} << 40, 4, blocks, slot), 64) << "at most 64";
  EXPECT_EQ(pipe_chunks(4 * kMiB, 4, 0, slot), 64) << "no channel counts as one";
}

}  // namespace
}  // namespace gicl::coll
