// SPDX-License-Identifier: Apache-2.0
// The network backends' shared bookkeeping: flushes fire exactly when every earlier operation to
// their peer completed, whatever the completion order; failures and expiries fail the peer's
// flushes; an expired slot is not reused before the provider gives it back.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

#include "net/op_table.hpp"

namespace gicl::net {
namespace {

std::vector<Event> drain(OpTable& t) {
  std::vector<Event> out(t.ready());
  out.resize(t.take(out.data(), static_cast<int>(out.size())));
  return out;
}

TEST(NetOpTable, AFlushWithNothingOutstandingFiresAtOnce) {
  OpTable t;
  t.init(2, 8);
  t.flush(1, 77);
  auto ev = drain(t);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].cookie, 77u);
  EXPECT_EQ(ev[0].peer, 1);
  EXPECT_EQ(ev[0].status, GICL_SUCCESS);
}

TEST(NetOpTable, AFlushWaitsForTheLastEarlierCompletionInAnyOrder) {
  OpTable t;
  t.init(2, 8);
  const int a = t.begin(0, 1, 0), b = t.begin(0, 2, 0), c = t.begin(0, 3, 0);
  t.flush(0, 100);
  const int later = t.begin(0, 4, 0);  // posted after the flush: not waited for
  t.complete(c, GICL_SUCCESS, 0);
  t.complete(a, GICL_SUCCESS, 0);
  auto ev = drain(t);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].cookie, 3u);
  EXPECT_EQ(ev[1].cookie, 1u);
  t.complete(b, GICL_SUCCESS, 0);
  ev = drain(t);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].cookie, 2u);
  EXPECT_EQ(ev[1].cookie, 100u) << "the flush fires right after the completion that allows it";
  EXPECT_EQ(t.inflight(), 1);
  t.complete(later, GICL_SUCCESS, 9);
  ev = drain(t);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].value, 9u);
}

TEST(NetOpTable, PeersAreIndependent) {
  OpTable t;
  t.init(3, 8);
  const int to1 = t.begin(1, 1, 0);
  t.flush(2, 50);
  auto ev = drain(t);
  ASSERT_EQ(ev.size(), 1u) << "rank 2's flush does not wait for rank 1's operation";
  EXPECT_EQ(ev[0].cookie, 50u);
  t.complete(to1, GICL_SUCCESS, 0);
}

TEST(NetOpTable, AFailedOperationFailsItsPeersFlushes) {
  OpTable t;
  t.init(2, 8);
  const int a = t.begin(1, 1, 0), b = t.begin(1, 2, 0);
  t.flush(1, 10);
  t.complete(b, GICL_REMOTE_ERROR, 0);
  auto ev = drain(t);
  ASSERT_EQ(ev.size(), 2u) << "the flush fails at once, without waiting for operation a";
  EXPECT_EQ(ev[0].status, GICL_REMOTE_ERROR);
  EXPECT_EQ(ev[1].cookie, 10u);
  EXPECT_EQ(ev[1].status, GICL_REMOTE_ERROR);
  t.flush(1, 11);
  ev = drain(t);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].status, GICL_REMOTE_ERROR);
  EXPECT_EQ(t.peer_status(1), GICL_REMOTE_ERROR);
  EXPECT_EQ(t.peer_status(0), GICL_SUCCESS);
  t.complete(a, GICL_SUCCESS, 0);
}

TEST(NetOpTable, ExpiredOperationsFailButKeepTheirSlotUntilTheProviderReturnsIt) {
  OpTable t;
  t.init(2, 2);
  const int64_t s = 1000000000;
  const int a = t.begin(1, 1, 0);
  const int b = t.begin(0, 2, 5 * s);
  t.flush(1, 20);
  EXPECT_EQ(t.expire(2 * s, 3 * s), 0) << "nothing is older than the timeout yet";
  EXPECT_EQ(t.expire(4 * s, 3 * s), 1);
  EXPECT_EQ(t.expired_peer(), 1);
  auto ev = drain(t);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].cookie, 1u);
  EXPECT_EQ(ev[0].status, GICL_TIMEOUT);
  EXPECT_EQ(ev[1].cookie, 20u);
  EXPECT_EQ(ev[1].status, GICL_TIMEOUT);
  EXPECT_TRUE(t.full()) << "the provider still owns the expired operation's context";
  t.complete(a, GICL_SUCCESS, 0);  // handed back late: no second event
  EXPECT_TRUE(drain(t).empty());
  EXPECT_FALSE(t.full());
  t.complete(b, GICL_SUCCESS, 0);
  EXPECT_EQ(drain(t).size(), 1u);
  EXPECT_EQ(t.inflight(), 0);
}

