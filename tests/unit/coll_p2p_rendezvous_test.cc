// SPDX-License-Identifier: Apache-2.0
// A model of the send/recv rendezvous (collectives/pipe/p2p.cu: post_offers, read_offers, the
// zero-copy copies and await_zero_copy) over many launches, with the ring arithmetic the kernel
// uses (collectives/schedule/p2p.hpp). Every rank's block 0 posts its receives' offers into a
// ring at the sender; every block of the sender reads them, batch by batch; each batch's last
// reader tells the receiver how many it read (the kernel adds them at the receiver), the
// launch's last such batch advances the sender's count; a launch ends when its receives are
// complete. Steps of every block of every rank run in a random order. The model checks that no
// one waits forever, that every offer read is the one meant (never a stale or a later one) and
// that both sides' counters agree at the end; without the ring's wait it must find an
// overwritten offer.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "collectives/schedule/p2p.hpp"

namespace gicl::coll {
namespace {

struct Op {
  int peer;
  int is_send;
  size_t bytes;
  bool window;    // a receive: the receiver has a window (zero copy) or offers none (FIFOs)
  int batch = 0;  // its batch's place in the launch (the launch's operations sorted by it)
  int net = 0;    // the peer is on the network path: never LL
};

struct Offer {
  uint64_t seq = 0;
  uint64_t tag = 0;  // launch * 1000 + index among the pair's rendezvous operations
};

struct Model {
  int n, launches, blocks, channels;
  bool respect_ring;
  std::mt19937 rng;
  // groups[r][l]: rank r's operations in launch l.
  std::vector<std::vector<std::vector<Op>>> groups;
  // offers[s][r][slot]: receiver r's ring at sender s. read_ack[r][s]: reads s reported to r.
  std::vector<std::vector<std::vector<Offer>>> offers;
  std::vector<std::vector<uint64_t>> read_ack, made, taken;
  struct Launch {
    int l = 0;
    size_t posted = 0;         // rendezvous receives posted by block 0
    std::vector<size_t> read;  // per block: rendezvous sends read
    std::vector<bool> done;    // per block: read all its offers
    std::vector<int> readers;  // per batch: blocks that read all its offers
  };
  std::vector<Launch> cur;
  int slow = -1;  // a block of rank 0 that moves only when nothing else can (adversarial)
  std::string error;

  /// `one_way`: only rank 0 sends, to rank 1, up to kMaxP2pOps - 2 operations a launch (two
  /// launches' offers overrun the ring); `window` in 0..4: how many quarters of receives have
  /// windows.
  Model(int n_, int launches_, int blocks_, bool ring, uint32_t seed, bool one_way = false,
        int window = 3)
      : n(n_),
        launches(launches_),
        blocks(blocks_),
        channels(std::max(1, blocks_ / 2)),
        respect_ring(ring),
        rng(seed) {
    groups.assign(n, std::vector<std::vector<Op>>(launches));
    // Each launch: a ring shift (r sends to r+1) of 1..12 operations, sizes on both sides of
    // the rendezvous threshold, receives with and without windows, now and then a self exchange.
    std::uniform_int_distribution<int> count(1, one_way ? kMaxP2pOps - 2 : 12), coin(0, 3);
    for (int l = 0; l < launches; ++l) {
      for (int r = 0; r < (one_way ? 1 : n); ++r) {
        const int to = (r + 1) % n, k = count(rng);
        // Batches of 1 to 4 of the pair's operations (both sides alike, as p2p_batch_of).
        const int per_batch = 1 + coin(rng);
        for (int i = 0; i < k; ++i) {
          const size_t bytes = coin(rng) == 0 ? 4096 : kP2pRendezvousFrom + 16 * i;
          groups[r][l].push_back({to, 1, bytes, false, i / per_batch});
          groups[to][l].push_back({r, 0, bytes, coin(rng) < window, i / per_batch});
        }
        if (!one_way && coin(rng) == 0) {
          groups[r][l].push_back({r, 1, kP2pRendezvousFrom, false, 0});
          groups[r][l].push_back({r, 0, kP2pRendezvousFrom, true, 0});
        }
      }
      for (int r = 0; r < n; ++r)
        std::stable_sort(groups[r][l].begin(), groups[r][l].end(),
                         [](const Op& a, const Op& b) { return a.batch < b.batch; });
    }
    offers.assign(n, std::vector<std::vector<Offer>>(n, std::vector<Offer>(kMaxP2pOps)));
    read_ack.assign(n, std::vector<uint64_t>(n, 0));
    made = taken = read_ack;
    cur.assign(n, Launch{});
    for (int r = 0; r < n; ++r) start(r, 0);
  }

