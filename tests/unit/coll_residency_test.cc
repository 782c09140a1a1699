// SPDX-License-Identifier: Apache-2.0
// The co-residency limit (ranks sharing a GPU at once: under MPS, or in one process) and what the
// tuner and the point-to-point launch make of it.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/common/coll_args.h"
#include "collectives/host/residency.hpp"
#include "collectives/host/tuner.hpp"
#include "collectives/schedule/p2p.hpp"

namespace gicl::coll {
namespace {

/// A rank on GPU `gpu` (its UUID's first byte) that sees `sms` multiprocessors (under MPS its
/// share: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=`percent` shows 32 of an H200's 132 at 25), in a
/// process of its own unless `process` names one.
PeerInfo rank_on(int gpu, bool mps, int sms = 132, int percent = 100, uint64_t process = 0) {
  static uint64_t next_process = 1000;
  PeerInfo p{};
  p.process = process != 0 ? process : next_process++;
  p.device = gpu;
  p.uuid[0] = static_cast<uint8_t>(gpu + 1);
  p.sm_count = sms;
  p.mps = mps;
  p.mps_percent = static_cast<uint8_t>(percent);
  return p;
}

TEST(Residency, NoLimitUnlessRanksShareAGpuUnderMps) {
  // One rank per GPU (NCCL's rule), or sharers time-sliced without MPS: each context has the
  // whole GPU in turn, so grids need not fit together.
  EXPECT_EQ(co_resident_cap({rank_on(0, true), rank_on(1, true)}, 1), 0);
  EXPECT_EQ(co_resident_cap({rank_on(0, false), rank_on(0, false)}, 1), 0);
  EXPECT_EQ(co_resident_cap({rank_on(0, true)}, 1), 0);
  PeerInfo cpu = rank_on(0, true);
  cpu.device = -1;  // a rank without a GPU shares nothing
  EXPECT_EQ(co_resident_cap({cpu, rank_on(0, true)}, 1), 0);
  // The same predicate turns programmatic dependent launch off (core/comm.cc).
  EXPECT_FALSE(ranks_share_a_gpu_at_once({rank_on(0, true), rank_on(1, true)}));
  EXPECT_FALSE(ranks_share_a_gpu_at_once({rank_on(0, false), rank_on(0, false)}));
  EXPECT_FALSE(ranks_share_a_gpu_at_once({cpu, cpu}));
  EXPECT_TRUE(ranks_share_a_gpu_at_once({rank_on(1, true), rank_on(0, true), rank_on(1, true)}));
}

TEST(Residency, RanksTakingTurnsOnAGpuAreTimeSliced) {
  // Two processes on one GPU without MPS take turns; under MPS, in one process, or on their own
  // GPUs they do not (the in-place alltoall's swap is left out only in the first case).
  EXPECT_TRUE(ranks_time_slice_a_gpu({rank_on(0, false), rank_on(0, false)}));
  EXPECT_TRUE(ranks_time_slice_a_gpu({rank_on(1, true), rank_on(0, true), rank_on(1, false)}));
  EXPECT_FALSE(ranks_time_slice_a_gpu({rank_on(0, true), rank_on(0, true)}));
  EXPECT_FALSE(ranks_time_slice_a_gpu({rank_on(0, false), rank_on(1, false)}));
  EXPECT_FALSE(ranks_time_slice_a_gpu(
      {rank_on(0, false, 132, 100, 7), rank_on(0, false, 132, 100, 7), rank_on(1, false)}));
  PeerInfo cpu = rank_on(0, false);
  cpu.device = -1;
  EXPECT_FALSE(ranks_time_slice_a_gpu({cpu, rank_on(0, false)}));
}

TEST(Residency, TheRanksTimeSlicedWithOneAreOtherProcessesOnItsGpuWithoutMps) {
  // Rank 0's GPU 0 holds rank 1 (another process, no MPS), rank 2 (rank 0's own process) and
  // rank 4 (another process under MPS, which rank 0 is not); rank 3 is on GPU 1.
  const std::vector<PeerInfo> peers{rank_on(0, false, 132, 100, 7), rank_on(0, false),
                                    rank_on(0, false, 132, 100, 7), rank_on(1, false),
                                    rank_on(0, true)};
  EXPECT_EQ(ranks_time_sliced_with(peers, 0), (std::vector<int>{1, 4}));
  EXPECT_EQ(ranks_time_sliced_with(peers, 1), (std::vector<int>{0, 2, 4}));
  EXPECT_TRUE(ranks_time_sliced_with(peers, 3).empty());
  // Under MPS on both sides the two processes run at once.
  const std::vector<PeerInfo> mps{rank_on(0, true), rank_on(0, true)};
  EXPECT_TRUE(ranks_time_sliced_with(mps, 0).empty());
  PeerInfo cpu = rank_on(0, false);
  cpu.device = -1;
  EXPECT_TRUE(ranks_time_sliced_with({cpu, rank_on(0, false)}, 0).empty());
  EXPECT_TRUE(ranks_time_sliced_with({rank_on(0, false), cpu}, 0).empty());
}

TEST(Residency, RanksOfOneProcessOnOneGpuRunAtOnce) {
  // One context: their streams run at once as under MPS (gicl_comm_init_all with a device
  // twice), so their grids must fit together; ranks of other processes are time-sliced.
  const PeerInfo a = rank_on(0, false, 132, 100, 7), b = rank_on(0, false, 132, 100, 7);
  EXPECT_TRUE(run_at_once(a, b));
  EXPECT_TRUE(ranks_share_a_gpu_at_once({a, b}));
  EXPECT_EQ(co_resident_cap({a, b}, 1), 66);
  EXPECT_EQ(co_resident_cap({a, b, rank_on(0, false)}, 1), 66);
  EXPECT_EQ(co_resident_cap(std::vector<PeerInfo>(4, a), 2), 66);
  // One process on two GPUs (the usual -g 2), or the same pid on another host: no limit.
  const PeerInfo other_gpu = rank_on(1, false, 132, 100, 7);
  EXPECT_FALSE(ranks_share_a_gpu_at_once({a, other_gpu}));
  EXPECT_EQ(co_resident_cap({a, other_gpu}, 1), 0);
  PeerInfo elsewhere = b;
  elsewhere.host_hash = 99;
  EXPECT_FALSE(run_at_once(a, elsewhere));
  // The token: one per process, another in a forked child.
  PeerInfo x{}, y{};
  ASSERT_TRUE(local_peer_info(0, -1, 0, &x).ok());
  ASSERT_TRUE(local_peer_info(1, -1, 0, &y).ok());
  EXPECT_EQ(x.process, y.process);
  EXPECT_NE(x.process, 0u);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    PeerInfo z{};
    const uint64_t token = local_peer_info(0, -1, 0, &z).ok() ? z.process : 0;
    _exit(write(fds[1], &token, sizeof(token)) == sizeof(token) ? 0 : 1);
  }
  uint64_t child = 0;
  ASSERT_EQ(read(fds[0], &child, sizeof(child)), static_cast<ssize_t>(sizeof(child)));
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  close(fds[1]);
  EXPECT_NE(child, 0u);
  EXPECT_NE(child, x.process);
}

TEST(Residency, RanksOfOneProcessOnOneGpuAreRefusedUnlessAllowed) {
  // Ranks 0, 1 and 4: process 7 on GPU 0; rank 2: process 7 on GPU 1; rank 3: another process
  // on GPU 0.
  const std::vector<PeerInfo> peers{rank_on(0, false, 132, 100, 7), rank_on(0, false, 132, 100, 7),
                                    rank_on(1, false, 132, 100, 7), rank_on(0, false),
                                    rank_on(0, false, 132, 100, 7)};
  EXPECT_TRUE(check_shared_gpu_threads(peers, 2, false).ok());  // alone on its GPU
  EXPECT_TRUE(check_shared_gpu_threads(peers, 3, false).ok());  // its own process
  EXPECT_TRUE(check_shared_gpu_threads(peers, 0, true).ok());
  const Status s = check_shared_gpu_threads(peers, 1, false);
  EXPECT_EQ(s.code(), GICL_INVALID_USAGE);
  const std::string m = last_error();
  EXPECT_NE(m.find("ranks 0,1,4 are threads of this process"), std::string::npos) << m;
  EXPECT_NE(m.find("GICL_SHARED_GPU_THREADS=1"), std::string::npos) << m;
}

TEST(Residency, RanksOfOneProcessOnOneGpuNeedAWorkQueueEach) {
  // Three ranks of process 7 on GPU 0, one of process 7 on GPU 1, one of another process on 0.
  const std::vector<PeerInfo> peers{rank_on(0, false, 132, 100, 7), rank_on(0, false, 132, 100, 7),
                                    rank_on(1, false, 132, 100, 7), rank_on(0, false),
                                    rank_on(0, false, 132, 100, 7)};
  EXPECT_EQ(ranks_of_process_on_gpu(peers, 0), 3);
  EXPECT_EQ(ranks_of_process_on_gpu(peers, 2), 1);
  EXPECT_EQ(ranks_of_process_on_gpu(peers, 3), 1);
  EXPECT_TRUE(check_work_queues(peers, 0, 3).ok());
  EXPECT_TRUE(check_work_queues(peers, 3, 1).ok());  // alone in its process on that GPU
  const Status s = check_work_queues(peers, 4, 2);
  EXPECT_EQ(s.code(), GICL_INVALID_USAGE);
  const std::string m = last_error();
  EXPECT_NE(m.find("3 ranks of this process"), std::string::npos) << m;
  EXPECT_NE(m.find("CUDA_DEVICE_MAX_CONNECTIONS=3"), std::string::npos) << m;
  // CUDA's defaults (8; 2 for an MPS client), or the variable when it names 1..32.
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  EXPECT_EQ(cuda_work_queues(false), 8);
  EXPECT_EQ(cuda_work_queues(true), 2);
  const struct {
    const char* env;
    int want;
  } cases[] = {{"4", 4}, {"1", 1}, {"64", 32}, {"0", 8}, {"x", 8}, {"", 8}};
  for (const auto& c : cases) {
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", c.env, 1);
    EXPECT_EQ(cuda_work_queues(false), c.want) << c.env;
  }
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
}

TEST(Residency, TheStagedNetworkPathNeedsAQueueForTheCopierAndTheAgent) {
  // Rank 0 alone in its process (an MPS client: 2 queues by default); ranks 1 and 2 two
  // threads of process 9 on GPU 0.
  const std::vector<PeerInfo> peers{rank_on(0, true), rank_on(0, true, 132, 100, 9),
                                    rank_on(0, true, 132, 100, 9)};
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "2", 1);
  struct Case {
    int me, queues;
    bool agent;
    bool ok, agent_after;
  } cases[] = {
      {0, 3, true, true, true},    // own stream, the copier's, the agent's
      {0, 8, true, true, true},    //
      {0, 2, true, true, false},   // the agent goes, said why
      {0, 2, false, true, false},  // already off: nothing to say
      {0, 1, true, false, false},  // not even the copier's
      {1, 6, true, true, true},    // two ranks: 2 x 3
      {1, 5, true, true, false},   //
      {1, 4, true, true, false},   //
      {1, 3, true, false, false},  // 2 x 2 do not fit
  };
  for (const Case& c : cases) {
    bool agent = c.agent;
    std::string why = "stale";
    const Status s = check_net_queues(peers, c.me, c.queues, &agent, &why);
    const std::string at = "rank " + std::to_string(c.me) + ", " + std::to_string(c.queues) +
                           " queues, agent " + std::to_string(c.agent);
    EXPECT_EQ(s.ok(), c.ok) << at;
    if (!c.ok) {
      EXPECT_EQ(s.code(), GICL_INVALID_USAGE) << at;
      const std::string m = last_error();
      const int k = c.me == 0 ? 1 : 2;
      const std::string want = "CUDA_DEVICE_MAX_CONNECTIONS=" + std::to_string(2 * k) + " (" +
                               std::to_string(3 * k) + " with the copy agent)";
      EXPECT_NE(m.find(want), std::string::npos) << at << ": " << m;
      continue;
    }
    EXPECT_EQ(agent, c.agent_after) << at;
    if (c.agent && !agent) {
      const std::string want = "CUDA_DEVICE_MAX_CONNECTIONS=" + std::to_string(c.me == 0 ? 3 : 6);
      EXPECT_NE(why.find(want), std::string::npos) << at << ": " << why;
      EXPECT_NE(why.find("no copy agent"), std::string::npos) << at << ": " << why;
    } else {
      EXPECT_TRUE(why.empty()) << at << ": " << why;
    }
  }
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
}

