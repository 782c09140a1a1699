// SPDX-License-Identifier: Apache-2.0
// The tuner's table, GICL_ALGO parsing and the NVLS gates.
#include <gtest/gtest.h>

#include <cstdlib>

#include "collectives/common/coll_args.h"
#include "collectives/host/tuner.hpp"

namespace gicl::coll {
namespace {

TunerInput in(Collective c, size_t bytes, int n = 2, bool p2p = true, bool nvlink = true) {
  return {c, bytes, n, p2p, nvlink};
}

TEST(Tuner, AllReduceTableFollowsTheMeasuredCrossovers) {
  const Choice tiny = table_choice(in(Collective::kAllReduce, 8));
  EXPECT_EQ(tiny.algo, Algorithm::kOneShot);
  EXPECT_EQ(tiny.proto, Proto::kLL);
  const Choice ll_edge = table_choice(in(Collective::kAllReduce, kLLMaxBytes, 2, true, false));
  EXPECT_EQ(ll_edge.proto, Proto::kLL);
  const Choice mid = table_choice(in(Collective::kAllReduce, kLLMaxBytes + 4));
  EXPECT_NE(mid.proto, Proto::kLL);
  EXPECT_EQ(table_choice(in(Collective::kAllReduce, 64 << 20)).algo, Algorithm::kTwoShot);
  // The LL rows shrink with the rank count (4 x nranks x capacity bytes of heap), and so does
  // the LL range.
  EXPECT_EQ(ll_capacity(2), kLLMaxBytes);
  EXPECT_EQ(ll_capacity(64), size_t{64} << 10);
  EXPECT_EQ(ll_capacity(1024), size_t{64} << 10);
  EXPECT_EQ(table_choice(in(Collective::kAllReduce, 128 << 10, 64)).proto, Proto::kSimple);
  EXPECT_EQ(table_choice(in(Collective::kAllReduce, 128 << 10, 8)).proto, Proto::kLL);
  // No load/store path to every rank: the pipe algorithms.
  EXPECT_EQ(table_choice(in(Collective::kAllReduce, 8, 2, false)).algo,
            Algorithm::kRecursiveDoubling);
}

// More ranks than the direct kernels take (an NVLink domain of 72 GPUs, say): every collective
// runs a pipe algorithm, as across nodes, and a forced load/store or copy-engine algorithm gives
// way to it; up to kMaxPipeRanks.
TEST(Tuner, MoreRanksThanTheDirectKernelsTakeRunThePipeAlgorithms) {
  for (int n : {kMaxDirectRanks + 1, 72, 256, kMaxPipeRanks}) {
    EXPECT_EQ(table_choice(in(Collective::kAllReduce, 8, n)).algo, Algorithm::kRecursiveDoubling)
        << n;
    EXPECT_EQ(table_choice(in(Collective::kAllReduce, 64 << 20, n)).algo, Algorithm::kRing) << n;
    EXPECT_EQ(table_choice(in(Collective::kAllGather, 4096, n)).algo, Algorithm::kRecursiveDoubling)
        << n;
    for (Collective k : {Collective::kReduceScatter, Collective::kBroadcast, Collective::kReduce,
                         Collective::kAllToAll})
      EXPECT_EQ(table_choice(in(k, 4096, n)).algo, Algorithm::kRing) << n;
    TunerConfig cfg;
    ASSERT_TRUE(parse_algo_setting("allreduce:one_shot,alltoall:copy_engine", &cfg).ok());
    const Choice a = choose(cfg, in(Collective::kAllReduce, 8, n));
    EXPECT_EQ(a.algo, Algorithm::kRecursiveDoubling) << n;
    EXPECT_FALSE(a.forced) << n;
    EXPECT_EQ(choose(cfg, in(Collective::kAllToAll, 1 << 20, n)).algo, Algorithm::kRing) << n;
    ASSERT_TRUE(parse_algo_setting("allreduce:ring", &cfg).ok());
    EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 8, n)).algo, Algorithm::kRing) << n;
  }
  // At kMaxDirectRanks the direct kernels still run.
  EXPECT_EQ(table_choice(in(Collective::kAllToAll, 4096, kMaxDirectRanks)).algo,
            Algorithm::kDirect);
}

