// SPDX-License-Identifier: Apache-2.0
// The proxy's request ring with host threads as producers (the same header-only code kernels
// run, with a host memory policy): every field round-trips in short and long form (host FIFO
// operations, inline puts and fetching atomics too), a slot is read only once all its words carry
// the ticket's lap, producers wait for room and never overwrite, many producers lose, duplicate and
// reorder nothing, and every fetching operation reads its own answer however the proxy orders them.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "gicl/device/detail/proxy_ring.h"
#include "proxy/host_ring.hpp"
#include "proxy/ring_reader.hpp"

namespace gicl::proxy {
namespace {

uint64_t post_transfer(HostRing& r, HostMem& m, ProxyOp op, uint32_t peer, uint64_t dst,
                       uint64_t src, uint64_t bytes) {
  return host_put(r, m, op, peer, dst, src, bytes);
}

TEST(ProxyRing, EveryFieldRoundTripsInShortAndLongForm) {
  const uint64_t offsets[] = {0, 1, kProxyShortOffsetLimit - 1, kProxyShortOffsetLimit,
                              kProxyPayloadMask};
  const uint64_t sizes[] = {0, 1, kProxyShortBytesLimit - 1, kProxyShortBytesLimit,
                            kProxyPayloadMask};
  const uint64_t values[] = {0, 1, kProxyPayloadMask, kProxyCommitBit, ~uint64_t{0}};
  const uint32_t peers[] = {0, 1, kProxyAllPeers - 1};
  HostRing r(64);
  RingReader rd = r.reader();
  HostMem m;
  int checked = 0;
  for (uint64_t dst : offsets)
    for (uint64_t bytes : sizes)
      for (uint64_t value : values)
        for (uint32_t peer : peers) {
          const uint64_t src = offsets[(checked + 3) % 5];
          const uint64_t signal = offsets[(checked + 1) % 5];
          uint64_t w[2 * kProxyMaxSlots];
          const bool add = checked & 1;
          const uint32_t n = proxy_encode_put_signal(w, add, peer, dst, src, bytes, signal, value);
          const uint32_t expect_slots =
              (dst < kProxyShortOffsetLimit && src < kProxyShortOffsetLimit &&
                       bytes < kProxyShortBytesLimit
                   ? 1
                   : 2) +
              (signal < kProxyShortOffsetLimit && value <= kProxyPayloadMask ? 1 : 2);
          ASSERT_EQ(n, expect_slots);
          const uint64_t t = proxy_post(r.ring, w, n, m);
          ProxyRequest q{};
          uint64_t ticket = 0;
          ASSERT_TRUE(rd.next(&q, &ticket));
          EXPECT_EQ(ticket, t);
          EXPECT_EQ(q.op, add ? ProxyOp::kPutSignalAdd : ProxyOp::kPutSignalSet);
          EXPECT_EQ(q.slots, n);
          EXPECT_EQ(q.peer, peer);
          EXPECT_EQ(q.dst, dst);
          EXPECT_EQ(q.src, src);
          EXPECT_EQ(q.bytes, bytes);
          EXPECT_EQ(q.signal, signal);
          EXPECT_EQ(q.value, value);
          rd.complete(ticket);
          ++checked;
        }
  EXPECT_EQ(checked, 5 * 5 * 5 * 3);
  EXPECT_EQ(rd.done(), rd.position());
  EXPECT_EQ(r.done, rd.position());
}

// Atomic updates: two slots carrying the update, the width, the word's offset and all 64 bits of
// the operand, read back whole.
TEST(ProxyRing, AtomicUpdatesRoundTrip) {
  HostRing r(16);
  RingReader rd = r.reader();
  HostMem m;
  const uint64_t words[] = {0, 8, kProxyShortOffsetLimit, kProxyPayloadMask & ~uint64_t{7}};
  const uint64_t values[] = {0, 1, kProxyPayloadMask, kProxyCommitBit, ~uint64_t{0}};
  int checked = 0;
  for (uint32_t k = 0; k < kProxyAtomicCount; ++k)
    for (uint32_t width : {4u, 8u})
      for (uint64_t word : words)
        for (uint64_t value : values) {
          const auto kind = static_cast<ProxyAtomic>(k);
          const uint32_t peer = (checked * 7) % kProxyAllPeers;
          const uint64_t t = host_atomic(r, m, kind, width, peer, word, value);
          ProxyRequest q{};
          uint64_t ticket = 0;
          ASSERT_TRUE(rd.next(&q, &ticket));
          EXPECT_EQ(ticket, t);
          EXPECT_EQ(q.op, ProxyOp::kAtomic);
          EXPECT_EQ(q.slots, 2u);
          EXPECT_EQ(q.peer, peer);
          EXPECT_EQ(q.atomic, kind);
          EXPECT_EQ(q.bytes, width);
          EXPECT_EQ(q.signal, word);
          EXPECT_EQ(q.value, value);
          rd.complete(ticket);
          ++checked;
        }
  EXPECT_EQ(checked, 5 * 2 * 4 * 5);
}

// Inline puts: two slots carrying the destination, the byte count and all 64 bits of the data
// (the top one in word 1 beside the inline flag), then a signal in short or long form; read back
// as inline with no source, and a long-form put of the largest byte count is not read as one.
TEST(ProxyRing, InlinePutsRoundTripWithAndWithoutASignal) {
  HostRing r(16);
  RingReader rd = r.reader();
  HostMem m;
  const uint64_t offsets[] = {0, 3, kProxyShortOffsetLimit, kProxyPayloadMask};
  const uint64_t data[] = {0, 0xab, kProxyPayloadMask, kProxyCommitBit, ~uint64_t{0}};
  int checked = 0;
  for (uint32_t bytes = 1; bytes <= kProxyInlineMax; ++bytes)
    for (uint64_t dst : offsets)
      for (uint64_t d : data)
        for (int form = 0; form < 3; ++form) {  // no signal, a set in short form, an add in long
          const uint64_t bits = bytes == 8 ? d : d & ((uint64_t{1} << (8 * bytes)) - 1);
          const uint32_t peer = (checked * 13) % kProxyAllPeers;
          const uint64_t signal = form == 2 ? kProxyShortOffsetLimit : 64;
          const uint64_t value = form == 2 ? ~uint64_t{0} : 5;
          uint64_t w[2 * kProxyMaxSlots];
          const uint32_t n =
              form == 0
                  ? proxy_encode_inline(w, ProxyOp::kPut, peer, dst, bits, bytes)
                  : proxy_encode_inline_signal(w, form == 2, peer, dst, bits, bytes, signal, value);
          ASSERT_EQ(n, form == 0 ? 2u : form == 1 ? 3u : 4u);
          const uint64_t t = proxy_post(r.ring, w, n, m);
          ProxyRequest q{};
          uint64_t ticket = 0;
          ASSERT_TRUE(rd.next(&q, &ticket));
          EXPECT_EQ(ticket, t);
          EXPECT_EQ(q.op, form == 0   ? ProxyOp::kPut
                          : form == 1 ? ProxyOp::kPutSignalSet
                                      : ProxyOp::kPutSignalAdd);
          EXPECT_EQ(q.slots, n);
          EXPECT_EQ(q.peer, peer);
          EXPECT_TRUE(q.inlined);
          EXPECT_EQ(q.bytes, bytes);
          EXPECT_EQ(q.dst, dst);
          EXPECT_EQ(q.data, bits);
          EXPECT_EQ(q.src, 0u);
          if (form != 0) {
            EXPECT_EQ(q.signal, signal);
            EXPECT_EQ(q.value, value);
          }
          rd.complete(ticket);
          ++checked;
        }
  EXPECT_EQ(checked, 8 * 4 * 5 * 3);
  post_transfer(r, m, ProxyOp::kPut, 1, 8, 16, kProxyPayloadMask);
  ProxyRequest q{};
  uint64_t ticket = 0;
  ASSERT_TRUE(rd.next(&q, &ticket));
  EXPECT_FALSE(q.inlined);
  EXPECT_EQ(q.bytes, kProxyPayloadMask);
  EXPECT_EQ(q.src, 16u);
}

// Fetching atomics: three slots carrying the update, the width, the word, all 64 bits of the
// operand and of the compare value, and the result ticket, read back whole.
TEST(ProxyRing, FetchingAtomicsRoundTrip) {
  HostRing r(16);
  RingReader rd = r.reader();
  HostMem m;
  const uint64_t words[] = {0, 8, kProxyShortOffsetLimit, kProxyPayloadMask & ~uint64_t{7}};
  const uint64_t values[] = {0, 1, kProxyPayloadMask, kProxyCommitBit, ~uint64_t{0}};
  int checked = 0;
  for (uint32_t k = 0; k < kProxyFetchCount; ++k)
    for (uint32_t width : {4u, 8u})
      for (uint64_t word : words)
        for (uint64_t value : values) {
          const auto kind = static_cast<ProxyAtomic>(k);
          const uint32_t peer = (checked * 7) % kProxyAllPeers;
          const uint64_t compare = values[(checked + 2) % 5];
          // A result ticket has 63 bits.
          const uint64_t result = checked % 2 ? checked : kProxyPayloadMask - checked;
          uint64_t w[2 * kProxyMaxSlots];
          const uint32_t n = proxy_encode_fetch(w, peer, kind, width, word, value, compare, result);
          ASSERT_EQ(n, 3u);
          const uint64_t t = proxy_post(r.ring, w, n, m);
          ProxyRequest q{};
          uint64_t ticket = 0;
          ASSERT_TRUE(rd.next(&q, &ticket));
          EXPECT_EQ(ticket, t);
          EXPECT_EQ(q.op, ProxyOp::kFetch);
          EXPECT_EQ(q.slots, 3u);
          EXPECT_EQ(q.peer, peer);
          EXPECT_EQ(q.atomic, kind);
          EXPECT_EQ(q.bytes, width);
          EXPECT_EQ(q.signal, word);
          EXPECT_EQ(q.value, value);
          EXPECT_EQ(q.compare, compare);
          EXPECT_EQ(q.result, result);
          rd.complete(ticket);
          ++checked;
        }
  EXPECT_EQ(checked, 7 * 2 * 4 * 5);
}

// Result slots: 8 threads each post 500 fetching operations into a ring with 4 result slots,
// waiting for each answer; a stand-in proxy holds up to 16 operations and answers them in
// reverse (a slot's next user may be posted while the one before waits). Every thread reads the
// answer meant for it (its value encodes the thread and the sequence number), none is lost.
TEST(ProxyRing, EveryFetchingOperationReadsItsOwnAnswer) {
  constexpr int kThreads = 8, kEach = 500;
  HostRing r(64);
  r.ring.results_size = 4;
  RingReader rd = r.reader();
  std::atomic<bool> stop{false};
  std::thread proxy([&] {
    std::vector<std::pair<uint64_t, ProxyRequest>> held;
    auto answer = [&] {
      for (auto it = held.rbegin(); it != held.rend(); ++it) {
        ProxyResult& slot = r.results[it->second.result & (r.ring.results_size - 1)];
        __atomic_store_n(&slot.value, it->second.value * 3 + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&slot.seq, it->second.result + 1, __ATOMIC_RELEASE);
        rd.complete(it->first);
      }
      held.clear();
    };
    while (!stop.load(std::memory_order_acquire)) {
      ProxyRequest q{};
      uint64_t t = 0;
      if (rd.next(&q, &t)) {
        held.emplace_back(t, q);
        if (held.size() < 16) continue;
      }
      rd.publish_tail(true);
      answer();
    }
  });
  std::vector<int> wrong(kThreads, 0), failed(kThreads, 0);
  std::vector<std::thread> producers;
  for (int k = 0; k < kThreads; ++k)
    producers.emplace_back([&, k] {
      HostMem m;
      for (int i = 0; i < kEach; ++i) {
        const uint64_t value = uint64_t(k) << 32 | uint64_t(i);
        uint64_t old = 0;
        if (!host_fetch(r, m, ProxyAtomic::kAdd, 8, 0, 0, value, 0, &old))
          ++failed[k];
        else if (old != value * 3 + 1)
          ++wrong[k];
      }
    });
  for (auto& t : producers) t.join();
  stop.store(true, std::memory_order_release);
  proxy.join();
  for (int k = 0; k < kThreads; ++k) {
    EXPECT_EQ(failed[k], 0) << "thread " << k;
    EXPECT_EQ(wrong[k], 0) << "thread " << k;
  }
  EXPECT_EQ(r.result_next, uint64_t{kThreads} * kEach);
}

// A ring set: the default queue pair on ring 0, created ones round-robin over the queue-pair
// rings (never ring 0 nor the arrivals' last ring).
TEST(ProxyRing, QueuePairsMapRoundRobinOverTheirRings) {
  for (uint32_t count = 3; count <= kProxyMaxRings; ++count) {
    EXPECT_EQ(proxy_qp_ring(0, count), 0u);
    EXPECT_EQ(proxy_arrival_ring(count), count - 1);
    for (uint32_t id = 1; id < 100; ++id) {
      const uint32_t ring = proxy_qp_ring(id, count);
      EXPECT_GE(ring, 1u);
      EXPECT_LE(ring, count - 2);
      EXPECT_EQ(ring, proxy_qp_ring(id + count - 2, count)) << "id " << id << " of " << count;
      if (id > 1 && count > 3) {
        EXPECT_NE(ring, proxy_qp_ring(id - 1, count));
      }
    }
  }
}

// Host FIFO operations: one slot carrying the slot (or lane) index and the byte count, read back
// whole for every peer, index and size the encoding holds.
TEST(ProxyRing, HostFifoOperationsRoundTrip) {
  HostRing r(16);
  RingReader rd = r.reader();
  HostMem m;
  int checked = 0;
  for (ProxyOp op : {ProxyOp::kFifoSend, ProxyOp::kFifoCredit})
    for (uint32_t peer : {0u, 7u, kProxyAllPeers - 1})
      for (uint32_t index : {0u, 63u, 0x7fffu})
        for (uint64_t bytes : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 20, kProxyPayloadMask}) {
          const uint64_t t = host_fifo(r, m, op, peer, index, bytes);
          ASSERT_NE(t, ~uint64_t{0});
          ProxyRequest q{};
          uint64_t ticket = 0;
          bool bad = false;
          ASSERT_TRUE(rd.next(&q, &ticket, &bad));
          EXPECT_FALSE(bad);
          EXPECT_EQ(ticket, t);
          EXPECT_EQ(q.op, op);
          EXPECT_EQ(q.slots, 1u);
          EXPECT_EQ(q.peer, peer);
          EXPECT_EQ(q.dst, index);
          EXPECT_EQ(q.bytes, bytes);
          rd.complete(ticket);
          ++checked;
        }
  EXPECT_EQ(checked, 2 * 3 * 3 * 4);
  EXPECT_EQ(rd.done(), rd.position());
}

TEST(ProxyRing, AnOperationIsReadOnlyOnceEveryWordIsCommitted) {
  HostRing r(8);
  RingReader rd = r.reader();
  uint64_t w[2 * kProxyMaxSlots];
  const uint32_t n = proxy_encode_signal(w, ProxyOp::kSignalAdd, 3, kProxyPayloadMask, 7);
  ASSERT_EQ(n, 2u);
  ProxyRequest q{};
  uint64_t ticket = 0;
  // Write the words one at a time in an order a weakly ordered producer could show them.
  const int order[] = {3, 0, 2, 1};
  for (int k = 0; k < 4; ++k) {
    EXPECT_FALSE(rd.next(&q, &ticket)) << "read with " << k << " of 4 words written";
    const int i = order[k];
    r.slots[i / 2].w[i % 2] = proxy_word(w[i], i / 2, r.ring.size);
  }
  ASSERT_TRUE(rd.next(&q, &ticket));
  EXPECT_EQ(q.op, ProxyOp::kSignalAdd);
  EXPECT_EQ(q.signal, kProxyPayloadMask);
  EXPECT_EQ(q.value, 7u);
  EXPECT_EQ(rd.position(), 2u);
}

TEST(ProxyRing, TheLastLapsWordsAreNotReadAsNewOnes) {
  HostRing r(4);
  RingReader rd = r.reader();
  HostMem m;
  ProxyRequest q{};
  uint64_t ticket = 0;
  for (int i = 0; i < 4; ++i) {
    ASSERT_NE(post_transfer(r, m, ProxyOp::kPut, 1, 64 * i, 0, 8), ~uint64_t{0});
    ASSERT_TRUE(rd.next(&q, &ticket));
  }
  // The slots still hold lap 0; lap 1 reads none of them until a producer writes it.
  EXPECT_FALSE(rd.next(&q, &ticket));
  rd.publish_tail(true);
  EXPECT_EQ(r.tail, 4u);
  ASSERT_NE(post_transfer(r, m, ProxyOp::kGet, 2, 5, 6, 7), ~uint64_t{0});
  ASSERT_TRUE(rd.next(&q, &ticket));
  EXPECT_EQ(ticket, 4u);
  EXPECT_EQ(q.op, ProxyOp::kGet);
  EXPECT_EQ(q.peer, 2u);
  EXPECT_FALSE(rd.next(&q, &ticket));
}

TEST(ProxyRing, AFullRingMakesTheProducerWaitAndGiveUpAtItsDeadline) {
  HostRing r(8);
  HostMem m;
  m.patience = std::chrono::milliseconds(50);
  for (int i = 0; i < 8; ++i) ASSERT_NE(post_transfer(r, m, ProxyOp::kPut, 0, i, 0, 1), ~0ull);
  const std::vector<ProxySlot> before = r.slots;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(post_transfer(r, m, ProxyOp::kPut, 0, 99, 0, 1), ~uint64_t{0});
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));
  for (size_t i = 0; i < before.size(); ++i) {  // nothing overwritten
    EXPECT_EQ(r.slots[i].w[0], before[i].w[0]) << "slot " << i;
    EXPECT_EQ(r.slots[i].w[1], before[i].w[1]) << "slot " << i;
  }
}