TEST(Residency, SharersSplitTheMultiprocessors) {
  // Two ranks on one H200 (132 SMs) at one block per SM: 66 each (the alltoall that stalled
  // had 64 + 16 blocks per rank); two per SM: 132.
  EXPECT_EQ(co_resident_cap({rank_on(0, true), rank_on(0, true)}, 1), 66);
  EXPECT_EQ(co_resident_cap({rank_on(0, true), rank_on(0, true)}, 2), 132);
  // 8 ranks on 2 GPUs, 4 each: 33. 3 ranks on 2 GPUs (2 + 1): the shared GPU sets it for all,
  // so every rank launches the same grid.
  std::vector<PeerInfo> eight;
  for (int r = 0; r < 8; ++r) eight.push_back(rank_on(r % 2, true));
  EXPECT_EQ(co_resident_cap(eight, 1), 33);
  EXPECT_EQ(co_resident_cap({rank_on(0, true), rank_on(1, true), rank_on(0, true)}, 1), 66);
  // A smaller GPU shared by more ranks decides.
  EXPECT_EQ(co_resident_cap({rank_on(0, true, 132), rank_on(0, true, 132), rank_on(1, true, 78),
                             rank_on(1, true, 78), rank_on(1, true, 78)},
                            1),
            26);
}