TEST(Tuner, BlocksGrowWithSizeWithinLimits) {
  for (size_t b = 1; b < (size_t{1} << 34); b *= 4) {
    const Choice c = table_choice(in(Collective::kAllGather, b));
    EXPECT_GE(c.blocks, 1);
    EXPECT_LE(c.blocks, kMaxBlocks);
  }
  EXPECT_LT(table_choice(in(Collective::kAllGather, 1024)).blocks,
            table_choice(in(Collective::kAllGather, 1 << 30)).blocks);
  EXPECT_LE(table_choice(in(Collective::kAllReduce, 1 << 30, 2, false)).blocks, kPipeChannels);
  // Every flag row from 64 MiB on (measured: more in flight over NVLink), 32 below; two ranks'
  // two-way collectives from 4 MiB.
  EXPECT_EQ(table_choice(in(Collective::kAllGather, size_t{1} << 30, 8)).blocks, kMaxBlocks);
  EXPECT_EQ(table_choice(in(Collective::kAllGather, size_t{16} << 20, 8)).blocks, 32);
  EXPECT_EQ(table_choice(in(Collective::kAllGather, size_t{64} << 20, 3)).blocks, kMaxBlocks);
  EXPECT_EQ(table_choice(in(Collective::kAllGather, size_t{1} << 30)).blocks, kMaxBlocks);
  EXPECT_EQ(table_choice(in(Collective::kAllGather, size_t{16} << 20)).blocks, kMaxBlocks);
  EXPECT_EQ(table_choice(in(Collective::kAllReduce, size_t{4} << 20)).blocks, kMaxBlocks);
  EXPECT_EQ(table_choice(in(Collective::kAllReduce, (size_t{4} << 20) - 4)).blocks, 32);
  EXPECT_EQ(table_choice(in(Collective::kReduceScatter, size_t{4} << 20, 4)).blocks, 32);
  EXPECT_EQ(table_choice(in(Collective::kReduceScatter, size_t{4} << 20)).blocks, kMaxBlocks);
  EXPECT_EQ(table_choice(in(Collective::kAllToAll, size_t{4} << 20)).blocks, kMaxBlocks);
  // One-way traffic keeps 32 until 64 MiB on two ranks too.
  EXPECT_EQ(table_choice(in(Collective::kBroadcast, size_t{16} << 20)).blocks, 32);
  EXPECT_EQ(table_choice(in(Collective::kReduce, size_t{16} << 20)).blocks, 32);
  EXPECT_EQ(table_choice(in(Collective::kBroadcast, size_t{64} << 20)).blocks, kMaxBlocks);
}

TEST(Tuner, OtherCollectivesUseDirectOnNvlink) {
  for (Collective c : {Collective::kReduceScatter, Collective::kAllGather, Collective::kBroadcast,
                       Collective::kReduce, Collective::kAllToAll}) {
    EXPECT_EQ(table_choice(in(c, 16 << 20)).algo, Algorithm::kDirect);
    EXPECT_EQ(table_choice(in(c, 16 << 20)).proto, Proto::kSimple);
    EXPECT_EQ(table_choice(in(c, 4096)).proto, Proto::kLL);  // small: data with flags
  }
  // LL carries one rank block: allgather of 2 blocks of the limit still fits, broadcast of that
  // size not (without NVLink, where LL128 would take both).
  const bool p2p = true, no_nvlink = false;
  EXPECT_EQ(table_choice(in(Collective::kAllGather, 2 * kLLMaxBytes, 2, p2p, no_nvlink)).proto,
            Proto::kLL);
  EXPECT_EQ(table_choice(in(Collective::kBroadcast, 2 * kLLMaxBytes, 2, p2p, no_nvlink)).proto,
            Proto::kSimple);
  // The pipe algorithms have no LL form.
  EXPECT_EQ(table_choice(in(Collective::kAllGather, 4096, 2, false)).proto, Proto::kSimple);
}

TEST(Tuner, ForcedLLOnlyWhereTheRowsHoldTheBlock) {
  TunerConfig cfg;
  cfg.proto = Proto::kLL;
  EXPECT_EQ(choose(cfg, in(Collective::kBroadcast, 4096)).proto, Proto::kLL);
  EXPECT_EQ(choose(cfg, in(Collective::kBroadcast, 2 * kLLMaxBytes)).proto, Proto::kSimple);
  ASSERT_TRUE(parse_algo_setting("allreduce:one_shot", &cfg).ok());
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, kLLMaxBytes)).proto, Proto::kLL);
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, kLLMaxBytes + 8)).proto, Proto::kSimple);
}