TEST(ProxyRing, AWaitingProducerWritesOnceTheProxyPublishesRoom) {
  HostRing r(8);
  RingReader rd = r.reader();
  HostMem m;
  for (int i = 0; i < 8; ++i) ASSERT_NE(post_transfer(r, m, ProxyOp::kPut, 0, i, 0, 1), ~0ull);
  std::atomic<uint64_t> posted{~uint64_t{0}};
  std::thread producer([&] { posted = post_transfer(r, m, ProxyOp::kPut, 0, 1234, 0, 1); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(posted.load(), ~uint64_t{0}) << "posted into a full ring";
  ProxyRequest q{};
  uint64_t ticket = 0;
  ASSERT_TRUE(rd.next(&q, &ticket));  // consumes slot 0 and publishes nothing yet (< size / 4)
  ASSERT_TRUE(rd.next(&q, &ticket));  // 2 of 8: publishes
  producer.join();
  EXPECT_EQ(posted.load(), 8u);
  for (int i = 2; i < 8; ++i) ASSERT_TRUE(rd.next(&q, &ticket));
  ASSERT_TRUE(rd.next(&q, &ticket));
  EXPECT_EQ(ticket, 8u);
  EXPECT_EQ(q.dst, 1234u);
}

TEST(ProxyRing, DoneAdvancesOnlyPastOperationsCompletedWithAllBeforeThem) {
  HostRing r(16);
  RingReader rd = r.reader();
  HostMem m;
  std::vector<uint64_t> tickets;
  for (int i = 0; i < 4; ++i) {
    // alternate 1- and 2-slot operations
    post_transfer(r, m, ProxyOp::kPut, 0, i & 1 ? kProxyShortOffsetLimit : 0, 0, 1);
    ProxyRequest q{};
    uint64_t t = 0;
    ASSERT_TRUE(rd.next(&q, &t));
    tickets.push_back(t);
  }
  ASSERT_EQ(tickets, (std::vector<uint64_t>{0, 1, 3, 4}));
  rd.complete(tickets[2]);
  rd.complete(tickets[1]);
  EXPECT_EQ(r.done, 0u);
  rd.complete(tickets[0]);
  EXPECT_EQ(r.done, 4u);    // through the third operation (tickets 3..3)
  rd.complete(tickets[0]);  // a repeated completion changes nothing
  EXPECT_EQ(r.done, 4u);
  rd.complete(tickets[3]);
  EXPECT_EQ(r.done, 6u);
  EXPECT_EQ(rd.outstanding(), 0u);
}

uint64_t stress_count(uint64_t fallback) {
  const char* v = std::getenv("GICL_TEST_RING_STRESS");
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

// Producers tag each operation with their id (peer) and sequence number (dst); one consumer checks
// that each producer's sequence arrives complete and in order, and completes operations out of
// order to drive `done`. 10^7 operations by default; GICL_TEST_RING_STRESS sets another total.
TEST(ProxyRing, ManyProducersLoseDuplicateAndReorderNothing) {
  const int producers = 8;
  const uint64_t total = stress_count(10'000'000);
  const uint64_t each = total / producers;
  HostRing r(256);
  RingReader rd = r.reader();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      HostMem m;
      for (uint64_t s = 0; s < each; ++s) {
        // Every fourth operation in long form (2 slots) to straddle the ring's end.
        const uint64_t src = (s & 3) == 3 ? kProxyShortOffsetLimit + s : s;
        if (post_transfer(r, m, ProxyOp::kPut, p, s, src, s & 1023) == ~uint64_t{0}) {
          failures++;
          return;
        }
      }
    });
  std::vector<uint64_t> next(producers, 0);
  std::vector<uint64_t> pending;
  std::mt19937_64 rng(42);
  uint64_t got = 0;
  bool ok = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (got < each * producers && ok) {
    ProxyRequest q{};
    uint64_t t = 0;
    if (!rd.next(&q, &t)) {
      rd.publish_tail(true);
      while (!pending.empty()) {
        rd.complete(pending.back());
        pending.pop_back();
      }
      if (std::chrono::steady_clock::now() > deadline || failures.load() != 0) break;
      std::this_thread::yield();
      continue;
    }
    const uint64_t s = q.dst;
    if (q.op != ProxyOp::kPut || q.peer >= static_cast<uint32_t>(producers) || s != next[q.peer] ||
        q.bytes != (s & 1023) || q.src != ((s & 3) == 3 ? kProxyShortOffsetLimit + s : s)) {
      ADD_FAILURE() << "ticket " << t << ": producer " << q.peer << " seq " << s << " expected "
                    << (q.peer < static_cast<uint32_t>(producers) ? next[q.peer] : 0);
      ok = false;
      break;
    }
    ++next[q.peer];
    ++got;
    pending.push_back(t);
    if (pending.size() == 8) {  // complete a batch in a shuffled order
      std::shuffle(pending.begin(), pending.end(), rng);
      for (uint64_t x : pending) rd.complete(x);
      pending.clear();
    }
  }
  for (uint64_t x : pending) rd.complete(x);
  if (!ok || failures.load() != 0) r.tail = ~uint64_t{0} >> 1;  // release any waiting producer
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(got, each * producers);
  for (int p = 0; p < producers; ++p) EXPECT_EQ(next[p], each) << "producer " << p;
  ProxyRequest q{};
  uint64_t t = 0;
  EXPECT_FALSE(rd.next(&q, &t)) << "an operation nobody posted";
  EXPECT_EQ(r.done, rd.position());
  EXPECT_EQ(rd.position(), r.head);
}

}  // namespace
}  // namespace gicl::proxy
