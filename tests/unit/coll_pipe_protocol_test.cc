// SPDX-License-Identifier: Apache-2.0
// A model of the pipe kernels' message protocol (collectives/pipe/pipe.cu: run_step,
// canonical_reduce_scatter; collectives/pipe/p2p.cu: p2p_kernel): every rank issues its
// messages in the kernel's order, each pairwise FIFO holds kPipeSlots messages, a send waits for a
// free slot and a receive for a message. The model runs every schedule for 1..16 ranks, fragment
// sizes that force many messages, and one slot as well as kPipeSlots, and checks that no rank waits
// forever and no message is left unread: the deadlock freedom the kernels rely on at rank counts
// the GPU machine cannot reach.
#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "collectives/common/coll_args.h"
#include "collectives/schedule/p2p.hpp"
#include "collectives/schedule/schedule.hpp"
#include "collectives/schedule/tables.hpp"

namespace gicl::coll {
namespace {

struct Msg {
  bool send;
  int peer;
};
using Plan = std::vector<Msg>;

/// run_step: per step, message k of the send then message k of the receive.
void add_step(const Step& st, size_t per, Plan* p) {
  const size_t ns = st.send.peer >= 0 ? (st.send.count + per - 1) / per : 0;
  const size_t nr = st.recv.peer >= 0 ? (st.recv.count + per - 1) / per : 0;
  for (size_t k = 0; k < ns || k < nr; ++k) {
    if (k < ns) p->push_back({true, st.send.peer});
    if (k < nr) p->push_back({false, st.recv.peer});
  }
}

/// canonical_reduce_scatter: per round, a message to every peer whose block has one, then one
/// from every peer for this rank's block.
void add_canonical(int r, int n, size_t count, size_t per, Plan* p) {
  size_t mlo, mlen;
  partition(count, n, r, &mlo, &mlen);
  const size_t rounds = (count / n + 1 + per - 1) / per;
  for (size_t k = 0; k < rounds; ++k) {
    for (int j = 0; j < n; ++j) {
      size_t lo, len;
      partition(count, n, j, &lo, &len);
      if (j != r && k * per < len) p->push_back({true, j});
    }
    if (k * per >= mlen) continue;
    for (int q = 0; q < n; ++q)
      if (q != r) p->push_back({false, q});
  }
}

Plan plan_of(const Shape& sh, int r, size_t per, bool canonical) {
  Plan p;
  Shape s = sh;
  if (canonical) {
    add_canonical(r, sh.nranks, sh.count, per, &p);
    if (sh.coll != Collective::kAllReduce) return p;
    s.coll = Collective::kAllGather;
    if (s.algo != Algorithm::kRing) s.algo = Algorithm::kRecursiveDoubling;
  }
  const int steps = num_steps(s);
  for (int i = 0; i < steps; ++i) add_step(make_step(s, r, i), per, &p);
  return p;
}

/// Runs the plans with `slots` per FIFO; returns false (and where) on a deadlock or leftovers.
bool run(const std::vector<Plan>& plans, int slots, std::string* why) {
  const int n = static_cast<int>(plans.size());
  std::vector<size_t> pc(n, 0);
  std::map<std::pair<int, int>, std::pair<long, long>> fifo;  // (from, to) -> (sent, consumed)
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < n; ++r) {
      while (pc[r] < plans[r].size()) {
        const Msg& m = plans[r][pc[r]];
        if (m.send) {
          auto& f = fifo[{r, m.peer}];
          if (f.first - f.second >= slots) break;
          ++f.first;
        } else {
          auto& f = fifo[{m.peer, r}];
          if (f.first <= f.second) break;
          ++f.second;
        }
        ++pc[r];
        progress = true;
      }
    }
  }
  for (int r = 0; r < n; ++r)
    if (pc[r] < plans[r].size()) {
      *why = "rank " + std::to_string(r) + " stuck at message " + std::to_string(pc[r]) + " of " +
             std::to_string(plans[r].size());
      return false;
    }
  for (const auto& [k, f] : fifo)
    if (f.first != f.second) {
      *why = "messages from " + std::to_string(k.first) + " to " + std::to_string(k.second) +
             " left unread";
      return false;
    }
  return true;
}

struct Case {
  Collective coll;
  Algorithm algo;
  bool canonical;
};

