// SPDX-License-Identifier: Apache-2.0
// How a send/recv group is cut into batches and packed into launches (collectives/schedule/p2p.hpp:
// p2p_batch_of; p2p_plan.hpp: p2p_plan, used by collectives/host/group.cc), on random matched
// groups (every send has its receive, every rank interleaves its streams its own way) from 1 to 72
// ranks. The rules: a send and its receive share a batch; no batch or launch holds more than
// kMaxP2pOps operations; launches take consecutive batches and keep every stream's order. Then a
// model of the kernel's waits (p2p_kernel: offers posted at launch start; per batch, offers read,
// zero-copy writes and FIFO rounds with kPipeSlots per pair; zero-copy waits at the end) runs
// every rank's launches and checks that no group deadlocks, however differently the ranks pack,
// with each FIFO channel on one block or on a sending and a receiving block (fifo_split), or a
// mix of ranks of both; and that the model does find the deadlocks of a launch run as one batch
// (its later batches' rounds and offers taken early) and of the rule a rank could apply alone.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "collectives/schedule/p2p_plan.hpp"

namespace gicl::coll {
namespace {

struct Op {
  int peer;
  int is_send;
  int index;      // place in its (peer, direction) stream
  size_t bytes;   // >= kP2pRendezvousFrom: rendezvous
  size_t msgs;    // FIFO messages on the modelled channel (0: none there)
  bool window;    // a rendezvous receive whose buffer the sender writes into (no FIFO messages)
  int batch = 0;  // its batch's place in its launch, as the kernel reads it
};

/// Every rank's group: `count[a][b]` sends from a to b, each matched by a receive at b with the
/// same size, the streams interleaved at random on every rank. A quarter of the operations are
/// rendezvous-sized when `rendezvous`; the rest carry 0 to 6 messages on the modelled channel.
std::vector<std::vector<Op>> random_groups(const std::vector<std::vector<int>>& count,
                                           std::mt19937& rng, bool rendezvous = false) {
  const int n = static_cast<int>(count.size());
  // The (a, b) pair's operations, as both ends see them.
  std::map<std::pair<int, int>, std::vector<Op>> pair;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      for (int i = 0; i < count[a][b]; ++i) {
        const bool rv = rendezvous && rng() % 4 == 0;
        const bool window = rv && rng() % 2 == 0;
        const size_t msgs = window ? 0 : rng() % 7;
        pair[{a, b}].push_back({b, 1, i, rv ? kP2pRendezvousFrom : 64, msgs, window});
      }
  std::vector<std::vector<Op>> groups(n);
  for (int r = 0; r < n; ++r) {
    std::vector<std::pair<std::vector<Op>, size_t>> left;  // streams and their next operation
    for (int p = 0; p < n; ++p) {
      if (count[r][p] > 0) left.push_back({pair[{r, p}], 0});
      if (count[p][r] > 0) {
        std::vector<Op> recv = pair[{p, r}];
        for (Op& o : recv) o.peer = p, o.is_send = 0;
        left.push_back({recv, 0});
      }
    }
    while (!left.empty()) {
      const size_t k = std::uniform_int_distribution<size_t>(0, left.size() - 1)(rng);
      groups[r].push_back(left[k].first[left[k].second++]);
      if (left[k].second == left[k].first.size()) left.erase(left.begin() + static_cast<long>(k));
    }
  }
  return groups;
}

std::vector<std::vector<int>> random_counts(int n, int most, std::mt19937& rng) {
  std::vector<std::vector<int>> count(n, std::vector<int>(n, 0));
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) count[a][b] = std::uniform_int_distribution<int>(0, most)(rng);
  return count;
}

/// A rank's launches: the operations of each, in launch order, with Op::batch set.
using Launches = std::vector<std::vector<Op>>;

Launches launches_of(const std::vector<Op>& g, const P2pPlan& plan) {
  Launches out;
  for (const std::vector<int>& members : plan.launches) {
    out.emplace_back();
    for (int i : members) {
      out.back().push_back(g[i]);
      out.back().back().batch = plan.place[i];
    }
  }
  return out;
}

// ---- The model of the kernel's waits. ----

enum class Kind { kOffer, kReadOffer, kWrite, kAwait, kSend, kRecv, kEnd };
struct Event {
  Kind kind;
  int peer;
};

/// Which of a channel's jobs a modelled block does: all (one block a channel) or, split, the
/// sends (block 0, which also posts the offers and awaits the zero-copy bytes) or the receives.
enum class Side { kBoth, kSends, kRecvs };

/// One launch as a block of the kernel runs it (block 0: `side` kBoth, or kSends when split):
/// offers for all its rendezvous receives (block 0); then batch by batch (Op::batch), its
/// rendezvous sends' offers read (and the zero-copy writes where the receiver offered a window:
/// every block writes a share) and its FIFO rounds (p2p_stream_offset over the batch; sends before
/// receives in a round; a split block only its side's); last, the wait for every zero-copy
/// receive's bytes (block 0), and the launch's end, which every block of the rank reaches before
/// any starts its next launch. `batches`: false runs the launch as one batch, as the kernel did
/// before launches held several (every offer read at the start, every stream's rounds from
/// round 0).
std::vector<Event> events_of(const std::vector<Op>& l, bool batches = true,
                             Side side = Side::kBoth) {
  std::vector<Event> ev;
  const bool sends = side != Side::kRecvs, recvs = side != Side::kSends;
  for (const Op& o : l)
    if (sends && !o.is_send && p2p_rendezvous(o.bytes)) ev.push_back({Kind::kOffer, o.peer});
  for (size_t b0 = 0, b1 = 0; b0 < l.size(); b0 = b1) {
    for (b1 = b0 + 1; b1 < l.size() && (!batches || l[b1].batch == l[b0].batch);) ++b1;
    for (size_t i = b0; i < b1; ++i)
      if (l[i].is_send && p2p_rendezvous(l[i].bytes)) {
        ev.push_back({Kind::kReadOffer, l[i].peer});
        if (l[i].window) ev.push_back({Kind::kWrite, l[i].peer});
      }
    const int n = static_cast<int>(b1 - b0);
    std::vector<size_t> msgs(n), first(n);
    for (int i = 0; i < n; ++i) msgs[i] = l[b0 + i].window ? 0 : l[b0 + i].msgs;
    size_t rounds = 0;
    for (int i = 0; i < n; ++i) {
      first[i] = p2p_stream_offset(l.data() + b0, msgs.data(), i);
      rounds = std::max(rounds, first[i] + msgs[i]);
    }
    for (size_t k = 0; k < rounds; ++k)
      for (int pass = 0; pass < 2; ++pass) {
        if (!(pass == 0 ? sends : recvs)) continue;
        for (int i = 0; i < n; ++i) {
          const Op& o = l[b0 + i];
          if ((o.is_send != 0) == (pass == 0) && k >= first[i] && k < first[i] + msgs[i])
            ev.push_back({o.is_send ? Kind::kSend : Kind::kRecv, o.peer});
        }
      }
  }
  for (const Op& o : l)
    if (sends && !o.is_send && o.window) ev.push_back({Kind::kAwait, o.peer});
  ev.push_back({Kind::kEnd, -1});
  return ev;
}

/// One modelled block of one rank: its events over all the rank's launches.
struct Agent {
  int rank;
  std::vector<Event> ev;
};

/// Runs every block's events in order; false (and where) when some block waits forever.
/// `writers[r]`: rank r's blocks that write a share of each zero-copy send (its receiver awaits
/// them all).
bool run(const std::vector<Agent>& agents, const std::vector<int>& writers, std::string* why) {
  const size_t na = agents.size();
  std::vector<size_t> pc(na, 0);
  // Per (from, to): FIFO messages sent and consumed, offers posted (from: the receiver),
  // zero-copy shares written and operations awaited; per (block, peer): offers read (every block
  // reads every offer); per block: launch ends reached.
  std::map<std::pair<int, int>, long> sent, consumed, posted, written, awaited;
  std::map<std::pair<size_t, int>, long> read;
  std::vector<long> ends(na, 0);
  std::vector<bool> at_end(na, false);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t a = 0; a < na; ++a)
      for (; pc[a] < agents[a].ev.size(); ++pc[a], progress = true) {
        const int r = agents[a].rank;
        const Event& e = agents[a].ev[pc[a]];
        const std::pair<int, int> out{r, e.peer}, in{e.peer, r};
        if (e.kind == Kind::kSend) {
          if (sent[out] - consumed[out] >= kPipeSlots) break;
          ++sent[out];
        } else if (e.kind == Kind::kRecv) {
          if (sent[in] <= consumed[in]) break;
          ++consumed[in];
        } else if (e.kind == Kind::kOffer) {
          ++posted[out];
        } else if (e.kind == Kind::kReadOffer) {
          if (posted[in] <= read[{a, e.peer}]) break;
          ++read[{a, e.peer}];
        } else if (e.kind == Kind::kWrite) {
          ++written[out];
        } else if (e.kind == Kind::kAwait) {
          if (written[in] < (awaited[in] + 1) * writers[e.peer]) break;
          ++awaited[in];
        } else {
          // The launch ends when every block of the rank has reached its end.
          if (!at_end[a]) at_end[a] = true, ++ends[a];
          bool all = true;
          for (size_t b = 0; b < na; ++b) all &= agents[b].rank != r || ends[b] >= ends[a];
          if (!all) break;
          at_end[a] = false;
        }
      }
  }
  for (size_t a = 0; a < na; ++a)
    if (pc[a] < agents[a].ev.size()) {
      *why = "rank " + std::to_string(agents[a].rank) + " stuck at event " + std::to_string(pc[a]) +
             " of " + std::to_string(agents[a].ev.size());
      return false;
    }
  // Every message taken, every share awaited: no block moved more than its operations hold.
  for (const auto& [pair, m] : sent)
    if (consumed[pair] != m) {
      *why = "messages from " + std::to_string(pair.first) + " to " + std::to_string(pair.second) +
             " left unread";
      return false;
    }
  for (const auto& [pair, w] : written)
    if (w != awaited[pair] * writers[pair.first]) {
      *why = "zero-copy shares from " + std::to_string(pair.first) + " not awaited";
      return false;
    }
  return true;
}