TEST(Tuner, LL128TakesItsMeasuredRangeOnNvlink) {
  // Rank blocks above 128 KiB until 2 MiB cross the busiest GPU's links (4 MiB for
  // reduce_scatter, broadcast and reduce, 1 MiB for allgather and alltoall), where every pair of
  // GPUs is on NVLink.
  const size_t k128 = size_t{128} << 10, m1 = size_t{1} << 20, m2 = size_t{2} << 20;
  const size_t m4 = size_t{4} << 20;
  const Choice ar_edge = table_choice(in(Collective::kAllReduce, k128));
  EXPECT_EQ(ar_edge.proto, Proto::kLL);
  for (size_t b : {k128 + 8, kLLMaxBytes, m1, m2}) {
    const Choice ar = table_choice(in(Collective::kAllReduce, b));
    EXPECT_EQ(ar.proto, Proto::kLL128) << b;
    EXPECT_EQ(ar.algo, Algorithm::kOneShot) << b;  // the LL128 kernel is the one-shot
    EXPECT_EQ(table_choice(in(Collective::kBroadcast, b)).proto, Proto::kLL128) << b;
    EXPECT_EQ(table_choice(in(Collective::kReduceScatter, 2 * b)).proto, Proto::kLL128) << b;
  }
  EXPECT_EQ(table_choice(in(Collective::kAllReduce, m2 + 8)).algo, Algorithm::kTwoShot);
  EXPECT_EQ(table_choice(in(Collective::kReduce, m4)).proto, Proto::kLL128);
  EXPECT_EQ(table_choice(in(Collective::kReduce, m4 + 8)).proto, Proto::kSimple);
  EXPECT_EQ(table_choice(in(Collective::kBroadcast, m4)).proto, Proto::kLL128);
  EXPECT_EQ(table_choice(in(Collective::kBroadcast, m4 + 8)).proto, Proto::kSimple);
  EXPECT_EQ(table_choice(in(Collective::kReduceScatter, 2 * m4)).proto, Proto::kLL128);
  EXPECT_EQ(table_choice(in(Collective::kReduceScatter, 2 * m4 + 16)).proto, Proto::kSimple);
  EXPECT_EQ(table_choice(in(Collective::kAllGather, 2 * m1)).proto, Proto::kLL128);
  EXPECT_EQ(table_choice(in(Collective::kAllGather, 2 * m1 + 16)).proto, Proto::kSimple);
  EXPECT_EQ(table_choice(in(Collective::kAllToAll, 2 * m1 + 16)).proto, Proto::kSimple);
  // More ranks: (n - 1) blocks cross the busiest links (8 ranks of 256 KiB blocks: 1.75 MiB);
  // past that, LL while its rows hold the block.
  EXPECT_EQ(table_choice(in(Collective::kAllReduce, 256 << 10, 8)).proto, Proto::kLL128);
  EXPECT_EQ(table_choice(in(Collective::kAllReduce, 512 << 10, 8)).proto, Proto::kLL);
  EXPECT_EQ(table_choice(in(Collective::kAllGather, 8 * (128 << 10) + 64, 8)).proto, Proto::kLL128);
  EXPECT_EQ(table_choice(in(Collective::kAllGather, 8 * (256 << 10), 8)).proto, Proto::kLL);
  EXPECT_EQ(table_choice(in(Collective::kAllGather, 8 * (768 << 10), 8)).proto, Proto::kSimple);
  // One rank: no links to use it on.
  EXPECT_EQ(table_choice(in(Collective::kAllReduce, 256 << 10, 1)).proto, Proto::kLL);
  // Without NVLink between every pair a line could arrive torn: LL to its rows' capacity, then
  // two-shot.
  for (size_t b = 8; b <= (size_t{64} << 20); b *= 2)
    for (int n : {2, 3, 8})
      for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kAllToAll})
        EXPECT_NE(table_choice(in(c, b, n, true, false)).proto, Proto::kLL128) << b << " " << n;
  EXPECT_EQ(table_choice(in(Collective::kAllReduce, kLLMaxBytes, 2, true, false)).proto,
            Proto::kLL);
  EXPECT_EQ(table_choice(in(Collective::kAllReduce, kLLMaxBytes + 4, 2, true, false)).algo,
            Algorithm::kTwoShot);
}