  const std::vector<Op>& ops(int r) { return groups[r][cur[r].l]; }

  /// The i-th rendezvous operation of `ops` in one direction, or -1.
  static int nth_rendezvous(const std::vector<Op>& ops, bool send, size_t i) {
    for (size_t j = 0; j < ops.size(); ++j)
      if ((ops[j].is_send != 0) == send && p2p_rendezvous(ops[j].bytes) && i-- == 0)
        return static_cast<int>(j);
    return -1;
  }

  void start(int r, int l) {
    cur[r] = Launch{};
    cur[r].l = l;
    cur[r].read.assign(blocks, 0);
    cur[r].readers.assign(kMaxP2pOps, 0);
    const bool reads = l < launches && nth_rendezvous(groups[r][l], true, 0) >= 0;
    cur[r].done.assign(blocks, !reads);  // nothing to read: past read_offers at once
  }

  /// Block 0 of rank r posts its next offer; false when it must wait.
  bool post(int r) {
    const int i = nth_rendezvous(ops(r), false, cur[r].posted);
    if (i < 0) return false;
    const Op& op = ops(r)[i];
    const uint64_t q = made[r][op.peer] + 1;
    if (respect_ring && read_ack[r][op.peer] < p2p_offers_read_before(q)) return false;
    made[r][op.peer] = q;
    const uint64_t idx = p2p_rendezvous_before(ops(r).data(), i);
    offers[op.peer][r][p2p_offer_slot(q)] = {q, cur[r].l * 1000ull + idx};
    ++cur[r].posted;
    return true;
  }

  bool posting_done(int r) { return nth_rendezvous(ops(r), false, cur[r].posted) < 0; }

  /// Block b of rank r reads its next offer; false when it must wait (or failed: error set).
  bool read(int r, int b) {
    if (cur[r].done[b] || (b == 0 && !posting_done(r))) return false;  // block 0 posts first
    const int i = nth_rendezvous(ops(r), true, cur[r].read[b]);
    const Op& op = ops(r)[i];
    const uint64_t idx = p2p_rendezvous_before(ops(r).data(), i);
    const uint64_t q = taken[r][op.peer] + idx + 1;
    const Offer& o = offers[r][op.peer][p2p_offer_slot(q)];
    if (o.seq < q) return false;
    const uint64_t want = cur[r].l * 1000ull + idx;
    if (o.seq != q || o.tag != want) {
      error = "rank " + std::to_string(r) + " block " + std::to_string(b) + " read offer " +
              std::to_string(o.seq) + " (tag " + std::to_string(o.tag) + ") for offer " +
              std::to_string(q) + " (tag " + std::to_string(want) + ")";
      return false;
    }
    const int next = nth_rendezvous(ops(r), true, ++cur[r].read[b]);
    cur[r].done[b] = next < 0;
    const int batch = op.batch;
    if (next >= 0 && ops(r)[next].batch == batch) return true;
    if (++cur[r].readers[batch] < blocks) return true;
    // The batch's last reader adds the batch's reads at each receiver; after the launch's last
    // batch with rendezvous sends, the sender's count moves on.
    const std::vector<Op>& g = ops(r);
    int lo = 0, hi = 0;
    while (g[lo].batch != batch) ++lo;
    for (hi = lo; hi < static_cast<int>(g.size()) && g[hi].batch == batch;) ++hi;
    for (int p = 0; p < n; ++p)
      read_ack[p][r] +=
          p2p_rendezvous_count(g.data(), hi, p, true) - p2p_rendezvous_count(g.data(), lo, p, true);
    if (next >= 0) return true;
    for (int p = 0; p < n; ++p)
      taken[r][p] += p2p_rendezvous_count(g.data(), static_cast<int>(g.size()), p, true);
    return true;
  }