/// Every rank's blocks: one, or (`split[r]`) a sending and a receiving one.
std::vector<Agent> plans_of(const std::vector<Launches>& ranks, bool batches = true,
                            const std::vector<bool>& split = {}) {
  std::vector<Agent> agents;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const bool two = r < split.size() && split[r];
    for (Side side :
         two ? std::vector<Side>{Side::kSends, Side::kRecvs} : std::vector<Side>{Side::kBoth}) {
      agents.push_back({static_cast<int>(r), {}});
      for (const std::vector<Op>& l : ranks[r]) {
        const std::vector<Event> ev = events_of(l, batches, side);
        agents.back().ev.insert(agents.back().ev.end(), ev.begin(), ev.end());
      }
    }
  }
  return agents;
}

/// Runs the ranks' launches with one block a channel, or with `split` ranks' two.
bool run(const std::vector<Launches>& ranks, std::string* why, bool batches = true,
         const std::vector<bool>& split = {}) {
  std::vector<int> writers(ranks.size(), 1);
  for (size_t r = 0; r < split.size(); ++r) writers[r] = split[r] ? 2 : 1;
  return run(plans_of(ranks, batches, split), writers, why);
}

/// Checks the plan's rules on one rank's group; returns the first broken one, or "".
std::string broken_rule(const std::vector<Op>& g, const P2pPlan& plan, int most) {
  std::map<int, int> batch_size;
  for (int b : plan.batch) ++batch_size[b];
  for (const auto& [b, size] : batch_size)
    if (size > kMaxP2pOps) return "batch " + std::to_string(b) + " holds " + std::to_string(size);
  std::vector<int> seen(g.size(), 0);
  std::map<std::pair<int, int>, int> next;  // (peer, is_send) -> next stream index due
  int last_batch = -1;
  for (const std::vector<int>& l : plan.launches) {
    if (l.empty() || static_cast<int>(l.size()) > most)
      return "a launch of " + std::to_string(l.size());
    for (size_t k = 0; k < l.size(); ++k) {
      const int i = l[k];
      if (seen[i]++) return "an operation twice";
      if (plan.batch[i] < last_batch) return "batches out of order";
      const bool new_batch = k == 0 || plan.batch[i] != plan.batch[l[k - 1]];
      if (k > 0 && plan.place[i] != plan.place[l[k - 1]] + (new_batch ? 1 : 0))
        return "places not consecutive";
      if (k == 0 && plan.place[i] != 0) return "a launch's first batch not at place 0";
      last_batch = plan.batch[i];
      if (next[{g[i].peer, g[i].is_send}]++ != g[i].index) return "a stream out of order";
    }
  }
  for (int s : seen)
    if (s != 1) return "an operation left out";
  return "";
}