TEST(Tuner, ForcedLL128OnlyWhereItsRowsHoldTheBlock) {
  TunerConfig cfg;
  cfg.proto = Proto::kLL128;
  const size_t cap2 = ll128_capacity(2), cap8 = ll128_capacity(8);
  EXPECT_EQ(cap2, (size_t{4608} << 10) / 128 * 120);  // a 4 MiB rank block fits
  EXPECT_GE(cap2, size_t{4} << 20);
  EXPECT_EQ(cap8, (size_t{1152} << 10) / 128 * 120);
  EXPECT_EQ(ll128_row_bytes(64), size_t{256} << 10);
  // Allreduce: the protocol of the one-shot (the table runs two-shot above 2 MiB).
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 3 << 20)).proto, Proto::kSimple);
  ASSERT_TRUE(parse_algo_setting("allreduce:one_shot", &cfg).ok());
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 1 << 20)).proto, Proto::kLL128);
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, cap2)).proto, Proto::kLL128);
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, cap2 + 1)).proto, Proto::kSimple);
  // Blocked collectives: the rank block (bytes / n) is what must fit.
  EXPECT_EQ(choose(cfg, in(Collective::kAllGather, 8 * cap8, 8)).proto, Proto::kLL128);
  EXPECT_EQ(choose(cfg, in(Collective::kAllGather, 8 * cap8 + 8, 8)).proto, Proto::kSimple);
  // Without NVLink between every pair of GPUs a line could arrive torn: never LL128.
  EXPECT_EQ(choose(cfg, in(Collective::kAllGather, 8 * cap8, 8, true, false)).proto,
            Proto::kSimple);
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 4096, 2, true, false)).proto, Proto::kSimple);
  // Pipe algorithms have no LL128.
  ASSERT_TRUE(parse_algo_setting("allreduce:ring", &cfg).ok());
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 1 << 20)).proto, Proto::kSimple);
}

// Push first: two-shot allreduce from 16 to 64 MiB (measured), alike on every rank whatever its
// buffers; no other collective, and not where GICL_ALGO forces the one-shot or the ring.
TEST(Tuner, TwoShotPushesFirstInItsMeasuredRange) {
  const size_t m = size_t{1} << 20;
  for (size_t b : {8 * m, 16 * m - 4, 16 * m, 32 * m, 64 * m, 64 * m + 4, 128 * m}) {
    const Choice c = table_choice(in(Collective::kAllReduce, b));
    EXPECT_EQ(c.algo, Algorithm::kTwoShot) << b;
    EXPECT_EQ(c.push_first, b >= 16 * m && b <= 64 * m) << b;
  }
  for (Collective k : {Collective::kReduceScatter, Collective::kAllGather, Collective::kBroadcast,
                       Collective::kReduce, Collective::kAllToAll})
    EXPECT_FALSE(table_choice(in(k, 32 * m)).push_first) << static_cast<int>(k);
  EXPECT_TRUE(table_choice(in(Collective::kAllReduce, 32 * m, 8)).push_first);
  TunerConfig cfg;
  EXPECT_TRUE(choose(cfg, in(Collective::kAllReduce, 32 * m)).push_first);
  // Forced elsewhere: the one-shot, or the ring, never pushes first.
  ASSERT_TRUE(parse_algo_setting("allreduce:one_shot", &cfg).ok());
  EXPECT_FALSE(choose(cfg, in(Collective::kAllReduce, 32 * m)).push_first);
  ASSERT_TRUE(parse_algo_setting("allreduce:ring", &cfg).ok());
  EXPECT_FALSE(choose(cfg, in(Collective::kAllReduce, 32 * m)).push_first);
  // Forced two-shot keeps the range.
  ASSERT_TRUE(parse_algo_setting("allreduce:two_shot", &cfg).ok());
  EXPECT_FALSE(choose(cfg, in(Collective::kAllReduce, 4 * m)).push_first);
  EXPECT_TRUE(choose(cfg, in(Collective::kAllReduce, 16 * m)).push_first);
}

