// SPDX-License-Identifier: Apache-2.0
// A model of the point-to-point LL path (collectives/pipe/p2p.cu: p2p_ll_block) over many
// launches, with the kernel's own arithmetic (collectives/schedule/p2p.hpp: p2p_ll_before,
// p2p_ll_op, p2p_ll_blocks, p2p_ll_grid). Both sides of a pair see the same sequence of
// operations, but each rank groups its sends and receives into launches its own way. Every unit
// store, unit poll, credit and count update is one step, and the steps of every block of every
// rank's current launch run in a random order. The model checks that no one waits forever, that
// every operation gets the sequence number of its place in its pair's stream, and that every
// receive reads its own send's data; without the sender's credit wait it must find a receive that
// lost its data to a later send.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "collectives/schedule/ll_flag.hpp"
#include "collectives/schedule/p2p.hpp"

namespace gicl::coll {
namespace {

constexpr size_t kCap = 96;  // bytes: 12 units, several blocks of kThreads
constexpr int kThreads = 2;

struct Op {
  int peer;
  int is_send;
  size_t bytes;
  uint64_t index;  // place in the (peer, direction) stream, 0-based
  int batch = 0;   // the round's place in its launch (the kernel's Op::batch)
  int net = 0;     // the peer is on the network path: never LL
};

struct Entry {
  uint64_t seq = 0;
  uint32_t flag = 0;  // what the receiver compares: the sequence number's 32-bit flag
  uint64_t data = 0;
};

/// The flag of the code before ll_flag: the low 32 bits, 0 at 2^32.
uint32_t truncated_flag(uint64_t q) {
  return static_cast<uint32_t>(q);
}

uint64_t data_of(int sender, int receiver, uint64_t seq, size_t unit) {
  return (static_cast<uint64_t>(sender) << 48) ^ (static_cast<uint64_t>(receiver) << 40) ^
         (seq << 16) ^ unit;
}

struct Model {
  struct Block {
    std::vector<int> list;  // its operations, in turn (one unless the launch is looped)
    size_t at = 0;          // the one it runs
    int op = -1, part = 0, parts = 1;
    uint64_t q = 0;
    std::vector<size_t> units;  // this block's units of it, in order
    size_t next = 0;            // units done
    int stage = 0;              // 0 start, 1 credit checked / polling, 2 credited, 3 counted out
  };
  struct Rank {
    std::vector<std::vector<Op>> launches;
    size_t launch = 0;
    std::vector<Block> blocks;
    std::vector<uint64_t> sent, rcvd;                   // P2pCounts ll_sent / ll_rcvd per peer
    std::vector<std::vector<uint64_t>> credit;          // [receiver][slot], at this sender
    std::vector<std::vector<std::vector<Entry>>> rows;  // [slot][sender][unit], at this receiver
    std::vector<int> read;                              // p2p_ll_read per operation
    int done = 0;                                       // p2p_ll_done
  };
  int n;
  bool respect_credit;
  int limit = 0;        // LL blocks ranks sharing a GPU leave a launch (p2p_ll_looped); 0: none
  bool ordered = true;  // looped blocks take their operations in p2p_ll_precedes order
  uint64_t base = 0;    // counts and credits start here (GICL_EPOCH_BASE)
  uint32_t (*flag_of)(uint64_t) = ll_flag;  // the kernel's flag
  std::mt19937 rng;
  std::vector<Rank> ranks;
  std::string error;