TEST(P2pLaunches, ASendAndItsReceiveShareABatch) {
  std::mt19937 rng(20261125);
  const int sizes[] = {1, 2, 3, 4, 5, 8, 16, 31, 32, 33, 40, 72};
  for (int trial = 0; trial < 240; ++trial) {
    const int n = sizes[trial % 12];
    const int per = n > 16 ? 3 : 3 * kMaxP2pOps / 2;
    const auto groups = random_groups(random_counts(n, per, rng), rng, trial % 2 == 1);
    // batch[a][b][m]: the batch of the m-th operation from a to b, at a (sends) and at b.
    std::vector<std::vector<std::vector<int>>> sent(n, std::vector<std::vector<int>>(n)),
        received = sent;
    for (int r = 0; r < n; ++r) {
      const P2pPlan plan = p2p_plan(groups[r], n, r);
      for (int i = 0; i < static_cast<int>(groups[r].size()); ++i)
        ASSERT_EQ(plan.batch[i], p2p_batch_of(groups[r].data(), i, n, r));  // one pass, the same
      const std::string broken = broken_rule(groups[r], plan, kMaxP2pOps);
      ASSERT_EQ(broken, "") << "trial " << trial << ", rank " << r << " of " << n;
      for (size_t i = 0; i < groups[r].size(); ++i) {
        const Op& op = groups[r][i];
        (op.is_send ? sent[r][op.peer] : received[op.peer][r]).push_back(plan.batch[i]);
      }
    }
    ASSERT_EQ(sent, received) << "trial " << trial << ", " << n << " ranks";
  }
}