TEST(NetOpTable, CancelledPostsLeaveNoGap) {
  OpTable t;
  t.init(1, 4);
  const int a = t.begin(0, 1, 0);
  const int b = t.begin(0, 2, 0);
  t.cancel(b);  // refused by the provider
  t.flush(0, 30);
  EXPECT_TRUE(drain(t).empty());
  t.complete(a, GICL_SUCCESS, 0);
  auto ev = drain(t);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].cookie, 30u);
  EXPECT_EQ(t.inflight(), 0);
}

// A post that waits for the provider (FI_EAGAIN) until GICL_NET_TIMEOUT can see its own
// operation expire in the progress it runs meanwhile, and then gives the slot back: the slot is
// freed once, the peer's numbering stays whole, and the peer stays failed.
TEST(NetOpTable, AnOperationThatExpiredWhileItsPostWaitedIsCancelledOnce) {
  OpTable t;
  t.init(1, 2);
  const int64_t s = 1000000000;
  const int a = t.begin(0, 1, 0);
  EXPECT_EQ(t.expire(4 * s, 3 * s), 1);
  t.cancel(a);
  auto ev = drain(t);
  ASSERT_EQ(ev.size(), 1u) << "the expiry's event, and no other";
  EXPECT_EQ(ev[0].status, GICL_TIMEOUT);
  EXPECT_EQ(t.inflight(), 0);
  EXPECT_FALSE(t.full());
  const int b = t.begin(0, 2, 5 * s);
  t.complete(b, GICL_SUCCESS, 0);
  t.flush(0, 30);
  ev = drain(t);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].cookie, 2u);
  EXPECT_EQ(ev[1].cookie, 30u);
  EXPECT_EQ(ev[1].status, GICL_TIMEOUT) << "the peer failed at the expiry";
  EXPECT_EQ(t.inflight(), 0);
}

/// Random posts, flushes and completions against a model: each flush fires in the event stream
/// right after the last completion among the operations posted to its peer before it.
TEST(NetOpTable, RandomCompletionOrdersAgreeWithTheModel) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    const int peers = 1 + static_cast<int>(rng() % 4), cap = 1 + static_cast<int>(rng() % 16);
    OpTable t;
    t.init(peers, cap);
    std::vector<int> live;                         // slots in flight
    std::map<uint64_t, std::set<uint64_t>> waits;  // flush cookie -> op cookies it waits for
    std::map<uint64_t, int> flush_peer;
    std::map<int, uint64_t> cookie_of;  // slot -> op cookie
    std::map<uint64_t, int> peer_of;    // op cookie -> peer
    std::set<uint64_t> done;
    uint64_t next = 1;
    for (int step = 0; step < 2000; ++step) {
      const int what = static_cast<int>(rng() % 3);
      if (what == 0 && !t.full()) {
        const int peer = static_cast<int>(rng() % peers);
        const uint64_t c = next++;
        const int slot = t.begin(peer, c, 0);
        live.push_back(slot);
        cookie_of[slot] = c;
        peer_of[c] = peer;
      } else if (what == 1) {
        const int peer = static_cast<int>(rng() % peers);
        const uint64_t f = next++;
        for (int s : live)
          if (peer_of[cookie_of[s]] == peer) waits[f].insert(cookie_of[s]);
        waits[f];
        flush_peer[f] = peer;
        t.flush(peer, f);
      } else if (!live.empty()) {
        const size_t i = rng() % live.size();
        const int slot = live[i];
        live.erase(live.begin() + static_cast<long>(i));
        t.complete(slot, GICL_SUCCESS, 0);
      }
      for (const Event& e : drain(t)) {
        if (flush_peer.count(e.cookie) != 0) {
          for (uint64_t w : waits[e.cookie])
            ASSERT_TRUE(done.count(w)) << "flush " << e.cookie << " fired before op " << w;
          waits.erase(e.cookie);
        } else {
          done.insert(e.cookie);
        }
      }
      // A flush whose operations all completed must have fired already.
      for (const auto& [f, ops] : waits) {
        bool all = true;
        for (uint64_t w : ops) all = all && done.count(w) != 0;
        ASSERT_FALSE(all) << "flush " << f << " should have fired";
      }
    }
  }
}

}  // namespace
}  // namespace gicl::net