TEST(Tuner, AlgoSettingForcesPerCollective) {
  TunerConfig cfg;
  ASSERT_TRUE(parse_algo_setting("allreduce:ring,allgather:recursive_doubling", &cfg).ok());
  Choice c = choose(cfg, in(Collective::kAllReduce, 8));
  EXPECT_EQ(c.algo, Algorithm::kRing);
  EXPECT_TRUE(c.forced);
  EXPECT_EQ(choose(cfg, in(Collective::kAllGather, 8)).algo, Algorithm::kRecursiveDoubling);
  EXPECT_EQ(choose(cfg, in(Collective::kBroadcast, 8)).algo, Algorithm::kDirect);  // not forced
}

TEST(Tuner, BareAlgorithmNameAppliesWhereItExists) {
  TunerConfig cfg;
  ASSERT_TRUE(parse_algo_setting("ring", &cfg).ok());
  EXPECT_EQ(choose(cfg, in(Collective::kBroadcast, 8)).algo, Algorithm::kRing);
  EXPECT_EQ(choose(cfg, in(Collective::kAllToAll, 8)).algo, Algorithm::kRing);
  ASSERT_TRUE(parse_algo_setting("recursive_doubling", &cfg).ok());
  EXPECT_EQ(choose(cfg, in(Collective::kAllGather, 8)).algo, Algorithm::kRecursiveDoubling);
  EXPECT_EQ(choose(cfg, in(Collective::kAllToAll, 8)).algo, Algorithm::kRing);  // has none
}

// Some rank on the network path: the pipe algorithms only. Recursive doubling for allreduce up
// to 512 KiB (and allgather beyond 2 ranks), the ring above and for every other collective; a
// forced pipe algorithm still applies, a forced load/store or copy-engine one gives way.
TEST(Tuner, NetworkPeersTakeThePipeAlgorithms) {
  const TunerConfig none;
  for (int c = 0; c < kNumCollectives; ++c)
    for (size_t b : {size_t{8}, size_t{512} << 10, (size_t{512} << 10) + 8, size_t{1} << 30})
      for (int n : {2, 4}) {
        const auto coll = static_cast<Collective>(c);
        const Choice ch = choose(none, in(coll, b, n, false));
        const bool doubling =
            b <= (size_t{512} << 10) &&
            (coll == Collective::kAllReduce || (coll == Collective::kAllGather && n > 2));
        EXPECT_EQ(ch.algo, doubling ? Algorithm::kRecursiveDoubling : Algorithm::kRing)
            << collective_name(coll) << " " << b << " bytes, " << n << " ranks";
        EXPECT_EQ(ch.proto, Proto::kSimple);
        EXPECT_TRUE(is_pipe(ch.algo));
      }
  TunerConfig cfg;
  ASSERT_TRUE(parse_algo_setting("allreduce:one_shot,allgather:recursive_doubling,"
                                 "alltoall:copy_engine,broadcast:send_recv",
                                 &cfg)
                  .ok());
  const Choice one_shot = choose(cfg, in(Collective::kAllReduce, 8, 4, false));
  EXPECT_EQ(one_shot.algo, Algorithm::kRecursiveDoubling);
  EXPECT_FALSE(one_shot.forced);
  EXPECT_EQ(choose(cfg, in(Collective::kAllGather, 8, 4, false)).algo,
            Algorithm::kRecursiveDoubling);
  EXPECT_EQ(choose(cfg, in(Collective::kAllToAll, 1 << 30, 4, false)).algo, Algorithm::kRing);
  EXPECT_EQ(choose(cfg, in(Collective::kBroadcast, 1 << 30, 2, false)).algo, Algorithm::kRing);
}

// The copy engine moves bytes only: the collectives that reduce have no such algorithm, and the
// tuner never picks it unforced (no crossover measured on two GPUs yet).
TEST(Tuner, CopyEngineOnlyForTheCollectivesThatMoveBytesAndOnlyForced) {
  TunerConfig cfg;
  ASSERT_TRUE(parse_algo_setting("copy_engine", &cfg).ok());
  for (Collective c : {Collective::kAllGather, Collective::kBroadcast, Collective::kAllToAll})
    EXPECT_EQ(choose(cfg, in(c, size_t{1} << 30)).algo, Algorithm::kCopyEngine);
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kReduce})
    EXPECT_NE(choose(cfg, in(c, size_t{1} << 30)).algo, Algorithm::kCopyEngine);
  EXPECT_EQ(parse_algo_setting("allreduce:copy_engine", &cfg).code(), GICL_INVALID_ARGUMENT);
  for (Collective c : {Collective::kAllGather, Collective::kBroadcast, Collective::kAllToAll})
    for (size_t bytes : {size_t{8}, size_t{1} << 20, size_t{1} << 30})
      EXPECT_NE(table_choice(in(c, bytes)).algo, Algorithm::kCopyEngine);
}