TEST(P2pLaunches, SmallGroupsAreOneLaunchAndLargeOnesFewLaunches) {
  std::mt19937 rng(7);
  auto launches = [](const std::vector<Op>& g, int n, int r) {
    return p2p_plan(g, n, r).launches.size();
  };
  for (int trial = 0; trial < 300; ++trial) {
    // Up to kMaxP2pOps operations with one to seven peers, none rendezvous-sized: one launch.
    const int n = 2 + trial % 7;
    std::vector<std::vector<int>> count(n, std::vector<int>(n, 0));
    for (int b = 1; b < n; ++b) {
      count[0][b] = std::uniform_int_distribution<int>(0, kMaxP2pOps / 2 / (n - 1))(rng);
      count[b][0] = std::uniform_int_distribution<int>(0, kMaxP2pOps / 2 / (n - 1))(rng);
    }
    const auto g = random_groups(count, rng)[0];
    ASSERT_LE(launches(g, n, 0), 1u) << g.size() << " operations, " << n << " ranks";
    // The host's shortcut: a group whose streams each fit a batch is one batch.
    bool fits = true;
    for (int b = 1; b < n; ++b)
      fits &= count[0][b] <= p2p_batch_ops(n) && count[b][0] <= p2p_batch_ops(n);
    ASSERT_EQ(p2p_one_batch(p2p_batches(g, n, 0)), fits) << n << " ranks";
  }
  // More sends to one peer than a batch takes of a stream: several batches, still one launch.
  std::vector<std::vector<int>> one_way = {{0, kMaxP2pOps - 1}, {0, 0}};
  const auto g = random_groups(one_way, rng)[0];
  const P2pPlan plan = p2p_plan(g, 2, 0);
  EXPECT_EQ(plan.launches.size(), 1u);
  EXPECT_GT(plan.place[plan.launches[0].back()], 0);
  // One send and one receive with each of 71 peers: 142 operations, 3 launches (the fewest).
  std::vector<std::vector<int>> all(72, std::vector<int>(72, 1));
  for (int r = 0; r < 72; ++r) all[r][r] = 0;
  const auto groups = random_groups(all, rng);
  for (int r : {0, 17, 71}) EXPECT_EQ(launches(groups[r], 72, r), 3u) << "rank " << r;
  // Rendezvous-sized operations pack like any others: three batches of them, one launch.
  std::vector<Op> big;
  for (int i = 0; i < 3 * p2p_batch_ops(2); ++i) big.push_back({1, 1, i, kP2pRendezvousFrom, 0, 0});
  EXPECT_EQ(p2p_plan(big, 2, 0).launches.size(), 1u);
}