  /// Whether the sender `p` has reached the point of launch l where receive `op` completes: a
  /// zero-copy receive needs every block of the sender past its reads (each then copies its
  /// share), anything through the FIFOs only the sender's channel blocks.
  bool delivered(int p, int l, const Op& op) {
    if (cur[p].l != l) return cur[p].l > l;
    const int need = p2p_rendezvous(op.bytes) && op.window ? blocks : channels;
    for (int b = 0; b < need; ++b)
      if (!cur[p].done[b]) return false;
    return true;
  }

  /// Rank r's launch ends when its blocks are past their reads and all its receives arrived.
  bool finish(int r) {
    if (!posting_done(r)) return false;
    for (int b = 0; b < blocks; ++b)
      if (!cur[r].done[b]) return false;
    for (const Op& op : ops(r))
      if (!op.is_send && !delivered(op.peer, cur[r].l, op)) return false;
    start(r, cur[r].l + 1);
    return true;
  }

  /// Runs to the end; false with `error` on a wrong offer or a state where nobody can move.
  bool run() {
    for (;;) {
      std::vector<std::pair<int, int>> steps;  // (rank, -2 post / -1 finish / block)
      for (int r = 0; r < n; ++r) {
        if (cur[r].l >= launches) continue;
        steps.push_back({r, -2});
        steps.push_back({r, -1});
        for (int b = 0; b < blocks; ++b) steps.push_back({r, b});
      }
      if (steps.empty()) break;
      std::shuffle(steps.begin(), steps.end(), rng);
      std::stable_partition(steps.begin(), steps.end(), [&](const std::pair<int, int>& st) {
        return st != std::pair{0, slow};
      });
      bool moved = false;
      for (auto [r, what] : steps) {
        moved = what == -2 ? post(r) : what == -1 ? finish(r) : read(r, what);
        if (!error.empty()) return false;
        if (moved) break;
      }
      if (!moved) {
        error = "stuck:";
        for (int r = 0; r < n; ++r)
          error += " rank " + std::to_string(r) + " at launch " + std::to_string(cur[r].l);
        return false;
      }
    }
    for (int r = 0; r < n; ++r)
      for (int p = 0; p < n; ++p)
        if (made[r][p] != taken[p][r]) {
          error = "offers made and read disagree";
          return false;
        }
    return true;
  }
};

TEST(P2pRendezvous, SharesCoverAnOperationOnceInOrder) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{255},
                       size_t{4096} + 3, kP2pRendezvousFrom, kP2pRendezvousFrom * 3 + 7}) {
    for (int parts : {1, 2, 3, kPipeChannels, kP2pBlocks}) {
      size_t next = 0;
      for (int p = 0; p < parts; ++p) {
        size_t lo = 99, len = 99;
        p2p_share(bytes, parts, p, &lo, &len);
        EXPECT_EQ(lo, next) << bytes << " bytes, part " << p << " of " << parts;
        EXPECT_EQ(lo % 16, 0u) << bytes << " bytes, part " << p;
        if (p != parts - 1) {
          EXPECT_EQ(len % 16, 0u) << bytes << " bytes, part " << p;
        }
        // Balanced: no part holds more than one 16-byte unit over another (the tail aside).
        EXPECT_LE(len, (bytes / 16 + parts - 1) / parts * 16 + (p == parts - 1 ? bytes % 16 : 0));
        next = lo + len;
      }
      EXPECT_EQ(next, bytes) << bytes << " bytes in " << parts << " parts";
    }
  }
}