  /// `rounds` rounds; in each, every rank sends 0..5 messages to every rank, itself too (0..2
  /// beyond two ranks, so launches stay within kMaxP2pOps), and receives the round's messages for
  /// it, in a shuffled order that keeps each stream's order. Each rank merges runs of 1..3
  /// consecutive rounds into one launch of its own choosing (both sides group differently).
  /// With `ungrouped` > 0 instead: every rank sends that many messages to the next rank, one
  /// launch each, then receives as many from the previous one, one launch each.
  /// `base_` and `flag`: counters start at base_ (as GICL_EPOCH_BASE sets them), entries carry
  /// flag(sequence number).
  Model(int n_, int rounds, bool credit, uint32_t seed, int ungrouped = 0, uint64_t base_ = 0,
        uint32_t (*flag)(uint64_t) = ll_flag)
      : n(n_), respect_credit(credit), base(base_), flag_of(flag), rng(seed) {
    ranks.resize(n);
    std::vector<std::vector<std::vector<size_t>>> stream(n, std::vector<std::vector<size_t>>(n));
    std::vector<std::vector<std::vector<int>>> count(
        rounds, std::vector<std::vector<int>>(n, std::vector<int>(n, 0)));
    for (int t = 0; t < rounds; ++t)
      for (int s = 0; s < n; ++s)
        for (int r = 0; r < n; ++r) count[t][s][r] = static_cast<int>(rng() % (n <= 2 ? 6 : 3));
    for (int s = 0; s < n; ++s)
      for (int r = 0; r < n; ++r)
        for (int k = 0; k < 6 * rounds + ungrouped; ++k)
          stream[s][r].push_back(1 + rng() % kCap);  // LL sizes: empty operations take the FIFOs
    for (int me = 0; me < n; ++me) {
      Rank& R = ranks[me];
      std::vector<uint64_t> next_send(n, 0), next_recv(n, 0);
      auto send = [&](int peer) {
        const uint64_t k = next_send[peer]++;
        return Op{peer, 1, stream[me][peer][k], k};
      };
      auto recv = [&](int peer) {
        const uint64_t k = next_recv[peer]++;
        return Op{peer, 0, stream[peer][me][k], k};
      };
      if (ungrouped > 0) {
        for (int k = 0; k < ungrouped; ++k) R.launches.push_back({send((me + 1) % n)});
        for (int k = 0; k < ungrouped; ++k) R.launches.push_back({recv((me + n - 1) % n)});
      } else {
        std::vector<std::vector<Op>> by_round(rounds);
        for (int t = 0; t < rounds; ++t) {
          std::vector<Op> round;
          for (int p = 0; p < n; ++p) {
            for (int k = 0; k < count[t][me][p]; ++k) round.push_back(send(p));
            for (int k = 0; k < count[t][p][me]; ++k) round.push_back(recv(p));
          }
          // Shuffled, each stream keeping its order: shuffle which stream each position takes
          // its next operation from.
          std::vector<int> label;
          std::vector<std::vector<Op>> queue(2 * n);
          for (const Op& o : round) {
            label.push_back(2 * o.peer + o.is_send);
            queue[2 * o.peer + o.is_send].push_back(o);
          }
          std::shuffle(label.begin(), label.end(), rng);
          std::vector<size_t> taken(2 * n, 0);
          for (size_t i = 0; i < round.size(); ++i) round[i] = queue[label[i]][taken[label[i]]++];
          by_round[t] = round;
        }
        for (int t = 0; t < rounds;) {
          std::vector<Op> launch = by_round[t++];
          for (int merge = static_cast<int>(rng() % 3), place = 1;
               merge > 0 && t < rounds &&
               launch.size() + by_round[t].size() <= static_cast<size_t>(kMaxP2pOps);
               --merge, ++place) {
            for (Op o : by_round[t]) {
              o.batch = place;
              launch.push_back(o);
            }
            ++t;
          }
          if (!launch.empty()) R.launches.push_back(launch);
        }
      }
      R.sent.assign(n, base);
      R.rcvd.assign(n, base);
      R.credit.assign(n, std::vector<uint64_t>(kP2pLLSlots, base));
      R.rows.assign(kP2pLLSlots, std::vector<std::vector<Entry>>(n, std::vector<Entry>(kCap / 8)));
      R.read.assign(kMaxP2pOps, 0);
      start(me);
    }
  }

  void start(int me) {
    Rank& R = ranks[me];
    R.blocks.clear();
    if (R.launch == R.launches.size()) return;
    const std::vector<Op>& ops = R.launches[R.launch];
    const int nops = static_cast<int>(ops.size());
    const int grid = p2p_ll_grid(ops.data(), nops, kThreads, kCap, kP2pLLBlocks, limit);
    if (!p2p_ll_looped(p2p_ll_count(ops.data(), nops, kCap), limit)) {
      for (int b = 0; b < grid; ++b) {
        Block k;
        k.list.push_back(p2p_ll_op(ops.data(), nops, b, kThreads, kCap, &k.part, &k.parts));
        R.blocks.push_back(k);
      }
    } else {
      // The kernel's order: every operation's sequence number from the launch-start counts,
      // then its place; block b takes places b, b + grid, ...
      std::vector<uint64_t> q(nops);
      for (int i = 0; i < nops; ++i)
        q[i] = (ops[i].is_send ? R.sent[ops[i].peer] : R.rcvd[ops[i].peer]) +
               p2p_ll_before(ops.data(), i, kCap) + 1;
      std::vector<int> order(nops);
      for (int i = 0; i < nops; ++i) {
        int place = 0;
        for (int j = 0; j < nops; ++j)
          place += ordered ? p2p_ll_precedes(ops.data(), q.data(), j, i) : j < i;
        order[place] = i;
      }
      R.blocks.resize(grid);
      for (int p = 0; p < nops; ++p) R.blocks[p % grid].list.push_back(order[p]);
    }
    for (Block& k : R.blocks) begin(ops, k);
  }