TEST(P2pLaunches, EveryGroupCompletesHoweverRanksPack) {
  // Ranks pack their batches into launches of different sizes (`most` per rank, the real
  // kMaxP2pOps or more), so a send and its receive often run in launches of different numbers.
  std::mt19937 rng(99);
  const int sizes[] = {2, 3, 4, 5, 8, 12, 33};
  const int most[] = {kMaxP2pOps, 2 * kMaxP2pOps, 1 << 20};
  int runs = 0;
  for (int trial = 0; trial < 700; ++trial) {
    const int n = sizes[trial % 7];
    const int per = n > 12 ? 2 : std::uniform_int_distribution<int>(1, 2 * kMaxP2pOps / n)(rng);
    const auto groups = random_groups(random_counts(n, per, rng), rng, trial % 3 != 0);
    std::vector<Launches> ranks;
    for (int r = 0; r < n; ++r)
      ranks.push_back(launches_of(groups[r], p2p_plan(groups[r], n, r, most[rng() % 3])));
    std::string why;
    ASSERT_TRUE(run(ranks, &why)) << "trial " << trial << ", " << n << " ranks: " << why;
    // Every rank's channels on a sending and a receiving block (no block limit), and a mix (ranks
    // sharing a GPU keep one block a channel).
    std::vector<bool> split(n, true), mixed(n);
    for (int r = 0; r < n; ++r) mixed[r] = rng() % 2 == 0;
    ASSERT_TRUE(run(ranks, &why, true, split)) << "split, trial " << trial << ": " << why;
    ASSERT_TRUE(run(ranks, &why, true, mixed)) << "mixed, trial " << trial << ": " << why;
    ++runs;
  }
  EXPECT_EQ(runs, 700);
}

/// Two ranks: rank 0 receives many messages from rank 1 in batch 0 and sends many to it in batch
/// 1; rank 1 mirrors it. Rank 0 packs both batches into one launch, rank 1 (`most` 32, as if its
/// group held other peers) into two.
std::vector<std::vector<Op>> lopsided_pair(size_t last_bytes) {
  const int q = p2p_batch_ops(2);
  std::vector<std::vector<Op>> g(2);
  for (int r = 0; r < 2; ++r) {
    const int p = 1 - r;
    for (int i = 0; i < q; ++i) {
      g[r].push_back({p, r == 1, i, 64, 3, false});  // rank 1 sends 3 messages each to rank 0
      g[r].push_back({p, r == 0, i, 64, 0, false});
    }
    for (int i = q; i < q + 4; ++i)
      g[r].push_back({p, r == 0, i, last_bytes, last_bytes >= kP2pRendezvousFrom ? 0 : 10u,
                      false});  // rank 0's later sends: 10 FIFO messages or a rendezvous
  }
  return g;
}

TEST(P2pLaunches, TheModelFindsTheDeadlocksTheRulesAvoid) {
  std::string why;
  // Run as one batch, rank 0's launch sends its batch-1 messages from round 0 and fills the FIFO
  // before it takes rank 1's batch-0 messages, which rank 1 sends before its launch of batch 1
  // can start.
  auto g = lopsided_pair(64);
  std::vector<Launches> ranks = {launches_of(g[0], p2p_plan(g[0], 2, 0, 1 << 20)),
                                 launches_of(g[1], p2p_plan(g[1], 2, 1, 2 * p2p_batch_ops(2)))};
  ASSERT_EQ(ranks[0].size(), 1u);
  ASSERT_EQ(ranks[1].size(), 2u);
  EXPECT_TRUE(run(ranks, &why)) << why;
  EXPECT_FALSE(run(ranks, &why, /*batches=*/false));
  EXPECT_NE(why.find("stuck"), std::string::npos);
  // The same with rendezvous sends in batch 1: run as one batch, rank 0 waits at the launch's
  // start for offers that rank 1 posts only in its next launch, after the messages rank 0 has not
  // taken yet.
  g = lopsided_pair(kP2pRendezvousFrom);
  ranks = {launches_of(g[0], p2p_plan(g[0], 2, 0, 1 << 20)),
           launches_of(g[1], p2p_plan(g[1], 2, 1, 2 * p2p_batch_ops(2)))};
  ASSERT_EQ(ranks[0].size(), 1u);
  EXPECT_TRUE(run(ranks, &why)) << why;
  EXPECT_FALSE(run(ranks, &why, /*batches=*/false));
  // The rule a rank could apply alone: its own group in slices of kMaxP2pOps, in group order.
  std::mt19937 rng(11);
  bool found = false;
  for (int trial = 0; trial < 200 && !found; ++trial) {
    const auto groups = random_groups({{0, 50, 10}, {40, 0, 5}, {2, 30, 0}}, rng);
    std::vector<Launches> local;
    for (const auto& grp : groups) {
      local.emplace_back();
      for (size_t i = 0; i < grp.size(); ++i) {
        if (i % kMaxP2pOps == 0) local.back().emplace_back();
        local.back().back().push_back(grp[i]);
      }
    }
    found = !run(local, &why);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace gicl::coll