TEST(Residency, AnMpsShareBelowTheSplitDecides) {
  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25 on an H200: each client sees 32 SMs (measured), the GPU
  // has at least 32 x 100 / 25 = 128. Two clients: 32 each (their share, not 128 / 2), twice
  // that at two blocks per SM; the share is not taken off the visible count a second time.
  EXPECT_EQ(co_resident_cap({rank_on(0, true, 32, 25), rank_on(0, true, 32, 25)}, 1), 32);
  EXPECT_EQ(co_resident_cap({rank_on(0, true, 32, 25), rank_on(0, true, 32, 25)}, 2), 64);
  // Eight clients at 25 %: 128 / 8 = 16 each, below their share.
  EXPECT_EQ(co_resident_cap(std::vector<PeerInfo>(8, rank_on(0, true, 32, 25)), 1), 16);
  // 50 % each (66 of 132): 66 for two ranks, 33 for four.
  EXPECT_EQ(co_resident_cap({rank_on(0, true, 66, 50), rank_on(0, true, 66, 50)}, 1), 66);
  EXPECT_EQ(co_resident_cap(std::vector<PeerInfo>(4, rank_on(0, true, 66, 50)), 1), 33);
  // One rank limited, one not: the GPU is the unlimited rank's 132; the limited rank's share
  // caps every launch (grids are equal on every rank).
  EXPECT_EQ(co_resident_cap({rank_on(0, true, 132), rank_on(0, true, 32, 25)}, 1), 32);
  // A percentage that is not whole rounds up (12.5 -> 13; an H200 shows 16 SMs), keeping the
  // GPU estimate low: 20 ranks at 22 / 17 % (measured) count the GPU as 130, 6 blocks each,
  // held at 16.
  EXPECT_EQ(co_resident_cap({rank_on(0, true, 22, 17), rank_on(0, true, 22, 17)}, 1), 22);
  EXPECT_EQ(co_resident_cap(std::vector<PeerInfo>(6, rank_on(0, true, 22, 17)), 1), 21);
  // At MPS's floor (1 %: 8 SMs of 132, not 1.3) the share says nothing of the GPU: 8 x 100 / 1
  // would count 800 multiprocessors and let 20 ranks at 4 blocks per SM launch 32 blocks each
  // (640 > 528); counted as 8, they get 8 x 4 / 20 = 1 each.
  EXPECT_EQ(co_resident_cap(std::vector<PeerInfo>(20, rank_on(0, true, 8, 1)), 4), 1);
  // Beside an unlimited rank the GPU is its 132; the 1 % rank's share caps the launch at 8.
  EXPECT_EQ(co_resident_cap({rank_on(0, true, 132), rank_on(0, true, 8, 1)}, 1), 8);
  EXPECT_EQ(co_resident_cap({rank_on(0, true, 16, 13), rank_on(0, true, 16, 13)}, 2), 16);
  // A daemon-wide percentage no client sees (50 %: every rank shows 66, its own percentage
  // unset): the GPU counts as 66, so two ranks get 33, fewer than fit, never more.
  EXPECT_EQ(co_resident_cap({rank_on(0, true, 66), rank_on(0, true, 66)}, 1), 33);
}