TEST(P2pLL, SmallOperationsTakeTheLLPathByTheirSizeAlone) {
  EXPECT_EQ(p2p_ll_capacity(2), size_t{64} << 10);
  EXPECT_EQ(p2p_ll_capacity(64), size_t{16} << 10);
  EXPECT_EQ(p2p_ll_capacity(4096), size_t{8} << 10);
  const size_t cap2 = p2p_ll_capacity(2);
  EXPECT_FALSE(p2p_ll(0, cap2));  // empty: the FIFO path, where it moves nothing
  EXPECT_TRUE(p2p_ll(1, cap2));
  EXPECT_TRUE(p2p_ll(size_t{64} << 10, cap2));
  EXPECT_FALSE(p2p_ll((size_t{64} << 10) + 1, cap2));
  EXPECT_FALSE(p2p_ll((size_t{16} << 10) + 1, p2p_ll_capacity(64)));
  for (int n : {1, 2, 8, 64, 1024})
    EXPECT_FALSE(p2p_ll(kP2pRendezvousFrom, p2p_ll_capacity(n))) << n;
  // Each LL operation's number within its (peer, direction) stream, and which block runs it.
  const std::vector<Op> ops = {{1, true, 8, false},   {1, true, size_t{1} << 20, false},
                               {1, true, 100, false}, {1, false, 8, false},
                               {2, true, 8, false},   {1, true, 0, false},
                               {1, true, 1, false}};
  const size_t cap4 = p2p_ll_capacity(4);
  const int k = static_cast<int>(ops.size());
  EXPECT_EQ(p2p_ll_before(ops.data(), 0, cap4), 0u);
  EXPECT_EQ(p2p_ll_before(ops.data(), 2, cap4), 1u);  // the 1 MiB send is not LL
  EXPECT_EQ(p2p_ll_before(ops.data(), 3, cap4), 0u);  // a receive: the other direction
  EXPECT_EQ(p2p_ll_before(ops.data(), 4, cap4), 0u);  // another peer
  EXPECT_EQ(p2p_ll_before(ops.data(), 6, cap4), 2u);  // the empty send is not LL
  const int order[] = {0, 2, 3, 4, 6};
  int part = -1, parts = -1;
  for (int b = 0; b < 5; ++b) {
    EXPECT_EQ(p2p_ll_op(ops.data(), k, b, 512, cap4, &part, &parts), order[b]) << b;
    EXPECT_EQ(part, 0);
    EXPECT_EQ(parts, 1);
  }
  EXPECT_EQ(p2p_ll_op(ops.data(), k, 5, 512, cap4, &part, &parts), -1);
  EXPECT_EQ(p2p_ll_grid(ops.data(), k, 512, cap4), 5);
}

// An operation with a rank on the network path is never LL, whatever its size: the proxy cannot
// store into the peer's rows. It takes no LL number, block or LL-sized thread count, and no
// rendezvous offer.
TEST(P2pLL, OperationsWithANetworkRankTakeTheFifos) {
  const size_t cap = p2p_ll_capacity(2);
  std::vector<Op> ops = {{1, true, 8, false}, {1, true, 100, false}, {1, true, 64, false}};
  ops[1].net = 1;
  EXPECT_TRUE(p2p_ll_of(ops[0], cap));
  EXPECT_FALSE(p2p_ll_of(ops[1], cap));
  EXPECT_EQ(p2p_ll_before(ops.data(), 2, cap), 1u);  // the network send is not counted
  EXPECT_EQ(p2p_ll_count(ops.data(), 3, cap), 2);
  EXPECT_EQ(p2p_ll_grid(ops.data(), 3, 512, cap), 2);
  ops = {{1, true, cap, false}};
  const int ll_threads = p2p_threads(ops.data(), 1, 512, cap);
  ops[0].net = 1;
  EXPECT_LT(p2p_threads(ops.data(), 1, 512, cap), ll_threads);  // a FIFO share per channel
  EXPECT_EQ(p2p_ll_grid(ops.data(), 1, 512, cap), 0);
  // Nor do they take the rendezvous: no offer is counted for them.
  ops = {{1, true, kP2pRendezvousFrom, false}, {1, true, kP2pRendezvousFrom, false}};
  ops[0].net = 1;
  EXPECT_FALSE(p2p_rendezvous_of(ops[0]));
  EXPECT_TRUE(p2p_rendezvous_of(ops[1]));
  EXPECT_EQ(p2p_rendezvous_count(ops.data(), 2, 1, true), 1u);
  EXPECT_EQ(p2p_rendezvous_before(ops.data(), 1), 0u);
}

