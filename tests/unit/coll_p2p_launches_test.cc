// How a send/recv group is cut into launches (collectives/schedule/p2p.hpp: p2p_launch_of, used by
// collectives/host/group.cc). Random matched groups (every send has its receive, every rank
// interleaves its streams its own way) for 2 to 8 ranks: each send must fall in a launch of the
// same number as its receive on the partner, every stream keeps its order, no launch takes more
// than kP2pStreamOpsPerLaunch operations of a stream, and a group whose streams each fit one
// launch is never cut. A rule that cuts only where a rank's own group is too large breaks the first
// property: the check finds it.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <vector>

#include "collectives/schedule/p2p.hpp"

namespace ccl::coll {
namespace {

struct Op {
  int peer;
  int is_send;
  int index;  // place in its (peer, direction) stream
};

/// Every rank's group: `count[a][b]` sends from a to b, each matched by a receive at b, the
/// streams interleaved at random on every rank.
std::vector<std::vector<Op>> random_groups(const std::vector<std::vector<int>>& count,
                                           std::mt19937& rng) {
  const int n = static_cast<int>(count.size());
  std::vector<std::vector<Op>> groups(n);
  for (int r = 0; r < n; ++r) {
    // Streams still to place: (peer, is_send, next index, length).
    struct Stream {
      int peer, is_send, next, len;
    };
    std::vector<Stream> left;
    for (int p = 0; p < n; ++p) {
      if (count[r][p] > 0) left.push_back({p, 1, 0, count[r][p]});
      if (count[p][r] > 0) left.push_back({p, 0, 0, count[p][r]});
    }
    while (!left.empty()) {
      const size_t k = std::uniform_int_distribution<size_t>(0, left.size() - 1)(rng);
      Stream& s = left[k];
      groups[r].push_back({s.peer, s.is_send, s.next++});
      if (s.next == s.len) left.erase(left.begin() + static_cast<long>(k));
    }
  }
  return groups;
}

using LaunchOf = std::function<int(const std::vector<Op>&, int)>;

/// Whether every send's launch number equals its receive's on the partner.
bool pairs_meet(const std::vector<std::vector<Op>>& groups, const LaunchOf& launch_of) {
  const int n = static_cast<int>(groups.size());
  // launch[a][b][m]: the launch of the m-th operation from a to b, at a (sends) and at b.
  std::vector<std::vector<std::vector<int>>> sent(n, std::vector<std::vector<int>>(n)),
      received(n, std::vector<std::vector<int>>(n));
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < static_cast<int>(groups[r].size()); ++i) {
      const Op& op = groups[r][i];
      auto& list = op.is_send ? sent[r][op.peer] : received[op.peer][r];
      if (static_cast<int>(list.size()) != op.index) return false;  // stream order kept
      list.push_back(launch_of(groups[r], i));
    }
  return sent == received;
}

TEST(P2pLaunches, ASendAndItsReceiveFallInLaunchesOfOneNumber) {
  std::mt19937 rng(20261125);
  const LaunchOf rule = [](const std::vector<Op>& g, int i) { return p2p_launch_of(g.data(), i); };
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 2 + trial % 7;
    std::vector<std::vector<int>> count(n, std::vector<int>(n, 0));
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b) count[a][b] = std::uniform_int_distribution<int>(0, 3 * kMaxP2pOps / 2)(rng);
    const auto groups = random_groups(count, rng);
    ASSERT_TRUE(pairs_meet(groups, rule)) << "trial " << trial << ", " << n << " ranks";
    // No launch takes more than kP2pStreamOpsPerLaunch operations of one stream.
    for (const auto& g : groups) {
      std::vector<std::vector<int>> per(2 * n, std::vector<int>(8, 0));
      for (int i = 0; i < static_cast<int>(g.size()); ++i) {
        const int k = rule(g, i);
        ASSERT_LT(k, 8);
        ASSERT_LE(++per[2 * g[i].peer + g[i].is_send][k], kP2pStreamOpsPerLaunch);
      }
    }
  }
}

TEST(P2pLaunches, AGroupWhoseStreamsFitOneLaunchIsNotCut) {
  std::mt19937 rng(7);
  auto each_in_launch_0 = [](const std::vector<std::vector<Op>>& groups) {
    for (const auto& g : groups)
      for (int i = 0; i < static_cast<int>(g.size()); ++i)
        if (p2p_launch_of(g.data(), i) != 0) return false;
    return true;
  };
  for (int trial = 0; trial < 200; ++trial) {
    // One peer, up to kP2pStreamOpsPerLaunch each way: up to kMaxP2pOps in one launch.
    std::uniform_int_distribution<int> way(0, kP2pStreamOpsPerLaunch);
    ASSERT_TRUE(each_in_launch_0(random_groups({{0, way(rng)}, {way(rng), 0}}, rng)));
  }
  EXPECT_TRUE(each_in_launch_0(random_groups({{0, 5, 9}, {7, 0, 1}, {3, 12, 0}}, rng)));
  // One more operation in a stream than a launch takes: that one goes to the next launch.
  const auto g = random_groups({{0, kP2pStreamOpsPerLaunch + 1}, {0, 0}}, rng)[0];
  int later = 0;
  for (int i = 0; i < static_cast<int>(g.size()); ++i) later += p2p_launch_of(g.data(), i);
  EXPECT_EQ(later, 1);
}

TEST(P2pLaunches, CuttingOnlyAGroupTooLargeForOneLaunchWouldSplitPairs) {
  // The rule a rank could apply alone: its own group in slices of kMaxP2pOps. Three ranks whose
  // groups differ in size cut at different places, so some send and its receive land in launches
  // of different numbers: the check above must see it.
  std::mt19937 rng(11);
  const LaunchOf local = [](const std::vector<Op>&, int i) { return i / kMaxP2pOps; };
  bool found = false;
  for (int trial = 0; trial < 50 && !found; ++trial) {
    const auto groups = random_groups({{0, 50, 10}, {40, 0, 5}, {2, 30, 0}}, rng);
    found = !pairs_meet(groups, local);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace ccl::coll