TEST(PipeProtocol, EveryScheduleCompletesWithBoundedFifos) {
  const Case cases[] = {
      {Collective::kAllReduce, Algorithm::kRing, false},
      {Collective::kAllReduce, Algorithm::kRecursiveDoubling, false},
      {Collective::kAllReduce, Algorithm::kRabenseifner, false},
      {Collective::kAllReduce, Algorithm::kRing, true},
      {Collective::kAllReduce, Algorithm::kRabenseifner, true},
      {Collective::kAllGather, Algorithm::kRing, false},
      {Collective::kAllGather, Algorithm::kRecursiveDoubling, false},
      {Collective::kReduceScatter, Algorithm::kRing, false},
      {Collective::kReduceScatter, Algorithm::kRing, true},
      {Collective::kBroadcast, Algorithm::kRing, false},
  };
  int runs = 0;
  for (const Case& c : cases)
    for (int n = 1; n <= 16; ++n)
      for (size_t count :
           {size_t{0}, size_t{1}, size_t(n - 1), size_t(n + 1), size_t(7 * n + 3), size_t{1000}})
        for (size_t per : {size_t{1}, size_t{3}, size_t{64}})
          for (int slots : {1, kPipeSlots})
            for (int chunks : {1, 4}) {
              if (c.coll != Collective::kBroadcast && chunks > 1) continue;
              const bool blocked =
                  c.coll == Collective::kAllGather || c.coll == Collective::kReduceScatter;
              const Shape sh{c.coll, c.algo, n, blocked ? count * n : count, n / 2, chunks};
              std::vector<Plan> plans;
              for (int r = 0; r < n; ++r) plans.push_back(plan_of(sh, r, per, c.canonical));
              std::string why;
              ASSERT_TRUE(run(plans, slots, &why))
                  << collective_name(c.coll) << "/" << algorithm_name(c.algo)
                  << (c.canonical ? " canonical" : "") << " n=" << n << " count=" << count
                  << " per=" << per << " slots=" << slots << " chunks=" << chunks << ": " << why;
              ++runs;
            }
  EXPECT_GT(runs, 1000);
}

/// p2p_kernel: round k carries message k of every (peer, direction) stream, sends first, in the
/// kernel's own order (p2p_stream_offset; one batch: tests/unit/coll_p2p_launches_test.cc models
/// launches of several).
struct GroupOp {
  int peer;
  int is_send;
};
std::vector<Plan> p2p_plans(const std::vector<std::vector<std::pair<Msg, size_t>>>& ops) {
  std::vector<Plan> plans(ops.size());
  for (size_t r = 0; r < ops.size(); ++r) {
    std::vector<GroupOp> g;
    std::vector<size_t> msgs, first;
    for (const auto& o : ops[r]) {
      g.push_back({o.first.peer, o.first.send ? 1 : 0});
      msgs.push_back(o.second);
    }
    size_t rounds = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      first.push_back(p2p_stream_offset(g.data(), msgs.data(), static_cast<int>(i)));
      rounds = std::max(rounds, first[i] + msgs[i]);
    }
    for (size_t k = 0; k < rounds; ++k)
      for (int pass = 0; pass < 2; ++pass)
        for (size_t i = 0; i < g.size(); ++i)
          if (ops[r][i].first.send == (pass == 0) && k >= first[i] && k < first[i] + msgs[i])
            plans[r].push_back(ops[r][i].first);
  }
  return plans;
}

TEST(PipeProtocol, PointToPointGroupsComplete) {
  // A ring shift, a pairwise exchange with every rank (self included) and an alltoall from sends
  // and receives, unequal sizes, two operations per peer and direction.
  for (int n = 1; n <= 16; ++n) {
    std::vector<std::vector<std::pair<Msg, size_t>>> ops(n);
    for (int r = 0; r < n; ++r) {
      for (int q = 0; q < n; ++q) {
        ops[r].push_back({{true, q}, static_cast<size_t>(1 + (r + 2 * q) % 5)});
        ops[r].push_back({{false, q}, static_cast<size_t>(1 + (q + 2 * r) % 5)});
      }
      ops[r].push_back({{true, (r + 1) % n}, 7});
      ops[r].push_back({{false, (r + n - 1) % n}, 7});
    }
    std::string why;
    for (int slots : {1, kPipeSlots})
      ASSERT_TRUE(run(p2p_plans(ops), slots, &why)) << "n=" << n << ": " << why;
  }
}

TEST(PipeProtocol, ManySendsToOnePeerComplete) {
  // Two ranks exchanging many buffers each way (up to a launch's limit): with one message per
  // stream per round the FIFOs never fill in one round. The previous order (one message of every
  // operation per round) deadlocks from kPipeSlots + 1 buffers: the model shows it.
  for (int k : {1, kPipeSlots, kPipeSlots + 1, kMaxP2pOps / 2}) {  // the last: a full launch
    std::vector<std::vector<std::pair<Msg, size_t>>> ops(2);
    for (int r = 0; r < 2; ++r)
      for (int i = 0; i < k; ++i) {
        ops[r].push_back({{true, 1 - r}, static_cast<size_t>(1 + i % 3)});
        ops[r].push_back({{false, 1 - r}, static_cast<size_t>(1 + i % 3)});
      }
    std::string why;
    EXPECT_TRUE(run(p2p_plans(ops), kPipeSlots, &why)) << k << " sends: " << why;
    std::vector<Plan> per_op(2);
    for (int r = 0; r < 2; ++r)
      for (size_t round = 0; round < 3; ++round)
        for (int pass = 0; pass < 2; ++pass)
          for (const auto& o : ops[r])
            if (o.first.send == (pass == 0) && round < o.second) per_op[r].push_back(o.first);
    EXPECT_EQ(run(per_op, kPipeSlots, &why), k <= kPipeSlots) << k << " sends, old order";
  }
}

TEST(PipeProtocol, TheModelFindsADeadlock) {
  // Receives before sends between two ranks: the model must report it (the test can fail).
  std::vector<Plan> plans = {{{false, 1}, {true, 1}}, {{false, 0}, {true, 0}}};
  std::string why;
  EXPECT_FALSE(run(plans, kPipeSlots, &why));
  EXPECT_NE(why.find("stuck"), std::string::npos);
}

}  // namespace
}  // namespace gicl::coll