// Two ranks' broadcasts, allgathers and alltoalls whose send the copy-engine proxy takes run as
// send/recv; everything else keeps the table, and GICL_ALGO wins over it.
TEST(Tuner, SendRecvForTwoRanksFromTheCopyEngineSize) {
  TunerConfig cfg;
  cfg.p2p_ce_from = size_t{256} << 20;
  const size_t from = cfg.p2p_ce_from;
  EXPECT_EQ(choose(cfg, in(Collective::kBroadcast, from)).algo, Algorithm::kSendRecv);
  EXPECT_NE(choose(cfg, in(Collective::kBroadcast, from - 4)).algo, Algorithm::kSendRecv);
  // An allgather's and an alltoall's size is the whole buffer: the block for the peer is half.
  for (Collective c : {Collective::kAllGather, Collective::kAllToAll}) {
    EXPECT_EQ(choose(cfg, in(c, 2 * from)).algo, Algorithm::kSendRecv);
    EXPECT_NE(choose(cfg, in(c, 2 * from - 8)).algo, Algorithm::kSendRecv);
    EXPECT_NE(choose(cfg, in(c, size_t{1} << 32, 3)).algo, Algorithm::kSendRecv);
  }
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kReduce})
    EXPECT_NE(choose(cfg, in(c, size_t{1} << 32)).algo, Algorithm::kSendRecv);
  EXPECT_NE(choose(cfg, in(Collective::kBroadcast, size_t{1} << 32, 3)).algo, Algorithm::kSendRecv);
  EXPECT_NE(choose(cfg, in(Collective::kBroadcast, size_t{1} << 32, 2, false)).algo,
            Algorithm::kSendRecv);
  TunerInput shared = in(Collective::kBroadcast, size_t{1} << 32);
  shared.resident = 16;  // ranks sharing a GPU under MPS: the FIFO sends may not fit
  EXPECT_FALSE(send_recv_wins(cfg, shared));
  // The proxy off: no send of any size goes through it.
  cfg.p2p_ce_from = 0;
  EXPECT_NE(choose(cfg, in(Collective::kBroadcast, size_t{1} << 32)).algo, Algorithm::kSendRecv);
  // Below the rendezvous size the proxy takes nothing, whatever the setting says.
  cfg.p2p_ce_from = 1;
  EXPECT_NE(choose(cfg, in(Collective::kBroadcast, 4096)).algo, Algorithm::kSendRecv);
  EXPECT_EQ(choose(cfg, in(Collective::kBroadcast, size_t{256} << 10)).algo, Algorithm::kSendRecv);
  // Forced: GICL_ALGO's choice, and send_recv itself for any rank count.
  ASSERT_TRUE(parse_algo_setting("broadcast:direct", &cfg).ok());
  EXPECT_EQ(choose(cfg, in(Collective::kBroadcast, size_t{1} << 32)).algo, Algorithm::kDirect);
  TunerConfig forced;
  ASSERT_TRUE(parse_algo_setting("send_recv", &forced).ok());
  EXPECT_EQ(choose(forced, in(Collective::kAllGather, 64, 5)).algo, Algorithm::kSendRecv);
  EXPECT_EQ(choose(forced, in(Collective::kAllToAll, 64, 5)).algo, Algorithm::kSendRecv);
  EXPECT_NE(choose(forced, in(Collective::kAllReduce, 64, 5)).algo, Algorithm::kSendRecv);
  EXPECT_EQ(parse_algo_setting("allreduce:send_recv", &forced).code(), GICL_INVALID_ARGUMENT);
}