  /// Limits the LL blocks of every launch (p2p_ll_looped) from the first launch on.
  void limit_blocks(int blocks, bool in_order = true) {
    limit = blocks;
    ordered = in_order;
    for (int r = 0; r < n; ++r) start(r);
  }

  /// Sets block k up for the operation it runs now.
  static void begin(const std::vector<Op>& ops, Block& k) {
    k.op = k.list[k.at];
    k.units.clear();
    k.next = 0;
    k.stage = 0;
    const size_t units = (ops[k.op].bytes + 7) / 8;
    for (size_t t = 0; t < kThreads; ++t)
      for (size_t u = k.part * kThreads + t; u < units; u += k.parts * kThreads)
        k.units.push_back(u);
  }

  /// One step of block b of rank me; false when it must wait.
  bool step(int me, Block& k) {
    Rank& R = ranks[me];
    const std::vector<Op>& ops = R.launches[R.launch];
    const Op& op = ops[k.op];
    if (k.stage == 0) {  // the block's start: its sequence number from the launch-start counts
      k.q = (op.is_send ? R.sent[op.peer] : R.rcvd[op.peer]) +
            p2p_ll_before(ops.data(), k.op, kCap) + 1;
      if (k.q != base + op.index + 1)
        error = "rank " + std::to_string(me) + " numbered operation " + std::to_string(op.index) +
                " with peer " + std::to_string(op.peer) + " as " + std::to_string(k.q);
      if (op.is_send && respect_credit &&
          R.credit[op.peer][p2p_ll_slot(k.q)] < p2p_ll_credit_needed(k.q))
        return false;
      k.stage = 1;
      return true;
    }
    if (k.stage == 1 && k.next < k.units.size()) {
      const size_t u = k.units[k.next];
      if (op.is_send) {
        ranks[op.peer].rows[p2p_ll_slot(k.q)][me][u] =
            Entry{k.q, flag_of(k.q), data_of(me, op.peer, k.q, u)};
      } else {
        const Entry& e = R.rows[p2p_ll_slot(k.q)][op.peer][u];
        if (e.flag != flag_of(k.q)) {
          if (e.seq > k.q)
            error = "rank " + std::to_string(me) + ": receive " + std::to_string(k.q) + " from " +
                    std::to_string(op.peer) + " overwritten by " + std::to_string(e.seq);
          return false;
        }
        if (e.data != data_of(op.peer, me, k.q, u)) error = "wrong data";
      }
      ++k.next;
      return true;
    }
    if (k.stage == 1) {  // all units done: a receive's last block credits the sender
      if (!op.is_send && (k.parts == 1 || ++R.read[k.op] == k.parts)) {
        R.read[k.op] = 0;
        ranks[op.peer].credit[me][p2p_ll_slot(k.q)] = k.q;
      }
      k.stage = 2;
      return true;
    }
    if (k.stage == 2 && ++k.at < k.list.size()) {  // a looped block's next operation
      begin(ops, k);
      return true;
    }
    if (k.stage == 2) {  // count out; the last block advances the counts
      k.stage = 3;
      if (++R.done == static_cast<int>(R.blocks.size())) {
        R.done = 0;
        for (const Op& o : ops) ++(o.is_send ? R.sent[o.peer] : R.rcvd[o.peer]);
        ++R.launch;
        start(me);
      }
      return true;
    }
    return false;
  }