TEST(Residency, TheMpsPercentageTravelsRoundedUp) {
  // Rounded up, share x 100 / percent stays a lower bound of the GPU's multiprocessors.
  const struct {
    const char* env;
    int want;
  } cases[] = {{"25", 25},   {"12.5", 13}, {"0.2", 1}, {"100", 100},
               {"150", 100}, {"", 100},    {"x", 100}, {"-5", 100}};
  for (const auto& c : cases) {
    setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", c.env, 1);
    PeerInfo p{};
    ASSERT_TRUE(local_peer_info(0, -1, 0, &p).ok());
    EXPECT_EQ(p.mps_percent, c.want) << c.env;
  }
  unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  PeerInfo p{};
  ASSERT_TRUE(local_peer_info(0, -1, 0, &p).ok());
  EXPECT_EQ(p.mps_percent, 100);
}

TEST(Residency, BeyondEightRanksPerGpuCollectivesKeepToFewerBlocks) {
  // 16 ranks on one H200: 8 blocks each (128 of 132 SMs). Collectives run within them; the 16
  // FIFO channels of a point-to-point launch do not fit, so such groups are refused
  // (collectives/host/group.cc). 8 ranks still fit (16 each).
  std::vector<PeerInfo> many(16, rank_on(0, true));
  EXPECT_EQ(co_resident_cap(many, 1), 8);
  EXPECT_FALSE(fifo_channels_fit(8));
  EXPECT_EQ(co_resident_cap(std::vector<PeerInfo>(8, rank_on(0, true)), 1), kPipeChannels);
  EXPECT_TRUE(fifo_channels_fit(kPipeChannels));
  EXPECT_TRUE(fifo_channels_fit(0));  // no limit
  // Never 0 (0 means no limit): 200 ranks on one GPU get a block each.
  EXPECT_EQ(co_resident_cap(std::vector<PeerInfo>(200, rank_on(0, true)), 1), 1);
}

