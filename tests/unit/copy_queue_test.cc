// SPDX-License-Identifier: Apache-2.0
// The copy-engine proxy's queue (src/proxy/copy_queue.h) between two threads: a poster that does
// what the kernel's copy_post does (wait until copy_reuse_after(seq) is complete, write the fields,
// publish the number with a release store) and a taker that does what the proxy thread does
// (copy_take, then report the request complete). Every request must be taken once, in order,
// with its own fields, whatever the ring size; a poster that skips the reuse wait must be caught
// as an overrun, not taken as a wrong copy.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "proxy/copy_take.hpp"

namespace gicl {
namespace {

uint64_t field(uint64_t seq, uint64_t k) {
  return seq * 0x9E3779B97F4A7C15ull + k;
}

struct Queue {
  explicit Queue(uint32_t n) : ring(n), slots(n) {}
  std::vector<CopyRequest> ring;
  uint32_t slots;
  std::atomic<uint64_t> done{0};
  std::atomic<bool> abandoned{false};  // the taker gave up: the poster stops waiting
};

void post_all(Queue& q, uint64_t n, bool wait_for_reuse) {
  for (uint64_t seq = 1; seq <= n; ++seq) {
    if (wait_for_reuse)
      while (q.done.load(std::memory_order_acquire) < copy_reuse_after(seq, q.slots)) {
        if (q.abandoned.load(std::memory_order_relaxed)) return;
        std::this_thread::yield();
      }
    CopyRequest& s = q.ring[copy_slot(seq, q.slots)];
    __atomic_store_n(&s.dst, field(seq, 0), __ATOMIC_RELAXED);
    __atomic_store_n(&s.src, field(seq, 1), __ATOMIC_RELAXED);
    __atomic_store_n(&s.bytes, field(seq, 2), __ATOMIC_RELAXED);
    __atomic_store_n(&s.seq, seq, __ATOMIC_RELEASE);
  }
}

/// Takes requests 1..n; returns the first request that went wrong (0: none) and why. Giving up
/// releases the poster, so a failure is reported rather than left waiting.
uint64_t take_all(Queue& q, uint64_t n, CopyTake* why) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  auto give_up = [&](uint64_t at) {
    q.abandoned.store(true, std::memory_order_relaxed);
    return at;
  };
  for (uint64_t next = 1; next <= n;) {
    CopyRequest r{};
    *why = copy_take(q.ring.data(), q.slots, next, &r);
    if (*why == CopyTake::kOverrun) return give_up(next);
    if (*why == CopyTake::kEmpty) {
      if (std::chrono::steady_clock::now() > deadline) return give_up(next);
      std::this_thread::yield();
      continue;
    }
    if (r.seq != next || r.dst != field(next, 0) || r.src != field(next, 1) ||
        r.bytes != field(next, 2))
      return give_up(next);
    q.done.store(next, std::memory_order_release);
    ++next;
  }
  *why = CopyTake::kReady;
  return 0;
}

TEST(CopyQueue, EveryRequestIsTakenOnceInOrderWithItsOwnFields) {
  for (uint32_t slots : {1u, 2u, 3u, 64u}) {
    // On the smallest rings every request is a hand-over between the threads, which takes a
    // scheduler slice each where the two cores are busy with other work (CI builds beside it).
    const uint64_t requests = slots < 64 ? 5000 : 50000;
    Queue q(slots);
    std::thread poster([&] { post_all(q, requests, true); });
    CopyTake why = CopyTake::kEmpty;
    const uint64_t bad = take_all(q, requests, &why);
    poster.join();
    EXPECT_EQ(bad, 0u) << slots << " slots: request " << bad << " went wrong (take "
                       << static_cast<int>(why) << ")";
  }
}

TEST(CopyQueue, APosterThatSkipsTheReuseWaitIsCaughtAsAnOverrun) {
  // Every request posted before the proxy looks: the ring holds only the last four.
  Queue q(4);
  post_all(q, 10, false);
  CopyTake why = CopyTake::kEmpty;
  EXPECT_EQ(take_all(q, 10, &why), 1u);
  EXPECT_EQ(why, CopyTake::kOverrun);
}

TEST(CopyQueue, SlotArithmetic) {
  EXPECT_EQ(copy_slot(1, 64), 0u);
  EXPECT_EQ(copy_slot(64, 64), 63u);
  EXPECT_EQ(copy_slot(65, 64), 0u);
  EXPECT_EQ(copy_reuse_after(64, 64), 0u);  // the ring's first round reuses nothing
  EXPECT_EQ(copy_reuse_after(65, 64), 1u);  // request 65 takes request 1's slot
}

}  // namespace
}  // namespace gicl