TEST(Tuner, BadAlgoSettingsAreRefusedNamingThem) {
  TunerConfig cfg;
  EXPECT_EQ(parse_algo_setting("allreduce:bogus", &cfg).code(), GICL_INVALID_ARGUMENT);
  EXPECT_EQ(parse_algo_setting("bogus:ring", &cfg).code(), GICL_INVALID_ARGUMENT);
  EXPECT_EQ(parse_algo_setting("alltoall:recursive_doubling", &cfg).code(), GICL_INVALID_ARGUMENT);
}

TEST(Tuner, ProtoAndChannelOverrides) {
  TunerConfig cfg;
  cfg.proto = Proto::kSimple;
  cfg.nchannels = 3;
  const Choice c = choose(cfg, in(Collective::kAllReduce, 8));
  EXPECT_EQ(c.proto, Proto::kSimple);
  EXPECT_EQ(c.blocks, 3);
}

TEST(Tuner, LLChoicesReportTheGridThatRuns) {
  TunerConfig cfg;
  // One thread per 8-byte unit of the rank block, 512 a block; GICL_NCHANNELS does not apply.
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 8)).blocks, 1);
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 4096)).blocks, 1);
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 4097)).blocks, 2);
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 256 << 10, 2, true, false)).blocks, 64);
  EXPECT_EQ(choose(cfg, in(Collective::kAllGather, 2 * 4096)).blocks, 1);  // per rank block
  cfg.nchannels = 3;
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 8)).blocks, 1);
  // LL128: a warp per 4-line group (480 data bytes), 16 warps a block, at most 96 blocks.
  cfg.proto = Proto::kLL128;
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 480 * 16)).blocks, 1);
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 480 * 16 + 8)).blocks, 2);
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 480 << 10)).blocks, 64);  // 1024 groups
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 480 * 16 * 96)).blocks, 96);
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 480 * 16 * 96 + 8)).blocks, 96);
  EXPECT_EQ(choose(cfg, in(Collective::kAllReduce, 2 << 20)).blocks, 96);
}

TEST(Tuner, OneBlockLLCallsLaunchOnlyTheWarpsTheyUse) {
  EXPECT_EQ(ll_threads(0, 1), 32);
  EXPECT_EQ(ll_threads(8, 2), 32);
  EXPECT_EQ(ll_threads(256, 2), 32);  // 32 units
  EXPECT_EQ(ll_threads(264, 2), 64);  // 33 units
  EXPECT_EQ(ll_threads(8, 40), 64);   // a thread per rank for the epoch bookkeeping
  EXPECT_EQ(ll_threads(4096, 8), kLLThreads);
  // Whenever the grid is one block: whole warps, a thread per unit and per rank, at most 512.
  for (size_t bytes = 0; bytes <= 4096; bytes += 1 + bytes / 7) {
    ASSERT_EQ(ll_blocks(bytes), 1) << bytes;
    for (int n = 1; n <= 64; ++n) {
      const int t = ll_threads(bytes, n);
      EXPECT_EQ(t % 32, 0) << bytes << " bytes, " << n << " ranks";
      EXPECT_GE(static_cast<size_t>(t), (bytes + 7) / 8) << bytes << " bytes, " << n << " ranks";
      EXPECT_GE(t, n) << bytes << " bytes";
      EXPECT_LE(t, kLLThreads);
    }
  }
}

TEST(Tuner, NvlsEnableIsRefusedWhenPeerLibrariesForbidMulticast) {
  TunerConfig cfg;
  setenv("GICL_NVLS_ENABLE", "1", 1);
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  unsetenv("NVSHMEM_DISABLE_NVLS");
  EXPECT_EQ(load_tuner_config(&cfg).code(), GICL_INVALID_USAGE);
  setenv("NCCL_NVLS_ENABLE", "1", 1);
  setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
  EXPECT_EQ(load_tuner_config(&cfg).code(), GICL_INVALID_USAGE);
  unsetenv("NVSHMEM_DISABLE_NVLS");
  unsetenv("NCCL_NVLS_ENABLE");
  ASSERT_TRUE(load_tuner_config(&cfg).ok());
  EXPECT_TRUE(cfg.nvls_real);
  unsetenv("GICL_NVLS_ENABLE");
  ASSERT_TRUE(load_tuner_config(&cfg).ok());
  EXPECT_FALSE(cfg.nvls_real);  // off by default
}

}  // namespace
}  // namespace gicl::coll