// A network peer's operation takes as many FIFO channels as its messages fill (each message is a
// proxy write and a credit back), a load/store peer's every channel; the channels' shares then
// cover the operation once, in order, with no message beyond a slot.
TEST(P2pFifo, ANetworkOperationTakesTheChannelsItsMessagesFill) {
  const size_t room = (size_t{256} << 10) - kP2pNetHeader;
  EXPECT_EQ(p2p_fifo_parts(8, false, room), kPipeChannels);
  EXPECT_EQ(p2p_fifo_parts(0, true, room), 1);
  EXPECT_EQ(p2p_fifo_parts(512, true, room), 1);
  EXPECT_EQ(p2p_fifo_parts(room, true, room), 1);
  EXPECT_EQ(p2p_fifo_parts(room + 1, true, room), 2);
  EXPECT_EQ(p2p_fifo_parts(size_t{2} << 20, true, room), 9);
  EXPECT_EQ(p2p_fifo_parts(size_t{1} << 30, true, room), kPipeChannels);
  for (size_t bytes : {size_t{8}, size_t{512}, room + 1, size_t{3} << 20, size_t{1} << 30}) {
    const int parts = p2p_fifo_parts(bytes, true, room);
    size_t next = 0, most = 0;
    for (int ch = 0; ch < parts; ++ch) {
      size_t lo = 0, len = 0;
      p2p_share(bytes, parts, ch, &lo, &len);
      EXPECT_EQ(lo, next) << bytes << " bytes, channel " << ch;
      next = lo + len;
      most = std::max(most, len);
    }
    EXPECT_EQ(next, bytes);
    if (parts < kPipeChannels) EXPECT_LE(most, room) << bytes << " bytes: a share past one message";
  }
}

TEST(P2pLL, LargerOperationsGetABlockPerThreadsUnitsWithinTheLimit) {
  const size_t m = size_t{64} << 10;  // 8192 units: 16 blocks of 512
  EXPECT_EQ(p2p_ll_most(1), kP2pLLBlocks);
  EXPECT_EQ(p2p_ll_most(3), kP2pLLBlocks / 3);
  EXPECT_EQ(p2p_ll_most(kMaxP2pOps), 1);
  EXPECT_EQ(p2p_ll_blocks(m, 512, p2p_ll_most(1)), 16);
  EXPECT_EQ(p2p_ll_blocks(8, 512, p2p_ll_most(1)), 1);
  EXPECT_EQ(p2p_ll_blocks(0, 512, p2p_ll_most(1)), 1);
  EXPECT_EQ(p2p_ll_blocks(m, 512, p2p_ll_most(3)), kP2pLLBlocks / 3);
  EXPECT_EQ(p2p_ll_blocks(m, 512, p2p_ll_most(kMaxP2pOps)), 1);
  const size_t cap = p2p_ll_capacity(2);
  const std::vector<Op> ops = {{1, true, m, false}, {1, false, m, false}, {2, true, 1000, false}};
  const int k = static_cast<int>(ops.size());
  EXPECT_EQ(p2p_ll_grid(ops.data(), k, 512, cap), 10 + 10 + 1);
  // Every LL block maps to one (operation, part), parts in order, and all parts are covered.
  int part = -1, parts = -1, seen[3] = {0, 0, 0};
  for (int b = 0; b < 21; ++b) {
    const int i = p2p_ll_op(ops.data(), k, b, 512, cap, &part, &parts);
    ASSERT_GE(i, 0) << b;
    EXPECT_EQ(part, seen[i]++) << b;
    EXPECT_EQ(parts, i == 2 ? 1 : 10) << b;
  }
  EXPECT_EQ(seen[0], 10);
  EXPECT_EQ(seen[1], 10);
  EXPECT_EQ(seen[2], 1);
  EXPECT_EQ(p2p_ll_op(ops.data(), k, 21, 512, cap, &part, &parts), -1);
  // The whole launch stays within the co-resident limit.
  for (int nops = 1; nops <= kMaxP2pOps; ++nops) {
    const std::vector<Op> many(static_cast<size_t>(nops), Op{1, true, m, false});
    EXPECT_LE(p2p_ll_grid(many.data(), nops, 512, cap), std::max(kP2pLLBlocks, nops)) << nops;
  }
}

