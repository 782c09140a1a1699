// SPDX-License-Identifier: Apache-2.0
// The network proxy between real processes over libfabric on loopback (tcp;ofi_rxm and shm),
// host memory standing in for the symmetric heap and host threads for the GPU's producers, on
// both deliveries: direct (the heap registered) and staged (the heap unregistered, as GPU memory
// is on these providers: chunks through small staging slots, applied by the target's proxy and
// acknowledged). Puts, gets and signals land where they were aimed and a quiet means delivered
// at the target; atomics, fetching ones with their answers, are exact under contention from every
// rank; a put's signal is never seen before its payload; host FIFO messages and barrier
// arrivals count exactly in host memory; and a peer that dies
// fails the proxy with an error naming it, within GICL_NET_TIMEOUT, and the producers stop
// waiting.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/unique_id.hpp"
#include "common/settings.hpp"
#include "mp/fork_ranks.hpp"
#include "net/connect.hpp"
#include "net/transport.hpp"
#include "proxy/host_copier.hpp"
#include "proxy/host_ring.hpp"
#include "proxy/net_proxy.hpp"
#include "proxy/staged_delivery.hpp"

namespace gicl::proxy {
namespace {

using bootstrap::Bootstrap;
using test::fork_ranks;
using namespace std::chrono_literals;

/// One rank: a transport over a registered host heap, `rings` request rings and the proxy that
/// serves them. Members go in reverse: the proxy first, the transport last.
struct ProxyRank {
  std::unique_ptr<Bootstrap> bs;
  std::unique_ptr<net::Transport> t;
  std::vector<uint8_t> heap;
  std::unique_ptr<net::Region> region;  // the heap's (direct) or the staging area's (staged)
  std::vector<net::RemoteKey> keys;
  std::vector<uint8_t> staging;
  HostCopier copier;
  std::vector<std::unique_ptr<HostRing>> rings;
  std::unique_ptr<NetProxy> proxy;
};

// Small staging slots, few of them: a 256 KiB block takes 32 chunks and waits for credits.
StagingLayout test_layout(int n) {
  StagingLayout l;
  l.chunk = 8 << 10;
  l.send_slots = 4;
  l.recv_slots = 2;
  l.nranks = n;
  return l;
}

Status open_rank(const bootstrap::UniqueIdData& id, int me, int n, size_t heap, int rings,
                 bool staged, ProxyRank* r, const StagingLayout* layout = nullptr) {
  GICL_CHECK(Bootstrap::create(id, me, n, nullptr, 30000, &r->bs));
  net::OpenArgs args;
  args.rank = me;
  args.nranks = n;
  args.max_inflight = 256;
  GICL_CHECK(net::open_transport(net::Backend::kOfi, args, &r->t));
  GICL_CHECK(net::connect_all(*r->t, *r->bs));
  r->heap.assign(heap, 0);
  NetProxyArgs a;
  a.rank = me;
  a.transport = r->t.get();
  if (!staged) {
    GICL_CHECK(r->t->register_memory(r->heap.data(), heap, net::MemKind::kHost, &r->region));
    GICL_CHECK(net::exchange_keys(*r->bs, *r->region, &r->keys));
    a.heap = HeapView{reinterpret_cast<char*>(r->heap.data()), heap, r->region.get(), r->keys};
  } else {
    StagingView sv;
    sv.layout = layout != nullptr ? *layout : test_layout(n);
    GICL_CHECK(sv.layout.check());
    r->staging.assign(sv.layout.bytes(), 0);
    GICL_CHECK(r->t->register_memory(r->staging.data(), r->staging.size(), net::MemKind::kHost,
                                     &r->region));
    GICL_CHECK(net::exchange_keys(*r->bs, *r->region, &sv.keys));
    sv.base = reinterpret_cast<char*>(r->staging.data());
    sv.region = r->region.get();
    // The heap is not registered: its keys only bound the requests (every heap is `heap` B).
    net::RemoteKey bound{};
    bound.bytes = heap;
    a.heap = HeapView{reinterpret_cast<char*>(r->heap.data()), heap, nullptr,
                      std::vector<net::RemoteKey>(n, bound)};
    // GICL_NET_TIMEOUT, as the communicator's path takes it: its default unless a test sets it
    // (ProxyFailure: 2 s), so that a rank held off the CPU under a sanitizer on a loaded
    // machine is not taken for one that stopped serving.
    // Acknowledgements held as the communicator holds them (GICL_NET_ACK_HOLD).
    int64_t timeout_ms = 0, ack_hold_us = 0;
    GICL_CHECK(setting_int(Setting::kNetTimeout, &timeout_ms));
    GICL_CHECK(setting_int(Setting::kNetAckHold, &ack_hold_us));
    a.delivery = make_staged_delivery(r->t.get(), me, a.heap, sv, &r->copier,
                                      std::chrono::milliseconds(timeout_ms),
                                      std::chrono::microseconds(ack_hold_us));
  }
  for (int i = 0; i < rings; ++i) {
    r->rings.push_back(std::make_unique<HostRing>(256));
    a.rings.push_back(r->rings.back()->view());
  }
  return NetProxy::start(std::move(a), &r->proxy);
}

void use_provider(const std::string& provider) {
  setenv("GICL_OFI_PROVIDER", provider.c_str(), 1);
  setenv("FI_TCP_IFACE", "lo", 1);
}

bool ofi_opens() {
  static const bool ok = [] {
    auto rc = fork_ranks(1, [](int) {
      use_provider("tcp;ofi_rxm");
      std::unique_ptr<net::Transport> t;
      return net::open_transport(net::Backend::kOfi, net::OpenArgs{}, &t).ok() ? 0 : 1;
    });
    return rc[0].code == 0;
  }();
  return ok;
}

#define REQUIRE_OFI()                                                                      \
  do {                                                                                     \
    if (!ofi_opens()) GTEST_SKIP() << "libfabric's tcp;ofi_rxm provider cannot open here"; \
  } while (0)

uint8_t pattern(int from, int to, size_t i) {
  return static_cast<uint8_t>(from * 29 + to * 13 + i * 5 + (i >> 11) + 3);
}

/// The first byte of heap[begin, begin + n) that differs from pattern(from, to, i), or n. Not
/// instrumented by ThreadSanitizer: the bytes were written by the provider (uninstrumented) on
/// another thread, and the caller saw them ordered by the signal the provider wrote after them,
/// as a GPU kernel does; TSan cannot pair that signal's store with the caller's load.
__attribute__((no_sanitize_thread)) size_t first_wrong(const uint8_t* heap, size_t begin, size_t n,
                                                       int from, int to) {
  for (size_t i = 0; i < n; ++i)
    if (heap[begin + i] != pattern(from, to, begin + i)) return i;
  return n;
}

struct Case {
  const char* provider;
  int ranks;
  bool staged;
  int endpoints = 1;  // GICL_NET_ENDPOINTS
};
std::string case_name(const ::testing::TestParamInfo<Case>& p) {
  std::string s = p.param.provider;
  return s.substr(0, s.find(';')) + "_" + std::to_string(p.param.ranks) + "ranks" +
         (p.param.staged ? "_staged" : "_direct") +
         (p.param.endpoints > 1 ? "_" + std::to_string(p.param.endpoints) + "endpoints" : "");
}

/// The case's provider and endpoint count, for a rank about to open its transport.
void use_case(const Case& c) {
  use_provider(c.provider);
  setenv("GICL_NET_ENDPOINTS", std::to_string(c.endpoints).c_str(), 1);
}

class ProxyRanks : public ::testing::TestWithParam<Case> {};

// Heap layout per rank: [0, n * kBlock) blocks written by each rank (block q from rank q),
// [n * kBlock, (n + 1) * kBlock) this rank's source, then one block for gets, then signal words.
constexpr size_t kBlock = 256 << 10;

/// Two producer threads (two rings) each put half of this rank's block to every peer (itself
/// included) in pieces of odd sizes and add to rank 0's counter; after both quiet, a bootstrap
/// barrier (which carries no data) and every block must be in place. Then each rank gets every
/// peer's source block and checks it after a quiet.
TEST_P(ProxyRanks, PutsGetsAndSignalsLandAndQuietMeansDelivered) {
  REQUIRE_OFI();
  const Case c = GetParam();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  const int n = c.ranks;
  constexpr int kAdds = 200;
  auto results = fork_ranks(n, [&](int me) {
    use_case(c);
    const size_t src = n * kBlock, got = (n + 1) * kBlock, counter = (n + 2) * kBlock;
    ProxyRank r;
    RANK_OK(open_rank(id, me, n, counter + 4096, 2, c.staged, &r));
    for (size_t i = 0; i < kBlock; ++i) r.heap[src + i] = pattern(me, me, i);
    RANK_OK(r.bs->barrier());
    const size_t cuts[] = {0, 1, 4099, 65539, kBlock / 2, kBlock / 2 + 8, 200001, kBlock};
    std::vector<std::thread> producers;
    bool posted[2] = {true, true};
    for (int k = 0; k < 2; ++k)
      producers.emplace_back([&, k] {
        HostMem m;
        for (int p = 0; p < n; ++p)
          for (size_t j = k; j + 1 < std::size(cuts); j += 2) {
            const size_t off = cuts[j], len = cuts[j + 1] - cuts[j];
            if (host_put(*r.rings[k], m, ProxyOp::kPut, p, me * kBlock + off, src + off, len) ==
                ~0ull)
              posted[k] = false;
          }
        for (int a = 0; a < kAdds / 2; ++a)
          if (host_signal(*r.rings[k], m, true, 0, counter, 1) == ~0ull) posted[k] = false;
        if (!r.rings[k]->quiet()) posted[k] = false;
      });
    for (auto& th : producers) th.join();
    std::string why;
    RANK_CHECK(posted[0] && posted[1], "a producer failed: %s",
               r.proxy->error(&why) != GICL_SUCCESS ? why.c_str() : "timeout");
    RANK_OK(r.bs->barrier());  // every rank's quiet returned: every byte is in place
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < kBlock; ++i)
        RANK_CHECK(r.heap[q * kBlock + i] == pattern(q, q, i),
                   "byte %zu of rank %d's block missing after its quiet", i, q);
    uint64_t total = 0;
    std::memcpy(&total, &r.heap[counter], 8);
    if (me == 0)
      RANK_CHECK(total == uint64_t{kAdds} * n, "counter %llu", (unsigned long long)total);
    // Gets: every peer's source block, read into this rank's get block (staged: 32 answered
    // chunks through 4 send slots).
    HostMem m;
    for (int p = 0; p < n; ++p) {
      RANK_CHECK(host_put(*r.rings[0], m, ProxyOp::kGet, p, got, src, kBlock) != ~0ull, "get");
      RANK_CHECK(r.rings[0]->quiet(), "quiet after a get from rank %d", p);
      for (size_t i = 0; i < kBlock; ++i)
        RANK_CHECK(r.heap[got + i] == pattern(p, p, i), "byte %zu got from rank %d", i, p);
    }
    RANK_OK(r.bs->barrier());
    return 0;
  });
  for (int i = 0; i < n; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

/// Non-fetching atomics from every rank (two producer threads each) to words at rank 0: 64-bit
/// adds and sets, 32-bit adds beside a 32-bit neighbour they must not carry into, and 32-bit or,
/// xor and and (on the direct path a compare-swap loop on the 64-bit word). After every rank's
/// quiet and a barrier the words hold exactly what the updates make, whatever order they landed
/// in.
TEST_P(ProxyRanks, AtomicsFromEveryRankAreExact) {
  REQUIRE_OFI();
  const Case c = GetParam();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  const int n = c.ranks;
  constexpr int kAdds = 300;
  auto results = fork_ranks(n, [&](int me) {
    use_case(c);
    ProxyRank r;
    RANK_OK(open_rank(id, me, n, 4096, 2, c.staged, &r));
    // [0] 64-bit add, [8] 64-bit set, [16] 32-bit add, [20] 32-bit neighbour, [24] 32-bit or,
    // [28] 32-bit xor, [32] 32-bit and.
    if (me == 0) {
      const uint32_t ones = 0xffffffffu;
      std::memcpy(&r.heap[20], &ones, 4);
      std::memcpy(&r.heap[32], &ones, 4);
    }
    RANK_OK(r.bs->barrier());
    std::vector<std::thread> producers;
    bool posted[2] = {true, true};
    for (int k = 0; k < 2; ++k)
      producers.emplace_back([&, k] {
        HostMem m;
        auto post = [&](ProxyAtomic a, uint32_t width, uint64_t word, uint64_t value) {
          if (host_atomic(*r.rings[k], m, a, width, 0, word, value) == ~0ull) posted[k] = false;
        };
        for (int i = 0; i < kAdds / 2; ++i) {
          post(ProxyAtomic::kAdd, 8, 0, uint64_t{1} << 33 | 1);
          post(ProxyAtomic::kAdd, 4, 16, 0x10000001u);
        }
        post(ProxyAtomic::kSet, 8, 8, 100 + me);
        if (k == 0) {
          post(ProxyAtomic::kOr, 4, 24, 1u << me);
          post(ProxyAtomic::kXor, 4, 28, 0x5a5a0000u | (1u << me));
          post(ProxyAtomic::kAnd, 4, 32, ~(1u << (8 + me)));
        }
        if (!r.rings[k]->quiet()) posted[k] = false;
      });
    for (auto& th : producers) th.join();
    std::string why;
    RANK_CHECK(posted[0] && posted[1], "a producer failed: %s",
               r.proxy->error(&why) != GICL_SUCCESS ? why.c_str() : "timeout");
    RANK_OK(r.bs->barrier());  // every rank's quiet returned: every update is applied
    if (me == 0) {
      uint64_t add64 = 0, set64 = 0;
      uint32_t w32[5];
      std::memcpy(&add64, &r.heap[0], 8);
      std::memcpy(&set64, &r.heap[8], 8);
      std::memcpy(w32, &r.heap[16], sizeof(w32));
      const uint64_t adds = uint64_t{kAdds} * n;
      RANK_CHECK(add64 == (adds << 33 | adds), "64-bit add: %llx", (unsigned long long)add64);
      RANK_CHECK(set64 >= 100 && set64 < 100u + n, "64-bit set: %llu", (unsigned long long)set64);
      uint32_t mask = 0, flips = 0, cleared = 0;
      for (int q = 0; q < n; ++q) {
        mask |= 1u << q;
        flips ^= 0x5a5a0000u | (1u << q);
        cleared |= 1u << (8 + q);
      }
      RANK_CHECK(w32[0] == static_cast<uint32_t>(adds * 0x10000001u), "32-bit add: %x", w32[0]);
      RANK_CHECK(w32[1] == 0xffffffffu, "the 32-bit add carried into its neighbour: %x", w32[1]);
      RANK_CHECK(w32[2] == mask, "32-bit or: %x", w32[2]);
      RANK_CHECK(w32[3] == flips, "32-bit xor: %x", w32[3]);
      RANK_CHECK(w32[4] == ~cleared, "32-bit and: %x", w32[4]);
    }
    RANK_OK(r.bs->barrier());
    return 0;
  });
  for (int i = 0; i < n; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

/// Fetching atomics from every rank (two producer threads each) to words at rank 0, each thread
/// waiting for every answer: the answers of 64-bit fetch-adds and of 32-bit fetch-adds (the high
/// half of a 64-bit word, beside a neighbour they must not touch) are, over all ranks, every
/// value from 0 to the total exactly once; of a compare-swap of 0 one rank's wins and every other
/// answer is the winner's value; swaps form one chain from the initial value; fetching or and xor
/// return what was there; loads after a barrier read the totals.
TEST_P(ProxyRanks, FetchingAtomicsAnswerExactlyUnderContention) {
  REQUIRE_OFI();
  const Case c = GetParam();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  const int n = c.ranks;
  constexpr int kPerThread = 150;
  auto results = fork_ranks(n, [&](int me) {
    use_case(c);
    ProxyRank r;
    RANK_OK(open_rank(id, me, n, 4096, 2, c.staged, &r));
    // [0] 64-bit counter, [8] 32-bit neighbour (all ones), [12] 32-bit counter, [16] 64-bit
    // compare-swap word, [24] 64-bit swap chain (starts at 7), [32] 32-bit or, [36] 32-bit xor.
    constexpr uint64_t kChainStart = 7;
    if (me == 0) {
      const uint32_t ones = 0xffffffffu;
      std::memcpy(&r.heap[8], &ones, 4);
      std::memcpy(&r.heap[24], &kChainStart, 8);
    }
    RANK_OK(r.bs->barrier());
    std::vector<uint64_t> got64[2], got32[2];
    uint64_t cas_old = ~0ull, swap_old = ~0ull, or_old = ~0ull, xor_old = ~0ull;
    bool ok[2] = {true, true};
    std::vector<std::thread> producers;
    for (int k = 0; k < 2; ++k)
      producers.emplace_back([&, k] {
        HostMem m;
        HostRing& ring = *r.rings[k];
        auto fetch = [&](ProxyAtomic a, uint32_t width, uint64_t word, uint64_t value,
                         uint64_t compare) {
          uint64_t old = ~0ull;
          if (!host_fetch(ring, m, a, width, 0, word, value, compare, &old)) ok[k] = false;
          return old;
        };
        for (int i = 0; i < kPerThread; ++i) {
          got64[k].push_back(fetch(ProxyAtomic::kAdd, 8, 0, 1, 0));
          got32[k].push_back(fetch(ProxyAtomic::kAdd, 4, 12, 1, 0));
        }
        if (k == 0) {
          cas_old = fetch(ProxyAtomic::kCompareSwap, 8, 16, 1000 + me, 0);
          swap_old = fetch(ProxyAtomic::kSet, 8, 24, 2000 + me, 0);
          or_old = fetch(ProxyAtomic::kOr, 4, 32, 1u << me, 0);
          xor_old = fetch(ProxyAtomic::kXor, 4, 36, 1u << me, 0);
        }
      });
    for (auto& th : producers) th.join();
    std::string why;
    RANK_CHECK(ok[0] && ok[1], "a fetching atomic was not answered: %s",
               r.proxy->error(&why) != GICL_SUCCESS ? why.c_str() : "timeout");
    // Every rank's answers, gathered: [rank][64-bit..., 32-bit..., cas, swap, or, xor].
    const size_t per = 4 * kPerThread + 4;
    std::vector<uint64_t> all(per * n);
    uint64_t* mine = all.data() + per * me;
    size_t at = 0;
    for (int k = 0; k < 2; ++k)
      for (uint64_t v : got64[k]) mine[at++] = v;
    for (int k = 0; k < 2; ++k)
      for (uint64_t v : got32[k]) mine[at++] = v;
    mine[at++] = cas_old;
    mine[at++] = swap_old;
    mine[at++] = or_old;
    mine[at++] = xor_old;
    RANK_OK(r.bs->allgather(all.data(), per * sizeof(uint64_t)));
    const size_t total = size_t{2} * kPerThread * n;
    std::vector<int> seen64(total, 0), seen32(total, 0);
    int winners = 0;
    std::vector<uint64_t> chain;
    for (int q = 0; q < n; ++q) {
      const uint64_t* a = all.data() + per * q;
      for (size_t i = 0; i < 2 * kPerThread; ++i) {
        RANK_CHECK(a[i] < total, "rank %d's 64-bit fetch-add answered %llu", q,
                   (unsigned long long)a[i]);
        RANK_CHECK(a[2 * kPerThread + i] < total, "rank %d's 32-bit fetch-add answered %llu", q,
                   (unsigned long long)a[2 * kPerThread + i]);
        ++seen64[a[i]];
        ++seen32[a[2 * kPerThread + i]];
      }
      const uint64_t* t = a + 4 * kPerThread;
      if (t[0] == 0) ++winners;
      chain.push_back(t[1]);
      RANK_CHECK((t[2] & (1u << q)) == 0 && t[2] < (1u << n), "rank %d's fetch-or answered %llx", q,
                 (unsigned long long)t[2]);
    }
    for (size_t v = 0; v < total; ++v)
      RANK_CHECK(seen64[v] == 1 && seen32[v] == 1,
                 "fetch-add answer %zu seen %d times (64-bit) and %d times (32-bit)", v, seen64[v],
                 seen32[v]);
    RANK_CHECK(winners == 1, "%d compare-swaps of 0 won", winners);
    for (int q = 0; q < n; ++q) {
      const uint64_t cas = all[per * q + 4 * kPerThread];
      RANK_CHECK(cas == 0 || (cas >= 1000 && cas < 1000u + n && cas != 1000u + q),
                 "rank %d's compare-swap answered %llu", q, (unsigned long long)cas);
    }
    // The swaps' answers are the start and every rank's value but the last one swapped in.
    std::sort(chain.begin(), chain.end());
    RANK_CHECK(chain[0] == kChainStart, "no swap answered the initial value");
    for (size_t i = 1; i < chain.size(); ++i)
      RANK_CHECK(chain[i] >= 2000 && chain[i] < 2000u + n && chain[i] != chain[i - 1],
                 "swap answers out of one chain: %llu", (unsigned long long)chain[i]);
    RANK_OK(r.bs->barrier());  // every answer is in: the words hold their totals
    HostMem m;
    uint64_t load64 = 0, load32 = 0, neighbour = 0, ors = 0, xors = 0;
    RANK_CHECK(host_fetch(*r.rings[0], m, ProxyAtomic::kLoad, 8, 0, 0, 0, 0, &load64) &&
                   host_fetch(*r.rings[0], m, ProxyAtomic::kLoad, 4, 0, 12, 0, 0, &load32) &&
                   host_fetch(*r.rings[0], m, ProxyAtomic::kLoad, 4, 0, 8, 0, 0, &neighbour) &&
                   host_fetch(*r.rings[0], m, ProxyAtomic::kLoad, 4, 0, 32, 0, 0, &ors) &&
                   host_fetch(*r.rings[0], m, ProxyAtomic::kLoad, 4, 0, 36, 0, 0, &xors),
               "a load was not answered");
    RANK_CHECK(load64 == total && load32 == total, "loads: %llu and %llu of %zu",
               (unsigned long long)load64, (unsigned long long)load32, total);
    RANK_CHECK(neighbour == 0xffffffffu, "the 32-bit fetch-adds touched their neighbour: %llx",
               (unsigned long long)neighbour);
    RANK_CHECK(ors == (1u << n) - 1 && xors == (1u << n) - 1, "or %llx, xor %llx after every rank",
               (unsigned long long)ors, (unsigned long long)xors);
    RANK_OK(r.bs->barrier());
    return 0;
  });
  for (int i = 0; i < n; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

/// Rank 0 puts 256 blocks to rank 1, each with a signal word set after it; rank 1 checks each
/// block the moment it sees the block's signal.
TEST_P(ProxyRanks, APutsSignalIsNeverSeenBeforeItsPayload) {
  REQUIRE_OFI();
  const Case c = GetParam();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  constexpr int kPuts = 256;
  constexpr size_t kPiece = 16 << 10;
  const size_t signals = kPuts * kPiece;
  auto results = fork_ranks(c.ranks, [&](int me) {
    use_case(c);
    ProxyRank r;
    RANK_OK(open_rank(id, me, c.ranks, signals + kPuts * 8, 1, c.staged, &r));
    if (me == 0)
      for (size_t i = 0; i < signals; ++i) r.heap[i] = pattern(0, 1, i);
    RANK_OK(r.bs->barrier());
    if (me == 0) {
      HostMem m;
      for (int k = 0; k < kPuts; ++k)
        RANK_CHECK(host_put_signal(*r.rings[0], m, false, 1, k * kPiece, k * kPiece, kPiece,
                                   signals + 8 * k, k + 1) != ~0ull,
                   "put %d", k);
      RANK_CHECK(r.rings[0]->quiet(), "quiet");
    } else if (me == 1) {
      std::vector<bool> seen(kPuts, false);
      int left = kPuts;
      const auto until = std::chrono::steady_clock::now() + 60s;
      while (left > 0) {
        RANK_CHECK(std::chrono::steady_clock::now() < until, "%d signals never came", left);
        for (int k = 0; k < kPuts; ++k) {
          if (seen[k]) continue;
          const uint64_t s = __atomic_load_n(
              reinterpret_cast<const uint64_t*>(&r.heap[signals + 8 * k]), __ATOMIC_ACQUIRE);
          if (s == 0) continue;
          RANK_CHECK(s == static_cast<uint64_t>(k + 1), "signal %d holds %llu", k,
                     (unsigned long long)s);
          const size_t bad = first_wrong(r.heap.data(), k * kPiece, kPiece, 0, 1);
          RANK_CHECK(bad == kPiece, "block %d byte %zu not there when its signal was", k, bad);
          seen[k] = true;
          --left;
        }
      }
    }
    RANK_OK(r.bs->barrier());
    return 0;
  });
  for (int i = 0; i < c.ranks; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

INSTANTIATE_TEST_SUITE_P(Providers, ProxyRanks,
                         ::testing::Values(Case{"tcp;ofi_rxm", 2, false},
                                           Case{"tcp;ofi_rxm", 3, false}, Case{"shm", 2, false},
                                           Case{"tcp;ofi_rxm", 2, true},
                                           Case{"tcp;ofi_rxm", 3, true}, Case{"shm", 2, true},
                                           Case{"tcp;ofi_rxm", 2, false, 2},
                                           Case{"tcp;ofi_rxm", 3, true, 3}),
                         case_name);

/// Host FIFOs (staged_delivery.hpp): rank 0 sends 200 messages of 1 to 4096 bytes to rank 1
/// over 2 lanes of 2 slots, writing each into its outgoing slot only once rank 1 has credited the
/// slot's previous message; rank 1 reads each when its slot's arrival count says it is there,
/// checks every byte and credits it. Every count must end exact: 100 credits per lane at rank 0,
/// 50 arrivals per slot at rank 1.
TEST(ProxyHostFifos, MessagesLandBeforeTheirCountAndCreditsComeBack) {
  REQUIRE_OFI();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  constexpr int kMessages = 200;
  constexpr uint32_t kLanes = 2, kDepth = 2;
  auto results = fork_ranks(2, [&](int me) {
    use_provider("tcp;ofi_rxm");
    ProxyRank r;
    StagingLayout l = test_layout(2);
    l.fifo_lanes = kLanes;
    l.fifo_depth = kDepth;
    l.fifo_slot = 4096;
    RANK_OK(open_rank(id, me, 2, 4096, 1, true, &r, &l));
    char* base = reinterpret_cast<char*>(r.staging.data());
    auto counter = [&](size_t off) {
      return __atomic_load_n(reinterpret_cast<const uint64_t*>(base + off), __ATOMIC_ACQUIRE);
    };
    auto bytes_of = [](int j) { return static_cast<size_t>(1 + (j * 997) % 4096); };
    HostMem m;
    const auto until = std::chrono::steady_clock::now() + 60s;
    for (int j = 0; j < kMessages; ++j) {
      const uint32_t lane = j % kLanes;
      const uint64_t msg = j / kLanes + 1;  // the message's number on its lane
      const uint32_t k = lane * kDepth + static_cast<uint32_t>((msg - 1) % kDepth);
      if (me == 0) {
        while (msg > kDepth && counter(l.fifo_credit_offset(1, lane)) < msg - kDepth)
          RANK_CHECK(std::chrono::steady_clock::now() < until, "message %d: no credit", j);
        char* out = base + l.fifo_out_offset(1, k);
        for (size_t i = 0; i < bytes_of(j); ++i) out[i] = static_cast<char>(pattern(j, 1, i));
        RANK_CHECK(host_fifo(*r.rings[0], m, ProxyOp::kFifoSend, 1, k, bytes_of(j)) != ~0ull,
                   "message %d posted", j);
      } else {
        while (counter(l.fifo_arrived_offset(0, k)) < (msg - 1) / kDepth + 1)
          RANK_CHECK(std::chrono::steady_clock::now() < until, "message %d never came", j);
        const char* in = base + l.fifo_in_offset(0, k);
        for (size_t i = 0; i < bytes_of(j); ++i)
          RANK_CHECK(in[i] == static_cast<char>(pattern(j, 1, i)),
                     "message %d byte %zu wrong when counted", j, i);
        RANK_CHECK(host_fifo(*r.rings[0], m, ProxyOp::kFifoCredit, 0, lane, 0) != ~0ull,
                   "credit %d posted", j);
      }
    }
    RANK_CHECK(r.rings[0]->quiet(), "quiet");
    if (me == 0)
      for (uint32_t lane = 0; lane < kLanes; ++lane) {
        while (counter(l.fifo_credit_offset(1, lane)) < kMessages / kLanes)
          RANK_CHECK(std::chrono::steady_clock::now() < until, "lane %u: credits missing", lane);
        RANK_CHECK(counter(l.fifo_credit_offset(1, lane)) == kMessages / kLanes,
                   "lane %u: %llu credits", lane,
                   (unsigned long long)counter(l.fifo_credit_offset(1, lane)));
      }
    RANK_OK(r.bs->barrier());
    if (me == 1)
      for (uint32_t k = 0; k < kLanes * kDepth; ++k)
        RANK_CHECK(counter(l.fifo_arrived_offset(0, k)) == kMessages / (kLanes * kDepth),
                   "slot %u: %llu arrivals", k,
                   (unsigned long long)counter(l.fifo_arrived_offset(0, k)));
    return 0;
  });
  for (int i = 0; i < 2; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

/// Barrier arrivals on the staged path (proxy_ring.h, ProxyRingSet::arrivals): 3 ranks run 300
/// dissemination barriers as kernels do, each round a credit on kProxyArrivalLane to the rank d
/// ahead and a wait until this rank's arrivals word for the rank d behind reaches its count.
/// The areas have no host FIFOs; every word must end at exactly 300.
TEST(ProxyBarrierArrivals, DisseminationRoundsCountExactlyInHostMemory) {
  REQUIRE_OFI();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  constexpr int kRanks = 3, kBarriers = 300;
  auto results = fork_ranks(kRanks, [&](int me) {
    use_provider("tcp;ofi_rxm");
    ProxyRank r;
    StagingLayout l = test_layout(kRanks);
    RANK_OK(open_rank(id, me, kRanks, 4096, 1, true, &r, &l));
    const char* base = reinterpret_cast<const char*>(r.staging.data());
    auto arrivals = [&](int from) {
      return __atomic_load_n(reinterpret_cast<const uint64_t*>(base + l.arrivals_offset(from)),
                             __ATOMIC_ACQUIRE);
    };
    HostMem m;
    const auto until = std::chrono::steady_clock::now() + 60s;
    for (uint64_t b = 1; b <= kBarriers; ++b)
      for (int d = 1; d < kRanks; d <<= 1) {
        const int to = (me + d) % kRanks, from = (me - d + kRanks) % kRanks;
        RANK_CHECK(
            host_fifo(*r.rings[0], m, ProxyOp::kFifoCredit, to, kProxyArrivalLane, 0) != ~0ull,
            "barrier %llu: arrival at rank %d posted", (unsigned long long)b, to);
        while (arrivals(from) < b)
          RANK_CHECK(std::chrono::steady_clock::now() < until,
                     "barrier %llu: rank %d's arrival never came (%llu counted)",
                     (unsigned long long)b, from, (unsigned long long)arrivals(from));
      }
    RANK_OK(r.bs->barrier());
    for (int from = 0; from < kRanks; ++from)
      RANK_CHECK(arrivals(from) == (from == me ? 0u : uint64_t{kBarriers}),
                 "rank %d's word holds %llu", from, (unsigned long long)arrivals(from));
    return 0;
  });
  for (int i = 0; i < kRanks; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

/// Held acknowledgements (GICL_NET_ACK_HOLD) between two processes over tcp;ofi_rxm: rank 0
/// sends 200 signals, each once rank 1's answer to the one before has landed, and rank 1 answers
/// each. Without a hold each rank's proxy posts 400 writes, its 200 chunks and an acknowledgement
/// of each of the other's; with a hold of 200 ms (longer than a thread waits for a core on a
/// loaded 2-core machine, where 1 ms let most go alone) an acknowledgement rides on the answer,
/// so at least half of them never take a write of their own (in practice all but rank 0's last),
/// and every signal still lands in order and quiet returns.
TEST(ProxyAckHold, APingPongsAcknowledgementsRideOnItsAnswers) {
  REQUIRE_OFI();
  constexpr uint64_t kRounds = 200;
  for (const char* hold : {"0", "200000"}) {
    SCOPED_TRACE(std::string("GICL_NET_ACK_HOLD=") + hold);
    bootstrap::UniqueIdData id;
    ASSERT_TRUE(test::child_root_id(&id));
    auto results = fork_ranks(2, [&](int me) {
      use_provider("tcp;ofi_rxm");
      setenv("GICL_NET_ENDPOINTS", "1", 1);
      setenv("GICL_NET_ACK_HOLD", hold, 1);
      ProxyRank r;
      RANK_OK(open_rank(id, me, 2, 4096, 1, true, &r));
      RANK_OK(r.bs->barrier());
      const auto* word = reinterpret_cast<const uint64_t*>(&r.heap[64]);
      HostMem m;
      const auto until = std::chrono::steady_clock::now() + 60s;
      for (uint64_t k = 1; k <= kRounds; ++k) {
        if (me == 0)
          RANK_CHECK(host_signal(*r.rings[0], m, false, 1, 64, k) != ~0ull, "signal %llu",
                     (unsigned long long)k);
        for (uint64_t seen; (seen = __atomic_load_n(word, __ATOMIC_ACQUIRE)) != k;) {
          RANK_CHECK(seen < k, "round %llu: the word holds %llu", (unsigned long long)k,
                     (unsigned long long)seen);
          RANK_CHECK(std::chrono::steady_clock::now() < until, "round %llu never came",
                     (unsigned long long)k);
        }
        if (me == 1)
          RANK_CHECK(host_signal(*r.rings[0], m, false, 0, 64, k) != ~0ull, "answer %llu",
                     (unsigned long long)k);
      }
      RANK_CHECK(r.rings[0]->quiet(), "quiet");
      const uint64_t writes = r.proxy->stats().issued;
      RANK_OK(r.bs->barrier());
      if (hold[0] == '0')
        RANK_CHECK(writes == 2 * kRounds, "%llu writes without a hold", (unsigned long long)writes);
      else
        RANK_CHECK(writes <= kRounds + kRounds / 2, "%llu writes with acknowledgements held",
                   (unsigned long long)writes);
      return 0;
    });
    for (int i = 0; i < 2; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
  }
}

/// Rank 1 exits without a word after connecting; rank 0 keeps putting to it. Its proxy fails
/// naming rank 1 within GICL_NET_TIMEOUT (2 s here), the ring's failed word stops the producer,
/// and nothing hangs; on both deliveries.
TEST(ProxyFailure, APeerThatDiesFailsTheProxyNamingIt) {
  REQUIRE_OFI();
  for (const bool staged : {false, true}) {
    SCOPED_TRACE(staged ? "staged" : "direct");
    bootstrap::UniqueIdData id;
    ASSERT_TRUE(test::child_root_id(&id));
    auto results = fork_ranks(2, [&](int me) {
      use_provider("tcp;ofi_rxm");
      setenv("GICL_NET_TIMEOUT", "2000", 1);
      ProxyRank r;
      RANK_OK(open_rank(id, me, 2, 1 << 20, 1, staged, &r));
      RANK_OK(r.bs->barrier());
      if (me == 1) _exit(0);  // gone: no goodbye, no more progress
      std::this_thread::sleep_for(200ms);
      HostMem m;
      m.patience = std::chrono::milliseconds(20000);
      const auto t0 = std::chrono::steady_clock::now();
      bool stopped = false;
      for (int k = 0; k < 100000 && !stopped; ++k) {
        stopped = host_put(*r.rings[0], m, ProxyOp::kPut, 1, 0, 0, 64 << 10) == ~0ull;
        if (k % 64 == 63 && !stopped) stopped = !r.rings[0]->quiet(20000ms);
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      RANK_CHECK(stopped, "every put to a dead peer completed");
      std::string why;
      const gicl_result_t code = r.proxy->error(&why);
      RANK_CHECK(code == GICL_TIMEOUT || code == GICL_REMOTE_ERROR, "proxy error %d: %s", code,
                 why.c_str());
      // The proxy says "peer 1" when its own wait times out; an endpoint whose earlier operation
      // to the dead rank failed says "rank 1" (net/op_table.hpp): which comes first is timing.
      RANK_CHECK(
          why.find("peer 1") != std::string::npos || why.find("rank 1:") != std::string::npos,
          "the error does not name rank 1: %s", why.c_str());
      RANK_CHECK(s < 15, "took %.1f s to notice", s);
      return 0;
    });
    EXPECT_EQ(results[0].code, 0);
    EXPECT_EQ(results[1].code, 0);
  }
}

}  // namespace
}  // namespace gicl::proxy