TEST(Residency, SettingOverridesAndRefusesTooFewBlocks) {
  const std::vector<PeerInfo> alone{rank_on(0, true), rank_on(1, true)};
  int out = -7;
  setenv("GICL_RESIDENT_BLOCKS", "40", 1);
  ASSERT_TRUE(resident_blocks(alone, &out).ok());
  EXPECT_EQ(out, 40);
  setenv("GICL_RESIDENT_BLOCKS", "0", 1);
  ASSERT_TRUE(resident_blocks({rank_on(0, true), rank_on(0, true)}, &out).ok());
  EXPECT_EQ(out, 0);
  setenv("GICL_RESIDENT_BLOCKS", "8", 1);
  const Status s = resident_blocks(alone, &out);
  EXPECT_EQ(s.code(), GICL_INVALID_ARGUMENT);
  const std::string m = last_error();
  EXPECT_NE(m.find("GICL_RESIDENT_BLOCKS=8"), std::string::npos) << m;
  unsetenv("GICL_RESIDENT_BLOCKS");
  // Automatic, nothing shared: no limit and no device query (this machine may have no GPU).
  ASSERT_TRUE(resident_blocks(alone, &out).ok());
  EXPECT_EQ(out, 0);
}

TunerInput limited(Collective c, size_t bytes, int resident, int n = 2) {
  return {c, bytes, n, true, true, resident};
}

