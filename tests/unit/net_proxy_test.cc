// SPDX-License-Identifier: Apache-2.0
// The network proxy's ordering and failure rules, against a transport double that records what
// the proxy posts and completes each operation only when the test releases it (the order a real
// network may choose): a put's signal goes out only after every piece of the put is delivered, a
// fence holds the ring's later operations to that peer until the earlier ones complete, `done`
// follows completions, a bad request or a failed completion fails the proxy naming the peer and
// sets every ring's failed word, and an idle proxy sleeps instead of spinning a core.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "proxy/host_ring.hpp"
#include "proxy/net_proxy.hpp"

namespace gicl::proxy {
namespace {

using namespace std::chrono_literals;

/// What the proxy posted.
struct Posted {
  enum Kind { kWrite, kRead, kAtomic } kind;
  int peer;
  const void* local;
  uint64_t remote_offset;
  size_t bytes;
  net::AtomicOp op;
  uint64_t operand;
  uint64_t cookie;
};

/// A transport whose operations complete only when the test says so. Thread-safe: the proxy's
/// thread posts and polls while the test inspects and releases.
class HeldTransport : public net::Transport {
 public:
  explicit HeldTransport(size_t max_write) : max_write_(max_write) {}
  net::Backend backend() const override { return net::Backend::kNull; }
  std::string provider() const override { return "held"; }
  std::string describe() const override { return "held (test)"; }
  net::Caps caps() const override { return {false, true, max_write_, 8}; }
  size_t address_bytes() const override { return 8; }
  Status local_address(void*) const override { return GICL_SUCCESS; }
  Status connect(const void*, size_t) override { return GICL_SUCCESS; }
  Status register_memory(void*, size_t, net::MemKind, std::unique_ptr<net::Region>*) override {
    return GICL_FAIL(GICL_UNSUPPORTED, "held transport: no registration");
  }
  Status write(int peer, const net::Region&, const void* src, const net::RemoteKey&, uint64_t off,
               size_t bytes, uint64_t cookie) override {
    return add({Posted::kWrite, peer, src, off, bytes, net::AtomicOp::kAdd, 0, cookie});
  }
  Status write_imm(int peer, const net::Region& r, const void* src, const net::RemoteKey& k,
                   uint64_t off, size_t bytes, uint64_t, uint64_t cookie,
                   net::Completion) override {
    return write(peer, r, src, k, off, bytes, cookie);
  }
  Status read(int peer, const net::Region&, void* dst, const net::RemoteKey&, uint64_t off,
              size_t bytes, uint64_t cookie) override {
    return add({Posted::kRead, peer, dst, off, bytes, net::AtomicOp::kAdd, 0, cookie});
  }
  Status atomic(int peer, net::AtomicOp op, const net::RemoteKey&, uint64_t off, uint64_t operand,
                uint64_t, uint64_t cookie) override {
    return add({Posted::kAtomic, peer, nullptr, off, 8, op, operand, cookie});
  }
  Status flush(int, uint64_t) override { return GICL_FAIL(GICL_UNSUPPORTED, "not used"); }
  Status poll(net::Event* events, int max, int* count) override {
    std::lock_guard<std::mutex> lock(mu_);
    *count = 0;
    while (*count < max && !ready_.empty()) {
      events[(*count)++] = ready_.front();
      ready_.pop_front();
    }
    return GICL_SUCCESS;
  }
  int inflight() const override { return 0; }

  std::vector<Posted> posted() {
    std::lock_guard<std::mutex> lock(mu_);
    return posted_;
  }
  /// Completes posted operation `i` with `status`.
  void release(size_t i, gicl_result_t status = GICL_SUCCESS) {
    std::lock_guard<std::mutex> lock(mu_);
    net::Event e;
    e.status = status;
    e.peer = posted_.at(i).peer;
    e.cookie = posted_.at(i).cookie;
    ready_.push_back(e);
  }
  /// Waits until `n` operations have been posted; false after a second.
  bool wait_posted(size_t n) {
    for (auto until = std::chrono::steady_clock::now() + 1s;
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(100us))
      if (posted().size() >= n) return true;
    return false;
  }