  bool run() {
    for (;;) {
      std::vector<std::pair<int, int>> live;
      for (int r = 0; r < n; ++r)
        for (int b = 0; b < static_cast<int>(ranks[r].blocks.size()); ++b)
          if (ranks[r].blocks[b].stage < 3) live.emplace_back(r, b);
      if (live.empty()) break;
      std::shuffle(live.begin(), live.end(), rng);
      bool moved = false;
      for (auto [r, b] : live) {
        const size_t launch = ranks[r].launch;
        if (step(r, ranks[r].blocks[b])) {
          moved = true;
          break;
        }
        if (!error.empty() || ranks[r].launch != launch) break;
      }
      if (!error.empty()) return false;
      if (!moved) {
        error = "every block waits: deadlock";
        return false;
      }
    }
    for (int r = 0; r < n; ++r)
      if (ranks[r].launch != ranks[r].launches.size()) {
        error = "rank " + std::to_string(r) + " did not finish";
        return false;
      }
    return true;
  }
};

TEST(P2pLLModel, EveryReceiveGetsItsSendWhateverTheGroupingAndOrder) {
  for (int n : {1, 2, 3, 4})
    for (uint32_t seed = 1; seed <= 60; ++seed) {
      Model m(n, 10, true, seed);
      EXPECT_TRUE(m.run()) << n << " ranks, seed " << seed << ": " << m.error;
    }
}

TEST(P2pLLModel, FewerBlocksThanOperationsRunThemInTurnInTheKernelsOrder) {
  // Ranks sharing a GPU leave a launch's LL operations 1 to 3 blocks: each block runs several,
  // in p2p_ll_precedes order (by batch, round of kP2pLLSlots, sends first). In the group's own
  // order instead, a block waits on a receive whose send sits behind a receive on its partner.
  int unordered_failed = 0;
  for (int n : {1, 2, 3, 4})
    for (int blocks : {1, 2, 3})
      for (uint32_t seed = 1; seed <= 30; ++seed) {
        Model m(n, 10, true, seed);
        m.limit_blocks(blocks);
        EXPECT_TRUE(m.run()) << n << " ranks, " << blocks << " blocks, seed " << seed << ": "
                             << m.error;
        Model plain(n, 10, true, seed);
        plain.limit_blocks(blocks, /*in_order=*/false);
        if (!plain.run()) ++unordered_failed;
      }
  EXPECT_GT(unordered_failed, 0) << "the model never caught the group order's deadlock";
}

TEST(P2pLLModel, EmptyOperationsAreNotLL) {
  // An empty receive completes at once: on the LL path it would credit its slot ahead of an
  // unread receive there (this model found it with empty sizes allowed), so empty operations
  // take the FIFOs.
  EXPECT_FALSE(p2p_ll(0, kCap));
  EXPECT_TRUE(p2p_ll(1, kCap));
}

TEST(P2pLLModel, ASenderMayRunAsManyLaunchesAheadAsThereAreSlots) {
  // Every rank sends k messages to the next rank, each in its own launch, before it receives.
  for (int n : {1, 2, 3})
    for (uint32_t seed = 1; seed <= 10; ++seed) {
      Model ok(n, 0, true, seed, kP2pLLSlots);
      EXPECT_TRUE(ok.run()) << n << " ranks, seed " << seed << ": " << ok.error;
      Model over(n, 0, true, seed, kP2pLLSlots + 1);
      EXPECT_FALSE(over.run()) << n << " ranks: one more than the slots must wait forever";
    }
}

TEST(P2pLLModel, SequenceNumbersCrossTheFlagWrap) {
  // From 2^32 - 20 every pair's sequence numbers pass 2^32, where the low 32 bits are 0, the
  // value of entries never written: with that flag a receive larger than every earlier one in
  // its slot reads unwritten units as arrived. ll_flag is never 0.
  const uint64_t base = (uint64_t{1} << 32) - 20;
  int truncated_failed = 0;
  for (int n : {1, 2, 3})
    for (uint32_t seed = 1; seed <= 40; ++seed) {
      Model m(n, 10, true, seed, 0, base);
      EXPECT_TRUE(m.run()) << n << " ranks, seed " << seed << ": " << m.error;
      Model old(n, 10, true, seed, 0, base, truncated_flag);
      if (!old.run()) ++truncated_failed;
    }
  EXPECT_GT(truncated_failed, 0) << "the model never caught the truncated flag's wrap";
}

TEST(P2pLLModel, WithoutTheCreditWaitAReceiveLosesItsData) {
  int found = 0;
  for (uint32_t seed = 1; seed <= 60 && found == 0; ++seed) {
    Model m(2, 10, false, seed);
    if (!m.run()) ++found;
  }
  EXPECT_GT(found, 0) << "the model never caught a send overwriting an unread row";
}

}  // namespace
}  // namespace gicl::coll