TEST(Residency, TunerKeepsEveryGridWithinTheLimit) {
  const TunerConfig cfg;
  for (int limit : {8, 16, 33, 66})
    for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kAllToAll,
                         Collective::kBroadcast, Collective::kReduceScatter, Collective::kReduce})
      for (size_t b = 8; b <= (size_t{1} << 30); b *= 4) {
        const Choice ch = choose(cfg, limited(c, b, limit));
        EXPECT_LE(ch.blocks, limit) << b << " " << limit;
      }
  // The LL one-shot of 512 KiB needs 128 blocks (a thread per 8 bytes): with 66 it is SIMPLE;
  // 256 KiB needs 64 and stays LL. Without a limit the table is unchanged.
  EXPECT_EQ(choose(cfg, limited(Collective::kAllReduce, 128 << 10, 66)).proto, Proto::kLL);
  const TunerConfig ll = [] {
    TunerConfig c;
    c.proto = Proto::kLL;
    return c;
  }();
  EXPECT_EQ(choose(ll, limited(Collective::kAllReduce, 256 << 10, 66)).proto, Proto::kLL);
  EXPECT_EQ(choose(ll, limited(Collective::kAllReduce, 512 << 10, 66)).proto, Proto::kSimple);
  EXPECT_EQ(choose(ll, limited(Collective::kAllReduce, 512 << 10, 0)).proto, Proto::kLL);
  EXPECT_EQ(choose(ll, limited(Collective::kAllReduce, 512 << 10, 0)).blocks, 128);
  // LL128 of 480 KiB: 64 blocks, too many for 33.
  TunerConfig ll128;
  ll128.proto = Proto::kLL128;
  EXPECT_EQ(choose(ll128, limited(Collective::kAllReduce, 480 << 10, 66)).proto, Proto::kLL128);
  EXPECT_EQ(choose(ll128, limited(Collective::kAllReduce, 480 << 10, 33)).proto, Proto::kSimple);
  // GICL_NCHANNELS above the limit is held to it; the 1 GiB alltoall's 64 to 33.
  TunerConfig many;
  many.nchannels = 64;
  EXPECT_EQ(choose(many, limited(Collective::kAllToAll, 64 << 20, 33)).blocks, 33);
  EXPECT_EQ(choose(cfg, limited(Collective::kAllToAll, size_t{1} << 30, 33)).blocks, 33);
  EXPECT_EQ(choose(cfg, limited(Collective::kAllToAll, size_t{1} << 30, 0)).blocks, kMaxBlocks);
}

struct Op {
  size_t bytes;
  int net = 0;  // the peer is on the network path: never LL
};

TEST(Residency, PointToPointLLBlocksShareWhatTheLimitLeaves) {
  const size_t cap = 64 << 10;
  const std::vector<Op> ops{{cap}, {cap}};  // two LL operations of 16 blocks each
  EXPECT_EQ(p2p_ll_grid(ops.data(), 2, 512, cap), 2 * 16);
  // A budget of 10 leaves 5 each; each block index still maps to one operation's part.
  EXPECT_EQ(p2p_ll_grid(ops.data(), 2, 512, cap, 10), 10);
  int part = -1, parts = -1;
  EXPECT_EQ(p2p_ll_op(ops.data(), 2, 7, 512, cap, &part, &parts, 10), 1);
  EXPECT_EQ(part, 2);
  EXPECT_EQ(parts, 5);
  EXPECT_EQ(p2p_ll_op(ops.data(), 2, 10, 512, cap, &part, &parts, 10), -1);
  // A budget below the operation count still gives each one block, where there is no limit
  // (ranks with a GPU each); under a limit of ranks sharing a GPU, the blocks run them in turn.
  EXPECT_EQ(p2p_ll_grid(ops.data(), 2, 512, cap, 1), 2);
  EXPECT_FALSE(p2p_ll_looped(2, 0));
  EXPECT_TRUE(p2p_ll_looped(2, 1));
  EXPECT_EQ(p2p_ll_grid(ops.data(), 2, 512, cap, 1, 1), 1);
  EXPECT_EQ(p2p_ll_grid(ops.data(), 2, 512, cap, 10, 10), 10);  // within it: parts as before
}

}  // namespace
}  // namespace gicl::coll