 private:
  Status add(const Posted& p) {
    std::lock_guard<std::mutex> lock(mu_);
    posted_.push_back(p);
    return GICL_SUCCESS;
  }
  size_t max_write_;
  std::mutex mu_;
  std::vector<Posted> posted_;
  std::deque<net::Event> ready_;
};

/// A host "region" the proxy addresses the heap through.
class HostRegion : public net::Region {
 public:
  HostRegion(void* base, size_t bytes) {
    base_ = base;
    bytes_ = bytes;
  }
};

constexpr size_t kHeap = 1 << 16;

struct Rig {
  /// `sleep`: every idle sleep that long (0: the proxy's own sleeps).
  explicit Rig(size_t max_write = 1000, int rings = 1,
               std::chrono::microseconds sleep = std::chrono::microseconds(0))
      : transport(max_write), heap(kHeap), region(heap.data(), heap.size()) {
    for (int i = 0; i < rings; ++i) ring.push_back(std::make_unique<HostRing>(64));
    NetProxyArgs a;
    a.rank = 0;
    a.transport = &transport;
    a.heap.base = heap.data();
    a.heap.bytes = heap.size();
    a.heap.region = &region;
    a.heap.keys.assign(2, net::RemoteKey{net::RemoteKey::kVersion, 0, {}, 0, 0, kHeap});
    for (auto& r : ring) a.rings.push_back(r->view());
    if (sleep.count() > 0) a.first_sleep = a.max_sleep = sleep;
    EXPECT_TRUE(NetProxy::start(std::move(a), &proxy).ok()) << last_error();
  }
  /// Waits until ring `i`'s done word reaches `mark`; false after a second.
  bool done_reaches(uint64_t mark, int i = 0) {
    for (auto until = std::chrono::steady_clock::now() + 1s;
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(100us))
      if (__atomic_load_n(&ring[i]->done, __ATOMIC_ACQUIRE) >= mark) return true;
    return false;
  }
  HeldTransport transport;
  std::vector<char> heap;
  HostRegion region;
  std::vector<std::unique_ptr<HostRing>> ring;
  HostMem mem;
  std::unique_ptr<NetProxy> proxy;  // last: stopped before the rest goes
};

TEST(NetProxy, APutsSignalGoesOutOnlyAfterEveryPieceIsDelivered) {
  Rig rig(1000);
  ASSERT_NE(host_put_signal(*rig.ring[0], rig.mem, true, 1, 4096, 128, 2500, 64, 7), ~0ull);
  ASSERT_TRUE(rig.transport.wait_posted(3));
  std::this_thread::sleep_for(5ms);
  auto p = rig.transport.posted();
  ASSERT_EQ(p.size(), 3u) << "the signal went out with the put's pieces";
  size_t bytes = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(p[i].kind, Posted::kWrite);
    EXPECT_EQ(p[i].peer, 1);
    EXPECT_EQ(p[i].remote_offset, 4096u + 1000u * i);
    EXPECT_EQ(p[i].local, rig.heap.data() + 128 + 1000 * i);
    bytes += p[i].bytes;
  }
  EXPECT_EQ(bytes, 2500u);
  rig.transport.release(2);
  rig.transport.release(0);
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(rig.transport.posted().size(), 3u) << "signal posted with a piece undelivered";
  rig.transport.release(1);
  ASSERT_TRUE(rig.transport.wait_posted(4));
  p = rig.transport.posted();
  EXPECT_EQ(p[3].kind, Posted::kAtomic);
  EXPECT_EQ(p[3].op, net::AtomicOp::kAdd);
  EXPECT_EQ(p[3].remote_offset, 64u);
  EXPECT_EQ(p[3].operand, 7u);
  EXPECT_EQ(rig.ring[0]->done, 0u);
  rig.transport.release(3);
  EXPECT_TRUE(rig.done_reaches(2));  // a short put slot and a short signal slot
}

TEST(NetProxy, AFenceHoldsTheRingsLaterOperationsToThatPeer) {
  Rig rig;
  HostRing& r = *rig.ring[0];
  host_put(r, rig.mem, ProxyOp::kPut, 1, 0, 0, 8);
  host_fence(r, rig.mem, 1);
  host_signal(r, rig.mem, false, 1, 8, 42);  // a set: must not pass the put
  ASSERT_TRUE(rig.transport.wait_posted(1));
  std::this_thread::sleep_for(5ms);
  ASSERT_EQ(rig.transport.posted().size(), 1u) << "an operation passed the fence";
  rig.transport.release(0);
  ASSERT_TRUE(rig.transport.wait_posted(2));
  const Posted s = rig.transport.posted()[1];
  EXPECT_EQ(s.kind, Posted::kAtomic);
  EXPECT_EQ(s.op, net::AtomicOp::kSwap);
  EXPECT_EQ(s.operand, 42u);
  EXPECT_TRUE(rig.done_reaches(2));  // the put and the fence
  rig.transport.release(1);
  EXPECT_TRUE(rig.done_reaches(3));
}

TEST(NetProxy, AFenceToOnePeerLetsOperationsCompleteToOthersAndAllPeersWaitsForEvery) {
  Rig rig;
  HostRing& r = *rig.ring[0];
  host_put(r, rig.mem, ProxyOp::kPut, 0, 0, 0, 8);  // to peer 0 (self), left in flight
  host_fence(r, rig.mem, 1);                        // nothing in flight to peer 1: clear at once
  host_put(r, rig.mem, ProxyOp::kPut, 1, 0, 0, 8);
  ASSERT_TRUE(rig.transport.wait_posted(2));
  host_fence(r, rig.mem, kProxyAllPeers);
  host_put(r, rig.mem, ProxyOp::kGet, 1, 256, 512, 16);
  std::this_thread::sleep_for(5ms);
  ASSERT_EQ(rig.transport.posted().size(), 2u) << "passed a fence to every peer";
  rig.transport.release(1);
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(rig.transport.posted().size(), 2u) << "passed with peer 0's put in flight";
  rig.transport.release(0);
  ASSERT_TRUE(rig.transport.wait_posted(3));
  const Posted g = rig.transport.posted()[2];
  EXPECT_EQ(g.kind, Posted::kRead);
  EXPECT_EQ(g.local, rig.heap.data() + 256);
  EXPECT_EQ(g.remote_offset, 512u);
  rig.transport.release(2);
  EXPECT_TRUE(rig.done_reaches(5));
}

TEST(NetProxy, DoneFollowsCompletionsInAnyOrder) {
  Rig rig;
  HostRing& r = *rig.ring[0];
  for (int i = 0; i < 4; ++i) host_put(r, rig.mem, ProxyOp::kPut, 1, 64 * i, 0, 8);
  ASSERT_TRUE(rig.transport.wait_posted(4));
  rig.transport.release(3);
  rig.transport.release(1);
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(__atomic_load_n(&r.done, __ATOMIC_ACQUIRE), 0u);
  rig.transport.release(0);
  EXPECT_TRUE(rig.done_reaches(2));
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(__atomic_load_n(&r.done, __ATOMIC_ACQUIRE), 2u);
  rig.transport.release(2);
  EXPECT_TRUE(rig.done_reaches(4));
  EXPECT_TRUE(r.quiet(1000ms));
}

TEST(NetProxy, RingsAreServedIndependently) {
  Rig rig(1000, 2);
  host_put(*rig.ring[0], rig.mem, ProxyOp::kPut, 1, 0, 0, 8);
  host_fence(*rig.ring[0], rig.mem, 1);  // holds ring 0 only
  host_put(*rig.ring[0], rig.mem, ProxyOp::kPut, 1, 0, 0, 8);
  host_signal(*rig.ring[1], rig.mem, true, 1, 16, 1);
  ASSERT_TRUE(rig.transport.wait_posted(2));
  const auto p = rig.transport.posted();
  rig.transport.release(p[0].kind == Posted::kAtomic ? 0 : 1);  // ring 1's signal
  EXPECT_TRUE(rig.done_reaches(1, 1));
  EXPECT_EQ(rig.ring[0]->done, 0u);
}

TEST(NetProxy, ABadRequestFailsTheProxyNamingItAndEveryRingLearnsIt) {
  Rig rig(1000, 2);
  host_put(*rig.ring[0], rig.mem, ProxyOp::kPut, 7, 0, 0, 8);
  for (auto until = std::chrono::steady_clock::now() + 1s;
       rig.ring[1]->failed == 0 && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(100us);
  std::string why;
  EXPECT_EQ(rig.proxy->error(&why), GICL_INVALID_ARGUMENT);
  EXPECT_NE(why.find("peer 7 of 2 ranks"), std::string::npos) << why;
  EXPECT_EQ(__atomic_load_n(&rig.ring[0]->failed, __ATOMIC_ACQUIRE), 1u);
  EXPECT_EQ(__atomic_load_n(&rig.ring[1]->failed, __ATOMIC_ACQUIRE), 1u);
  EXPECT_FALSE(rig.ring[0]->quiet(100ms));
}

TEST(NetProxy, AnOffsetOutsideEitherHeapIsRefused) {
  for (const auto& [dst, src, bytes] : {std::tuple<uint64_t, uint64_t, uint64_t>{kHeap - 4, 0, 8},
                                        {0, kHeap, 1},
                                        {0, 0, kHeap + 1}}) {
    Rig rig;
    host_put(*rig.ring[0], rig.mem, ProxyOp::kPut, 1, dst, src, bytes);
    for (auto until = std::chrono::steady_clock::now() + 1s;
         rig.ring[0]->failed == 0 && std::chrono::steady_clock::now() < until;)
      std::this_thread::sleep_for(100us);
    std::string why;
    EXPECT_EQ(rig.proxy->error(&why), GICL_INVALID_ARGUMENT) << dst << " " << src << " " << bytes;
    EXPECT_NE(why.find("outside the heap"), std::string::npos) << why;
    EXPECT_TRUE(rig.transport.posted().empty());
  }
}

// The direct path reads every put from the heap: a request that brings its bytes inline (which
// kernels post only where the ring set allows them) is refused, naming it.
TEST(NetProxy, AnInlinePutIsRefusedWhereTheDeliveryReadsTheHeap) {
  Rig rig;
  uint64_t w[2 * kProxyMaxSlots];
  const uint32_t n = proxy_encode_inline(w, ProxyOp::kPut, 1, 0, 42, 8);
  ASSERT_NE(proxy_post(rig.ring[0]->ring, w, n, rig.mem), ~uint64_t{0});
  for (auto until = std::chrono::steady_clock::now() + 1s;
       rig.ring[0]->failed == 0 && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(100us);
  std::string why;
  EXPECT_EQ(rig.proxy->error(&why), GICL_INVALID_ARGUMENT);
  EXPECT_NE(why.find("with its bytes in the request: this path carries at most 0"),
            std::string::npos)
      << why;
  EXPECT_TRUE(rig.transport.posted().empty());
}

TEST(NetProxy, AFailedCompletionFailsTheProxyNamingThePeer) {
  Rig rig;
  host_put_signal(*rig.ring[0], rig.mem, false, 1, 0, 0, 8, 64, 1);
  ASSERT_TRUE(rig.transport.wait_posted(1));
  rig.transport.release(0, GICL_REMOTE_ERROR);
  for (auto until = std::chrono::steady_clock::now() + 1s;
       rig.ring[0]->failed == 0 && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(100us);
  std::string why;
  EXPECT_EQ(rig.proxy->error(&why), GICL_REMOTE_ERROR);
  EXPECT_NE(why.find("put with signal set to peer 1"), std::string::npos) << why;
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(rig.transport.posted().size(), 1u) << "the signal went out after its put failed";
}

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

TEST(NetProxy, AnIdleProxySleepsInsteadOfSpinningACore) {
  Rig rig;
  host_put(*rig.ring[0], rig.mem, ProxyOp::kPut, 1, 0, 0, 8);
  ASSERT_TRUE(rig.transport.wait_posted(1));
  rig.transport.release(0);
  ASSERT_TRUE(rig.done_reaches(1));
  std::this_thread::sleep_for(50ms);  // past the busy period
  const double cpu0 = process_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(500ms);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double share = (process_cpu_seconds() - cpu0) / wall;
  std::printf("idle proxy: %.1f %% of a core\n", share * 100);
  EXPECT_LT(share, 0.5) << "the idle proxy used " << share * 100 << " % of a core";
  EXPECT_GT(rig.proxy->stats().sleeps, 0u);
  // And it still answers: a request after the pause is served.
  host_put(*rig.ring[0], rig.mem, ProxyOp::kPut, 1, 0, 0, 8);
  ASSERT_TRUE(rig.transport.wait_posted(2));
  rig.transport.release(1);
  EXPECT_TRUE(rig.done_reaches(2));
}

// A kick (a launch that will post was enqueued) ends the idle proxy's sleep at once: with every
// sleep 30 s long, a request posted after a pause is served within the second only if the kick
// woke the proxy; and destroying a sleeping proxy does not wait out its sleep either.
TEST(NetProxy, AKickEndsAnIdleSleepAtOnce) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  {
    Rig rig(1000, 1, std::chrono::seconds(30));
    // Whatever the proxy is doing when a request comes (its busy period after start or after
    // work lasts 500 us), a kick gets it served: the first request and its completion too.
    // Request n (1-based) posted and completed, each step kicked; false when the proxy slept on.
    auto kicked_put = [&](uint64_t n) {
      host_put(*rig.ring[0], rig.mem, ProxyOp::kPut, 1, 0, 0, 8);
      rig.proxy->kick();
      if (!rig.transport.wait_posted(n)) return false;
      rig.transport.release(n - 1);
      rig.proxy->kick();
      return rig.done_reaches(n);
    };
    ASSERT_TRUE(kicked_put(1)) << "a kicked proxy slept on";
    std::this_thread::sleep_for(50ms);  // past the busy period: asleep for 30 s
    for (auto until = Clock::now() + 5s; rig.proxy->stats().sleeps == 0 && Clock::now() < until;)
      std::this_thread::sleep_for(1ms);
    ASSERT_GT(rig.proxy->stats().sleeps, 0u) << "the proxy never went to sleep";
    EXPECT_TRUE(kicked_put(2)) << "a kicked proxy slept on";
  }
  EXPECT_LT(Clock::now() - t0, 20s) << "destroying the proxy waited out its sleep";
}

}  // namespace
}  // namespace gicl::proxy