TEST(P2pLL, LaunchThreadsFollowTheLargestOperation) {
  auto threads = [](std::vector<size_t> sizes) {
    std::vector<Op> ops;
    for (size_t b : sizes) ops.push_back(Op{1, true, b, true});
    return p2p_threads(ops.data(), static_cast<int>(ops.size()), 512, p2p_ll_capacity(2));
  };
  EXPECT_EQ(threads({}), 32);
  // LL: a thread per 8-byte unit.
  EXPECT_EQ(threads({8}), 32);
  EXPECT_EQ(threads({256}), 32);
  EXPECT_EQ(threads({264}), 64);
  EXPECT_EQ(threads({size_t{64} << 10}), 512);
  // FIFO: a thread per 16 bytes of a channel's share (4097 here: 257 threads, 288 in warps).
  EXPECT_EQ(threads({(size_t{64} << 10) + 16}), 288);
  EXPECT_EQ(threads({8, (size_t{64} << 10) + 16, 100}), 288);  // the largest need decides
  EXPECT_EQ(threads({size_t{128} << 10}), 512);
  EXPECT_EQ(threads({size_t{1} << 30}), 512);
  for (size_t b = 1; b < (size_t{1} << 20); b = b * 3 + 1) EXPECT_EQ(threads({b}) % 32, 0) << b;
}

TEST(P2pRendezvous, EveryOfferIsReadAsMadeInAnyOrder) {
  for (int n : {1, 2, 3, 5})
    for (int blocks : {1, 2, 4})
      for (uint32_t seed = 1; seed <= 20; ++seed) {
        Model m(n, 12, blocks, true, seed);
        ASSERT_TRUE(m.run()) << "n=" << n << " blocks=" << blocks << " seed=" << seed << ": "
                             << m.error;
      }
  // Near-full groups one way, with and without windows: two launches' offers overrun the ring,
  // so the receiver must wait for the sender's reads.
  for (int window : {0, 2, 4})
    for (int slow : {-1, 3})
      for (uint32_t seed = 1; seed <= 20; ++seed) {
        Model m(2, 12, 4, true, seed, true, window);
        m.slow = slow;  // 3: a copy-only block of the sender reads last whenever it can
        ASSERT_TRUE(m.run()) << "one way, window=" << window << " slow=" << slow << " seed=" << seed
                             << ": " << m.error;
      }
}

TEST(P2pRendezvous, WithoutTheRingsWaitAnOfferIsOverwritten) {
  // The model can fail: a receiver that posts without waiting for the sender's reads overwrites
  // offers a slow copy-only block has yet to read (FIFO receives complete once the channel
  // blocks have read; up to kMaxP2pOps - 2 offers a launch).
  int caught = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    Model m(2, 12, 4, false, seed, true, 0);
    m.slow = 3;
    caught += !m.run() && m.error.find("read offer") != std::string::npos;
  }
  EXPECT_GT(caught, 0);
}

TEST(P2pRendezvous, ACopyEngineSendSplitsIntoHeadAndTailOnce) {
  // GICL_P2P_COPY_ENGINE_SHARE: the copy engine takes the tail (whole 16-byte units, all of it at
  // 100 %), the blocks' shares cover the head once, and the two meet without gap or overlap.
  for (size_t bytes :
       {kP2pRendezvousFrom, kP2pRendezvousFrom + 5, (size_t{3} << 20) + 7, (size_t{1} << 30) + 1})
    for (int share = 1; share <= 100; ++share) {
      const size_t ce = p2p_ce_bytes(bytes, share), head = bytes - ce;
      ASSERT_LE(ce, bytes);
      if (share == 100) {
        ASSERT_EQ(ce, bytes);
        continue;
      }
      ASSERT_EQ(ce % 16, 0u) << bytes << " at " << share << " %";
      // Within a unit and a percent of the share asked for.
      ASSERT_LE(ce, bytes * share / 100);
      ASSERT_GE(ce + 16 + bytes / 100, bytes * share / 100) << bytes << " at " << share << " %";
      size_t next = 0;
      for (int part = 0; part < kP2pBlocks; ++part) {
        size_t lo, len;
        p2p_share(head, kP2pBlocks, part, &lo, &len);
        ASSERT_EQ(lo, next);
        next = lo + len;
      }
      ASSERT_EQ(next, head);
    }
}

}  // namespace
}  // namespace gicl::coll
