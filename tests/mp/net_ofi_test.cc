// SPDX-License-Identifier: Apache-2.0
// The libfabric backend between real processes over loopback, on the providers every machine
// has (tcp;ofi_rxm and shm): writes land where they were aimed and are visible when they
// complete, an immediate is seen only after its payload, atomics from every rank add up exactly,
// reads return the peer's bytes, a flush completes after every earlier write, bad arguments are
// named, ranks on different providers are told so, and a peer that dies fails the operations to
// it, named, within GICL_NET_TIMEOUT.
#include <dirent.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/unique_id.hpp"
#include "mp/fork_ranks.hpp"
#include "net/connect.hpp"
#include "net/transport.hpp"

namespace gicl::net {
namespace {

using bootstrap::Bootstrap;
using test::fork_ranks;

/// A rank's transport with one registered host region and every rank's key for it. Members are
/// destroyed in reverse: the region before the transport that registered it.
struct NetRank {
  std::unique_ptr<Bootstrap> bs;
  std::unique_ptr<Transport> t;
  std::vector<uint8_t> mem;
  std::unique_ptr<Region> region;
  std::vector<RemoteKey> keys;
  std::vector<Event> events;  // seen while waiting, in order

  /// Polls until `done()` or the deadline; every event is appended to `events`, and every
  /// event ready is taken before `done()` is asked.
  Status poll_until(const std::function<bool()>& done, int64_t ms = 30000) {
    const Deadline d = Deadline::after_ms(ms);
    Event ev[64];
    for (;;) {
      int n = 0;
      do {
        GICL_CHECK(t->poll(ev, 64, &n));
        events.insert(events.end(), ev, ev + n);
      } while (n == 64);
      if (done()) return GICL_SUCCESS;
      if (d.expired())
        return GICL_FAIL(GICL_TIMEOUT, "test: condition not reached in %lld ms",
                         static_cast<long long>(ms));
    }
  }
  /// A bootstrap barrier while this rank keeps serving peers' operations (manual progress).
  Status barrier() {
    auto f = std::async(std::launch::async, [this] { return bs->barrier(); });
    GICL_CHECK(poll_until(
        [&] { return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }));
    return f.get();
  }
  size_t done_events(uint64_t cookie_lo, uint64_t cookie_hi) const {
    return static_cast<size_t>(std::count_if(events.begin(), events.end(), [&](const Event& e) {
      return e.kind == EventKind::kDone && e.cookie >= cookie_lo && e.cookie < cookie_hi;
    }));
  }
};

void use_provider(const std::string& provider) {
  setenv("GICL_OFI_PROVIDER", provider.c_str(), 1);
  setenv("FI_TCP_IFACE", "lo", 1);  // libfabric's own variable: tcp on loopback
}

Status open_rank(const bootstrap::UniqueIdData& id, int rank, int n, size_t bytes, NetRank* r,
                 const std::vector<std::vector<std::string>>& rails = {}) {
  GICL_CHECK(Bootstrap::create(id, rank, n, nullptr, 30000, &r->bs));
  OpenArgs args;
  args.rank = rank;
  args.nranks = n;
  args.max_inflight = 256;
  args.rails = rails;
  GICL_CHECK(open_transport(Backend::kOfi, args, &r->t));
  GICL_CHECK(connect_all(*r->t, *r->bs));
  r->mem.assign(bytes, 0);
  GICL_CHECK(r->t->register_memory(r->mem.data(), bytes, MemKind::kHost, &r->region));
  return exchange_keys(*r->bs, *r->region, &r->keys);
}

uint8_t pattern(int from, int to, size_t i) {
  return static_cast<uint8_t>(from * 131 + to * 17 + i * 7 + (i >> 9) + 1);
}

bool any_ofi() {
  static const bool ok = [] {
    auto rc = fork_ranks(1, [](int) {
      use_provider("tcp;ofi_rxm");
      std::unique_ptr<Transport> t;
      return open_transport(Backend::kOfi, OpenArgs{}, &t).ok() ? 0 : 1;
    });
    return rc[0].code == 0;
  }();
  return ok;
}

#define REQUIRE_OFI()                                                                    \
  do {                                                                                   \
    if (!any_ofi()) GTEST_SKIP() << "libfabric's tcp;ofi_rxm provider cannot open here"; \
  } while (0)

struct Case {
  const char* provider;
  int ranks;
  int endpoints = 1;  // GICL_NET_ENDPOINTS: above 1, the multi-endpoint transport
};
std::string case_name(const ::testing::TestParamInfo<Case>& p) {
  std::string s = p.param.provider;
  s = s.substr(0, s.find(';'));
  s += "_" + std::to_string(p.param.ranks) + "ranks";
  if (p.param.endpoints > 1) s += "_" + std::to_string(p.param.endpoints) + "endpoints";
  return s;
}

/// The case's provider and endpoint count, for a rank about to open its transport.
void use_case(const Case& c) {
  use_provider(c.provider);
  setenv("GICL_NET_ENDPOINTS", std::to_string(c.endpoints).c_str(), 1);
}

class OfiRanks : public ::testing::TestWithParam<Case> {};

/// Polls until every peer's immediate (0xabc << 40 | sender) has arrived, checking the sender's
/// whole block of `block` - 8 bytes right after the poll that returned its immediate, before any
/// other poll. Returns what was wrong, or "".
std::string check_blocks_at_immediates(NetRank& r, int me, int ranks, size_t block) {
  std::set<int> heard;
  size_t scanned = 0;
  std::string bad;
  const Status s = r.poll_until([&] {
    for (; scanned < r.events.size() && bad.empty(); ++scanned) {
      const Event& e = r.events[scanned];
      if (e.kind != EventKind::kImmediate) continue;
      const int from = static_cast<int>(e.value & 0xff);
      if (e.value >> 40 != 0xabc || from >= ranks || !heard.insert(from).second) {
        bad = "unexpected immediate " + std::to_string(e.value);
        break;
      }
      const uint8_t* got = r.mem.data() + block * from;
      for (size_t i = 0; i < block - 8 && bad.empty(); ++i)
        if (got[i] != pattern(from, me, i))
          bad = "byte " + std::to_string(i) + " from rank " + std::to_string(from) +
                " was not there when its immediate arrived";
    }
    return !bad.empty() || heard.size() + 1 == static_cast<size_t>(ranks);
  });
  if (!s.ok()) return last_error();
  for (const Event& e : r.events)
    if (e.kind == EventKind::kDone && e.status != GICL_SUCCESS)
      return "op " + std::to_string(e.cookie) + " failed";
  return bad;
}

/// Each rank writes pieces of odd sizes into its own block of every peer's region, then, after
/// their completions, a write_imm naming itself: the target checks the whole block when it sees
/// the immediate, without polling in between.
TEST_P(OfiRanks, WritesLandAndAnImmediateFollowsItsPayload) {
  REQUIRE_OFI();
  const Case c = GetParam();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  constexpr size_t kBlock = 1 << 20;
  const size_t cuts[] = {0, 1, 8, 4099, 65536 + 3, 300001, kBlock - 8};  // piece boundaries
  auto results = fork_ranks(c.ranks, [&](int me) {
    use_case(c);
    NetRank r;
    RANK_OK(open_rank(id, me, c.ranks, kBlock * (c.ranks + 1), &r));
    // Source: this rank's outgoing bytes in the extra block at the end of its region.
    uint8_t* out = r.mem.data() + kBlock * c.ranks;
    uint64_t cookie = 1;
    for (int p = 0; p < c.ranks; ++p) {
      if (p == me) continue;
      for (size_t i = 0; i < kBlock - 8; ++i) out[i] = pattern(me, p, i);
      for (size_t k = 0; k + 1 < std::size(cuts); ++k) {
        const size_t off = cuts[k], len = cuts[k + 1] - cuts[k];
        RANK_OK(r.t->write(p, *r.region, out + off, r.keys[p], kBlock * me + off, len, cookie++));
      }
      // The source block is rewritten for the next peer: wait for these writes first.
      const uint64_t upto = cookie;
      RANK_OK(r.poll_until([&] { return r.done_events(1, upto) == upto - 1; }));
      RANK_OK(r.t->write_imm(p, *r.region, out, r.keys[p], kBlock * me + kBlock - 8, 8,
                             (uint64_t{0xabc} << 40) | static_cast<uint64_t>(me), 1000 + p,
                             Completion::kDelivered));
    }
    const std::string bad = check_blocks_at_immediates(r, me, c.ranks, kBlock);
    RANK_CHECK(bad.empty(), "%s", bad.c_str());
    RANK_OK(r.poll_until([&] { return r.t->inflight() == 0; }));
    RANK_OK(r.barrier());
    return 0;
  });
  for (int i = 0; i < c.ranks; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

/// A write_imm posted with Completion::kSent (the staged path's level) carries a whole block: its
/// immediate at the target still follows every byte of it, and it completes at the sender.
TEST_P(OfiRanks, AnImmediateSentWithoutDeliveryAckStillFollowsItsWholePayload) {
  REQUIRE_OFI();
  const Case c = GetParam();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  constexpr size_t kBlock = 1 << 20;
  auto results = fork_ranks(c.ranks, [&](int me) {
    use_case(c);
    NetRank r;
    RANK_OK(open_rank(id, me, c.ranks, kBlock * (2 * c.ranks), &r));
    // Sources: one block per peer after the incoming blocks, so no write waits for another.
    for (int p = 0; p < c.ranks; ++p) {
      if (p == me) continue;
      uint8_t* out = r.mem.data() + kBlock * (c.ranks + p);
      for (size_t i = 0; i < kBlock - 8; ++i) out[i] = pattern(me, p, i);
      RANK_OK(r.t->write_imm(p, *r.region, out, r.keys[p], kBlock * me, kBlock - 8,
                             (uint64_t{0xabc} << 40) | static_cast<uint64_t>(me), 1 + p,
                             Completion::kSent));
    }
    const std::string bad = check_blocks_at_immediates(r, me, c.ranks, kBlock);
    RANK_CHECK(bad.empty(), "%s", bad.c_str());
    RANK_OK(r.poll_until(
        [&] { return r.done_events(1, c.ranks + 1) == static_cast<size_t>(c.ranks - 1); }));
    RANK_OK(r.barrier());
    return 0;
  });
  for (int i = 0; i < c.ranks; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

/// Every rank hammers rank 0's words: fetch-adds hand out each ticket once, adds sum exactly,
/// one compare-swap wins and the others see the winner, swaps chain.
TEST_P(OfiRanks, AtomicsFromEveryRankAreExact) {
  REQUIRE_OFI();
  const Case c = GetParam();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  constexpr int kOps = 300;
  auto results = fork_ranks(c.ranks, [&](int me) {
    use_case(c);
    NetRank r;
    RANK_OK(open_rank(id, me, c.ranks, 4096, &r));
    if (!r.t->caps().atomics) {
      std::fprintf(stderr, "%s has no atomics\n", r.t->provider().c_str());
      return 1;
    }
    RANK_OK(r.barrier());
    const RemoteKey& k = r.keys[0];
    for (int i = 0; i < kOps; ++i) {
      RANK_OK(r.t->atomic(0, AtomicOp::kFetchAdd, k, 0, 1, 0, 1 + i));
      RANK_OK(r.t->atomic(0, AtomicOp::kAdd, k, 8, static_cast<uint64_t>(me + 1), 0, 10000 + i));
    }
    RANK_OK(r.t->atomic(0, AtomicOp::kCompareSwap, k, 16, static_cast<uint64_t>(me + 1), 0, 20000));
    RANK_OK(r.t->atomic(0, AtomicOp::kSwap, k, 24, static_cast<uint64_t>(me + 1) << 8, 0, 20001));
    RANK_OK(r.poll_until([&] { return r.t->inflight() == 0; }));
    std::vector<uint64_t> mine(kOps + 2);
    for (const Event& e : r.events) {
      if (e.kind != EventKind::kDone) continue;
      RANK_CHECK(e.status == GICL_SUCCESS, "atomic %llu failed", (unsigned long long)e.cookie);
      if (e.cookie >= 1 && e.cookie <= kOps) mine[e.cookie - 1] = e.value;
      if (e.cookie == 20000) mine[kOps] = e.value;
      if (e.cookie == 20001) mine[kOps + 1] = e.value;
    }
    RANK_OK(r.barrier());
    std::vector<uint64_t> all(mine.size() * c.ranks);
    std::copy(mine.begin(), mine.end(), all.begin() + static_cast<long>(mine.size() * me));
    RANK_OK(r.bs->allgather(all.data(), mine.size() * sizeof(uint64_t)));
    std::set<uint64_t> tickets;
    int winners = 0;
    std::multiset<uint64_t> swapped;
    for (int q = 0; q < c.ranks; ++q) {
      const uint64_t* v = &all[mine.size() * q];
      for (int i = 0; i < kOps; ++i) tickets.insert(v[i]);
      winners += v[kOps] == 0;
      swapped.insert(v[kOps + 1]);
    }
    RANK_CHECK(tickets.size() == static_cast<size_t>(kOps * c.ranks) &&
                   *tickets.rbegin() == static_cast<uint64_t>(kOps * c.ranks - 1),
               "fetch-add handed out %zu distinct tickets, the largest %llu", tickets.size(),
               (unsigned long long)*tickets.rbegin());
    RANK_CHECK(winners == 1, "%d compare-swaps saw 0", winners);
    if (me == 0) {
      uint64_t w[4];
      std::memcpy(w, r.mem.data(), sizeof(w));
      uint64_t sum = 0;
      for (int q = 0; q < c.ranks; ++q) sum += static_cast<uint64_t>(q + 1) * kOps;
      RANK_CHECK(w[0] == static_cast<uint64_t>(kOps * c.ranks), "fetch-add word %llu",
                 (unsigned long long)w[0]);
      RANK_CHECK(w[1] == sum, "add word %llu, expected %llu", (unsigned long long)w[1],
                 (unsigned long long)sum);
      RANK_CHECK(w[2] >= 1 && w[2] <= static_cast<uint64_t>(c.ranks), "cswap word %llu",
                 (unsigned long long)w[2]);
      for (int q = 0; q < c.ranks; ++q)
        RANK_CHECK(all[mine.size() * q + kOps] == 0 || all[mine.size() * q + kOps] == w[2],
                   "rank %d's compare-swap saw %llu, neither 0 nor the winner", q,
                   (unsigned long long)all[mine.size() * q + kOps]);
      // The swaps form one chain: the old values and the final one are 0 and every new value.
      swapped.insert(w[3]);
      std::multiset<uint64_t> expect{0};
      for (int q = 0; q < c.ranks; ++q) expect.insert(static_cast<uint64_t>(q + 1) << 8);
      RANK_CHECK(swapped == expect, "the swaps do not chain");
    }
    RANK_OK(r.barrier());
    return 0;
  });
  for (int i = 0; i < c.ranks; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

/// Each rank reads an odd-sized, odd-offset range of every peer's region.
TEST_P(OfiRanks, ReadsReturnThePeersBytes) {
  REQUIRE_OFI();
  const Case c = GetParam();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  constexpr size_t kBytes = 1 << 20;
  auto results = fork_ranks(c.ranks, [&](int me) {
    use_case(c);
    NetRank r;
    RANK_OK(open_rank(id, me, c.ranks, 2 * kBytes, &r));
    for (size_t i = 0; i < kBytes; ++i) r.mem[i] = pattern(me, me, i);
    RANK_OK(r.barrier());
    uint8_t* in = r.mem.data() + kBytes;
    for (int p = 0; p < c.ranks; ++p) {
      const size_t off = 3 + static_cast<size_t>(p) * 1000, len = kBytes - 7 - off;
      RANK_OK(r.t->read(p, *r.region, in, r.keys[p], off, len, 1 + p));
      RANK_OK(r.poll_until([&] { return r.t->inflight() == 0; }));
      for (size_t i = 0; i < len; ++i)
        RANK_CHECK(in[i] == pattern(p, p, off + i), "byte %zu read from rank %d", i, p);
    }
    RANK_OK(r.barrier());
    return 0;
  });
  for (int i = 0; i < c.ranks; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

/// Rank 0 posts a burst of writes and a flush to rank 1: the flush's event comes after every
/// write's, and rank 1 sees all the bytes once rank 0 says so.
TEST_P(OfiRanks, AFlushCompletesAfterEveryEarlierWrite) {
  REQUIRE_OFI();
  const Case c = GetParam();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  // Alternately below and at the size spread over several endpoints (net/endpoints), so that
  // a flush must cover every endpoint.
  constexpr size_t kPiece = 64 << 10;
  constexpr int kPieces = 400;  // more than max_inflight: posting waits for room
  auto results = fork_ranks(c.ranks, [&](int me) {
    use_case(c);
    NetRank r;
    RANK_OK(open_rank(id, me, c.ranks, 2 * kPiece * kPieces, &r));
    if (me == 0) {
      uint8_t* out = r.mem.data() + kPiece * kPieces;
      for (size_t i = 0; i < kPiece * kPieces; ++i) out[i] = pattern(0, 1, i);
      for (int i = 0; i < kPieces; ++i) {
        const size_t len = i % 2 ? kPiece : kPiece - 4096;
        RANK_OK(r.t->write(1, *r.region, out + kPiece * i, r.keys[1], kPiece * i, len, 1 + i));
      }
      RANK_OK(r.t->flush(1, 9999));
      RANK_OK(r.poll_until([&] { return r.done_events(9999, 10000) == 1; }));
      const auto flush_at = std::find_if(r.events.begin(), r.events.end(),
                                         [](const Event& e) { return e.cookie == 9999; });
      RANK_CHECK(flush_at->status == GICL_SUCCESS, "flush failed");
      size_t before = 0;
      for (auto it = r.events.begin(); it != flush_at; ++it) before += it->cookie <= kPieces;
      RANK_CHECK(before == kPieces, "the flush fired after %zu of %d writes", before, kPieces);
    }
    RANK_OK(r.barrier());
    if (me == 1)
      for (size_t i = 0; i < kPiece * kPieces; ++i) {
        const bool written = (i / kPiece) % 2 == 1 || i % kPiece < kPiece - 4096;
        RANK_CHECK(r.mem[i] == (written ? pattern(0, 1, i) : 0), "byte %zu", i);
      }
    RANK_OK(r.barrier());
    return 0;
  });
  for (int i = 0; i < c.ranks; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

/// The GPU's closest NICs steer the domain: with every interface offered (FI_TCP_IFACE unset; the
/// first is another where the machine has one), "lo" among them opens tcp on loopback; names the
/// provider does not offer leave its first domain.
TEST(Ofi, TheGpusClosestNicChoosesTheDomain) {
  REQUIRE_OFI();
  auto rc = fork_ranks(1, [](int) {
    use_provider("tcp;ofi_rxm");
    unsetenv("FI_TCP_IFACE");
    OpenArgs a;
    a.nics = {"ib7", "lo"};
    std::unique_ptr<Transport> t;
    RANK_OK(open_transport(Backend::kOfi, a, &t));
    RANK_CHECK(t->describe().find(" on lo") != std::string::npos, "%s", t->describe().c_str());
    a.nics = {"no_such_nic"};
    RANK_OK(open_transport(Backend::kOfi, a, &t));
    return 0;
  });
  EXPECT_EQ(rc[0].code, 0);
}

/// open_connections: every pair connected, no byte of the ranks' regions written, nothing left
/// in flight; then every rank writes to every other at once and each write lands.
TEST_P(OfiRanks, ConnectionsOpenLowerRankFirstAndWritesThenCross) {
  REQUIRE_OFI();
  const Case c = GetParam();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  const int n = c.ranks;
  auto results = fork_ranks(n, [&](int me) {
    use_case(c);
    NetRank r;
    RANK_OK(open_rank(id, me, n, 64 * n, &r));
    std::fill(r.mem.begin(), r.mem.end(), 0xee);
    RANK_OK(open_connections(*r.t, *r.bs, 20000));
    RANK_CHECK(r.t->inflight() == 0, "%d operations still in flight", r.t->inflight());
    for (size_t i = 0; i < r.mem.size(); ++i)
      RANK_CHECK(r.mem[i] == 0xee, "byte %zu written by the connections' writes", i);
    RANK_OK(r.barrier());  // every rank checked before any writes
    uint8_t* out = r.mem.data() + 64 * me;
    for (int i = 0; i < 64; ++i) out[i] = pattern(me, me, i);
    for (int p = 0; p < n; ++p)
      if (p != me) RANK_OK(r.t->write(p, *r.region, out, r.keys[p], 64 * me, 64, p));
    RANK_OK(r.poll_until([&] { return r.done_events(0, n) == static_cast<size_t>(n - 1); }));
    RANK_OK(r.barrier());
    for (int p = 0; p < n; ++p)
      for (int i = 0; i < 64 && p != me; ++i)
        RANK_CHECK(r.mem[64 * p + i] == pattern(p, p, i), "byte %d from rank %d", i, p);
    RANK_OK(r.barrier());
    return 0;
  });
  for (int i = 0; i < n; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

/// A rank that never opens its connections (it exited): the others fail rather than wait, each
/// naming a rank that is gone (the bootstrap's exchanges see rank 1 leave, or a rank that left
/// after failing on it).
TEST(Ofi, ARankThatNeverConnectsIsNamed) {
  REQUIRE_OFI();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(3, [&](int me) {
    use_provider("tcp;ofi_rxm");
    NetRank r;
    RANK_OK(open_rank(id, me, 3, 64, &r));
    if (me == 1) return 0;  // gone before its first write
    const Status s = open_connections(*r.t, *r.bs, 2000);
    RANK_CHECK(!s.ok(), "rank %d connected without rank 1", me);
    const std::string why = last_error();
    const bool names = why.find("rank 1 ") != std::string::npos ||
                       (me == 0 && why.find("rank 2 ") != std::string::npos);
    RANK_CHECK(names, "rank %d: '%s' names no rank that is gone", me, why.c_str());
    return 0;
  });
  for (int i = 0; i < 3; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

// Several endpoints per process (net/endpoints): the same guarantees through threads that each
// drive an endpoint, operations from 64 KiB spread over them.
INSTANTIATE_TEST_SUITE_P(Providers, OfiRanks,
                         ::testing::Values(Case{"tcp;ofi_rxm", 2}, Case{"tcp;ofi_rxm", 3},
                                           Case{"shm", 2}, Case{"shm", 3},
                                           Case{"tcp;ofi_rxm", 2, 3}, Case{"tcp;ofi_rxm", 3, 2},
                                           Case{"shm", 2, 2}),
                         case_name);

int expect_error(Status s, gicl_result_t code, const char* needle) {
  RANK_CHECK(s.code() == code, "got %d (%s), expected %d", s.code(), last_error(), code);
  RANK_CHECK(std::strstr(last_error(), needle) != nullptr, "message '%s' lacks '%s'", last_error(),
             needle);
  return 0;
}

TEST(Ofi, BadArgumentsAreNamed) {
  REQUIRE_OFI();
  // One endpoint, and two (net/endpoints checks before handing an operation to a thread).
  auto results = fork_ranks(2, [&](int which) {
    use_case(Case{"tcp;ofi_rxm", 1, which + 1});
    bootstrap::UniqueIdData own;
    RANK_OK(bootstrap::make_unique_id(&own));
    NetRank r;
    RANK_OK(open_rank(own, 0, 1, 4096, &r));
    std::vector<uint8_t> other(64);
    int bad = 0;
    bad |= expect_error(r.t->write(0, *r.region, other.data(), r.keys[0], 0, 8, 1),
                        GICL_INVALID_ARGUMENT, "outside its registered region");
    bad |= expect_error(r.t->write(0, *r.region, r.mem.data() + 4000, r.keys[0], 0, 200, 1),
                        GICL_INVALID_ARGUMENT, "outside its registered region");
    bad |= expect_error(r.t->write(0, *r.region, r.mem.data(), r.keys[0], 4000, 200, 1),
                        GICL_INVALID_ARGUMENT, "offset 4000 + 200 bytes exceeds");
    bad |= expect_error(r.t->write(3, *r.region, r.mem.data(), r.keys[0], 0, 8, 1),
                        GICL_INVALID_ARGUMENT, "peer 3 is not a rank of [0, 1)");
    bad |= expect_error(r.t->atomic(0, AtomicOp::kAdd, r.keys[0], 4, 1, 0, 1),
                        GICL_INVALID_ARGUMENT, "not 8-byte aligned");
    RemoteKey foreign = r.keys[0];
    foreign.backend = static_cast<uint8_t>(Backend::kVerbs);
    bad |= expect_error(r.t->read(0, *r.region, r.mem.data(), foreign, 0, 8, 1),
                        GICL_INVALID_ARGUMENT, "is not a key of the ofi backend");
    RANK_CHECK(r.t->inflight() == 0, "a refused operation stayed in flight");
    return bad;
  });
  EXPECT_EQ(results[0].code, 0) << "one endpoint";
  EXPECT_EQ(results[1].code, 0) << "two endpoints";
}

/// GICL_NET_ENDPOINTS: the transport says how many it drives; the verbs backend, whose keys
/// differ per protection domain, refuses more than one, naming the setting.
TEST(Ofi, SeveralEndpointsAreDescribedAndVerbsTakesOne) {
  REQUIRE_OFI();
  auto rc = fork_ranks(1, [](int) {
    use_case(Case{"tcp;ofi_rxm", 1, 4});
    std::unique_ptr<Transport> t;
    RANK_OK(open_transport(Backend::kOfi, OpenArgs{}, &t));
    RANK_CHECK(t->endpoints() == 4, "%d endpoints", t->endpoints());
    RANK_CHECK(t->describe().find("4 endpoints") != std::string::npos, "%s", t->describe().c_str());
    return expect_error(open_transport(Backend::kVerbs, OpenArgs{}, &t), GICL_INVALID_ARGUMENT,
                        "GICL_NET_ENDPOINTS=4");
  });
  EXPECT_EQ(rc[0].code, 0);
}

/// An interface other than loopback that is up with an IPv4 address, or "".
std::string other_interface() {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return "";
  std::string name;
  for (ifaddrs* i = all; i != nullptr && name.empty(); i = i->ifa_next)
    if (i->ifa_addr != nullptr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
        !(i->ifa_flags & IFF_LOOPBACK))
      name = i->ifa_name;
  freeifaddrs(all);
  return name;
}

/// Two rails (loopback and another interface, as tcp's domains): endpoints open on both in turn,
/// at least as many as rails even where GICL_NET_ENDPOINTS asks for one, and 64 writes of
/// 256 KiB each way at once (which spill from endpoint 0 to the other) land, every byte checked.
TEST(Ofi, EndpointsSpreadOverRailsAndWritesLandThroughEach) {
  REQUIRE_OFI();
  const std::string other = other_interface();
  if (other.empty()) GTEST_SKIP() << "no interface but loopback is up here";
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  constexpr size_t kPiece = 256 << 10, kPieces = 64, kBlock = kPiece * kPieces;
  auto results = fork_ranks(2, [&](int me) {
    use_provider("tcp;ofi_rxm");
    unsetenv("FI_TCP_IFACE");
    setenv("GICL_NET_ENDPOINTS", "1", 1);
    {
      OpenArgs probe;
      probe.nics = {other};
      std::unique_ptr<Transport> t;
      RANK_OK(open_transport(Backend::kOfi, probe, &t));
      if (t->describe().find(" on " + other) == std::string::npos) return 77;  // no such domain
    }
    NetRank r;
    RANK_OK(open_rank(id, me, 2, 2 * kBlock, &r, {{"lo"}, {other}}));
    const std::string d = r.t->describe();
    RANK_CHECK(r.t->endpoints() == 2 && d.find(" on lo") != std::string::npos &&
                   d.find(" on " + other) != std::string::npos,
               "%d endpoints: %s", r.t->endpoints(), d.c_str());
    if (me == 0) std::printf("%s\n", d.c_str());
    RANK_OK(open_connections(*r.t, *r.bs, 30000));
    const int peer = 1 - me;
    uint8_t* out = r.mem.data() + kBlock;  // the source; the peer writes into [0, kBlock)
    for (size_t i = 0; i < kBlock; ++i) out[i] = pattern(me, peer, i);
    for (size_t k = 0; k < kPieces; ++k)
      RANK_OK(
          r.t->write(peer, *r.region, out + k * kPiece, r.keys[peer], k * kPiece, kPiece, 1 + k));
    RANK_OK(r.poll_until([&] { return r.done_events(1, kPieces + 1) == kPieces; }));
    RANK_OK(r.barrier());
    for (size_t i = 0; i < kBlock; ++i)
      RANK_CHECK(r.mem[i] == pattern(peer, me, i), "byte %zu from rank %d", i, peer);
    return 0;
  });
  if (results[0].code == 77 || results[1].code == 77) GTEST_SKIP() << "tcp lists no second domain";
  for (int i = 0; i < 2; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

/// GICL_NET_ENDPOINTS=0 (the default) opens 4 endpoints on providers over kernel TCP sockets,
/// whose data moves on the thread that progresses them, and 1 elsewhere.
TEST(Ofi, AutoEndpointsAreFourOnTcpAndOneOnShm) {
  REQUIRE_OFI();
  EXPECT_EQ(auto_endpoints("tcp;ofi_rxm"), 4);
  EXPECT_EQ(auto_endpoints("tcp"), 4);
  EXPECT_EQ(auto_endpoints("sockets"), 4);
  EXPECT_EQ(auto_endpoints("efa"), 1);
  EXPECT_EQ(auto_endpoints("verbs;ofi_rxm"), 1);
  EXPECT_EQ(auto_endpoints("shm"), 1);
  auto rc = fork_ranks(1, [](int) {
    use_case(Case{"tcp;ofi_rxm", 1, 0});
    std::unique_ptr<Transport> t;
    RANK_OK(open_transport(Backend::kOfi, OpenArgs{}, &t));
    RANK_CHECK(t->endpoints() == 4, "tcp;ofi_rxm: %d endpoints", t->endpoints());
    use_case(Case{"shm", 1, 0});
    RANK_OK(open_transport(Backend::kOfi, OpenArgs{}, &t));
    RANK_CHECK(t->endpoints() == 1, "shm: %d endpoints", t->endpoints());
    return 0;
  });
  EXPECT_EQ(rc[0].code, 0);
}

/// This process's threads whose name starts with `prefix`.
std::vector<pid_t> threads_named(const std::string& prefix) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return out;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name) && name.rfind(prefix, 0) == 0)
      out.push_back(static_cast<pid_t>(std::stol(e->d_name)));
  }
  closedir(d);
  return out;
}

/// A thread's user + system CPU time in clock ticks (/proc/self/task/TID/stat fields 14 and 15).
long thread_ticks(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::istringstream rest(all.substr(all.rfind(')') + 2));  // from field 3, the state
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

/// The endpoint threads start from the first poll's thread; where that thread is pinned to one
/// core (the proxy is), they are born on the opening thread's other cores, named gicl-epK, and
/// idle they nap rather than spin.
TEST(Ofi, EndpointThreadsAvoidThePinnedStarterAndNapWhenIdle) {
  REQUIRE_OFI();
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0) << std::strerror(errno);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "one CPU: no other core for the endpoint threads";
  auto rc = fork_ranks(1, [&](int) {
    use_case(Case{"tcp;ofi_rxm", 1, 3});
    std::unique_ptr<Transport> t;
    RANK_OK(open_transport(Backend::kOfi, OpenArgs{}, &t));  // on the unpinned thread
    int pinned = 0;
    while (!CPU_ISSET(pinned, &all)) ++pinned;
    std::string bad;
    std::thread starter([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(pinned, &one);
      if (const int e = pthread_setaffinity_np(pthread_self(), sizeof(one), &one))
        bad = std::string("pthread_setaffinity_np: ") + std::strerror(e);
      Event ev[4];
      int n = 0;
      if (bad.empty() && !t->poll(ev, 4, &n).ok()) bad = last_error();
    });
    starter.join();
    RANK_CHECK(bad.empty(), "%s", bad.c_str());
    const std::vector<pid_t> eps = threads_named("gicl-ep");
    RANK_CHECK(eps.size() == 2, "%zu threads named gicl-ep*, 2 expected", eps.size());
    for (pid_t tid : eps) {
      cpu_set_t mask;
      RANK_CHECK(sched_getaffinity(tid, sizeof(mask), &mask) == 0, "sched_getaffinity: %s",
                 std::strerror(errno));
      RANK_CHECK(!CPU_ISSET(pinned, &mask), "thread %d may run on the starter's core %d", tid,
                 pinned);
      RANK_CHECK(CPU_COUNT(&mask) == CPU_COUNT(&all) - 1, "thread %d has %d cores of %d", tid,
                 CPU_COUNT(&mask), CPU_COUNT(&all));
    }
    // Past the busy window, a second of idling: a spinning thread would use most of it.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::vector<long> before;
    for (pid_t tid : eps) before.push_back(thread_ticks(tid));
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const long hz = sysconf(_SC_CLK_TCK);
    for (size_t i = 0; i < eps.size(); ++i) {
      const long used = thread_ticks(eps[i]) - before[i];
      std::printf("idle endpoint thread %d: %.1f %% of a core\n", eps[i], 100.0 * used / hz);
      RANK_CHECK(used * 4 < hz, "idle endpoint thread %d used %ld of %ld ticks in 1 s", eps[i],
                 used, hz);
    }
    return 0;
  });
  EXPECT_EQ(rc[0].code, 0);
}

TEST(Ofi, AnUnknownProviderListsTheOnesHere) {
  REQUIRE_OFI();
  auto results = fork_ranks(1, [&](int) {
    use_provider("no-such-provider");
    std::unique_ptr<Transport> t;
    return expect_error(open_transport(Backend::kOfi, OpenArgs{}, &t), GICL_INVALID_ARGUMENT,
                        "GICL_OFI_PROVIDER=no-such-provider") |
           expect_error(open_transport(Backend::kOfi, OpenArgs{}, &t), GICL_INVALID_ARGUMENT,
                        "tcp;ofi_rxm");
  });
  EXPECT_EQ(results[0].code, 0);
}

TEST(Ofi, RanksOnDifferentProvidersAreNamed) {
  REQUIRE_OFI();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(2, [&](int me) {
    use_provider(me == 0 ? "tcp;ofi_rxm" : "shm");
    NetRank r;
    const Status s = open_rank(id, me, 2, 4096, &r);
    return expect_error(s, GICL_REMOTE_ERROR, me == 0 ? "rank 1 opened ofi shm" : "rank 0 opened");
  });
  for (int i = 0; i < 2; ++i) EXPECT_EQ(results[i].code, 0) << "rank " << i;
}

/// Rank 1 dies after connecting; rank 0 keeps writing to it and flushes. Whatever the provider
/// reports (a connection error, or nothing at all), the flush fails naming rank 1 within the
/// timeout, and rank 0 is not left hanging.
class OfiProviders : public ::testing::TestWithParam<Case> {};

TEST_P(OfiProviders, APeerThatDiesFailsTheOperationsToItNamed) {
  REQUIRE_OFI();
  const Case c = GetParam();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(2, [&](int me) {
    use_case(c);
    setenv("GICL_NET_TIMEOUT", "2000", 1);
    NetRank r;
    RANK_OK(open_rank(id, me, 2, 1 << 20, &r));
    int32_t pids[2] = {0, 0};
    pids[me] = static_cast<int32_t>(getpid());
    RANK_OK(r.bs->allgather(pids, sizeof(int32_t)));
    RANK_OK(r.barrier());
    if (me == 1) _exit(0);
    // Writes start once rank 1 is gone (and reaped): shm copies straight into a live peer's
    // memory (CMA) without its help, so a peer still exiting would take them.
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
         kill(pids[1], 0) == 0 && std::chrono::steady_clock::now() < until;)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto t0 = std::chrono::steady_clock::now();
    Status s = GICL_SUCCESS;
    for (int i = 0; i < 64 && s.ok(); ++i)
      s = r.t->write(1, *r.region, r.mem.data(), r.keys[1], 0, 64 << 10, 1 + i);
    if (s.ok()) s = r.t->flush(1, 500);
    if (s.ok()) s = r.poll_until([&] { return r.done_events(500, 501) == 1; }, 20000);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    RANK_CHECK(secs < 15, "took %.1f s", secs);
    if (!s.ok()) {  // refused at posting: the message names the peer
      RANK_CHECK(std::strstr(last_error(), "rank 1") != nullptr, "message '%s'", last_error());
      return 0;
    }
    const auto f = std::find_if(r.events.begin(), r.events.end(),
                                [](const Event& e) { return e.cookie == 500; });
    RANK_CHECK(f->status != GICL_SUCCESS && f->peer == 1,
               "the flush to the dead rank 1 reported status %d for rank %d", f->status, f->peer);
    return 0;
  });
  EXPECT_EQ(results[0].code, 0);
}

INSTANTIATE_TEST_SUITE_P(Providers, OfiProviders,
                         ::testing::Values(Case{"tcp;ofi_rxm", 2}, Case{"shm", 2},
                                           Case{"tcp;ofi_rxm", 2, 2}),
                         case_name);

}  // namespace
}  // namespace gicl::net
