// SPDX-License-Identifier: Apache-2.0
// The shared-memory host board between real processes: exchanges of every size and rank count
// checked byte for byte over thousands of back-to-back calls (the two-parity reuse), ranks at
// different paces, and the failures a rank causes by exiting, never arriving, passing another
// size or being aborted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/unique_id.hpp"
#include "memory/host_board.hpp"
#include "mp/fork_ranks.hpp"

namespace gicl {
namespace {

using bootstrap::Bootstrap;
using test::fork_ranks;

/// What each rank holds once the board is up.
struct Rank {
  std::unique_ptr<Bootstrap> bs;
  FdChannel channel;
  std::unique_ptr<HostBoard> board;
};

Status open_rank(const bootstrap::UniqueIdData& id, int rank, int n, int64_t timeout_ms,
                 const CancelFlag* cancel, Rank* out) {
  GICL_CHECK(Bootstrap::create(id, rank, n, nullptr, 30000, &out->bs));
  std::vector<pid_t> pids(n);
  pids[rank] = getpid();
  GICL_CHECK(out->bs->allgather(pids.data(), sizeof(pid_t)));
  char job[40];
  const uint8_t* s = out->bs->secret();
  std::snprintf(job, sizeof(job), "board-%02x%02x%02x%02x%02x%02x", s[0], s[1], s[2], s[3], s[4],
                s[5]);
  GICL_CHECK(out->channel.listen(job, rank, s));
  GICL_CHECK(out->bs->barrier());
  std::vector<FdChannel::Peer> peers;
  for (int r = 0; r < n; ++r)
    if (r != rank) peers.push_back({r, pids[r]});
  GICL_CHECK(out->channel.connect(peers, Deadline::after_ms(30000), nullptr));
  HostBoard::Config cfg;
  cfg.rank = rank;
  cfg.pids = pids;
  cfg.timeout_ms = timeout_ms;
  cfg.cancel = cancel;
  return HostBoard::create(cfg, out->bs.get(), &out->channel, &out->board);
}

uint8_t pattern(int rank, int call, size_t i) {
  return static_cast<uint8_t>(rank * 67 + call * 13 + i * 7 + 1);
}

int exchange_many(const bootstrap::UniqueIdData& id, int rank, int n, int calls) {
  Rank me;
  RANK_OK(open_rank(id, rank, n, 30000, nullptr, &me));
  std::mt19937 sizes(77 + n);  // same on every rank: everyone knows each call's size
  std::mt19937 pace(1000 + rank);
  for (int call = 0; call < calls; ++call) {
    const size_t bytes = sizes() % (HostBoard::kBlockBytes + 1);
    std::vector<uint8_t> buf(bytes * n, 0xee);
    for (size_t i = 0; i < bytes; ++i) buf[rank * bytes + i] = pattern(rank, call, i);
    // Some ranks lag now and then, so that fast ranks run a call ahead on the other parity.
    if (pace() % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(pace() % 300));
    RANK_OK(me.board->allgather(buf.data(), bytes));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < bytes; ++i)
        RANK_CHECK(buf[r * bytes + i] == pattern(r, call, i), "call %d: rank %d's byte %zu", call,
                   r, i);
  }
  return 0;
}

class HostBoardRanks : public ::testing::TestWithParam<int> {};

TEST_P(HostBoardRanks, BackToBackExchangesDeliverEveryBlock) {
  const int n = GetParam();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  const int calls = n <= 4 ? 20000 : 4000;
  auto results = fork_ranks(n, [&](int r) { return exchange_many(id, r, n, calls); });
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Sizes, HostBoardRanks, ::testing::Values(1, 2, 3, 5, 8));

/// Each rank's result code and message for the failure cases.
int expect_failure(Status s, gicl_result_t code, const char* needle) {
  RANK_CHECK(s.code() == code, "got %d (%s), expected %d", s.code(), last_error(), code);
  RANK_CHECK(std::strstr(last_error(), needle) != nullptr, "message '%s' lacks '%s'", last_error(),
             needle);
  return 0;
}

TEST(HostBoard, ARankThatExitsIsNamedBeforeTheTimeout) {
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(3, [&](int r) {
    Rank me;
    RANK_OK(open_rank(id, r, 3, 60000, nullptr, &me));
    uint64_t v[3] = {};
    RANK_OK(me.board->allgather(v, sizeof(uint64_t)));
    if (r == 2) _exit(0);  // leaves after one exchange, never reaches the second
    const auto t0 = std::chrono::steady_clock::now();
    const int bad =
        expect_failure(me.board->allgather(v, sizeof(uint64_t)), GICL_REMOTE_ERROR, "rank 2 (pid");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    RANK_CHECK(s < 10.0, "took %.1f s, the liveness check runs every 100 ms", s);
    return bad;
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

TEST(HostBoard, ARankThatNeverArrivesTimesOutNamingIt) {
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(3, [&](int r) {
    Rank me;
    RANK_OK(open_rank(id, r, 3, 400, nullptr, &me));
    uint64_t v[3] = {};
    if (r == 1) {
      // Alive but late: the others must give up at their timeout, not wait for it.
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      return 0;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const int bad = expect_failure(me.board->allgather(v, sizeof(uint64_t)), GICL_TIMEOUT,
                                   ": rank 1 did not reach host exchange #1 within 400 ms");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    RANK_CHECK(s >= 0.39 && s < 2.0, "gave up after %.2f s", s);
    return bad;
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

TEST(HostBoard, RanksPassingDifferentSizesFail) {
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(2, [&](int r) {
    Rank me;
    RANK_OK(open_rank(id, r, 2, 30000, nullptr, &me));
    uint8_t v[2 * 24] = {};
    return expect_failure(me.board->allgather(v, r == 0 ? 16 : 24), GICL_INVALID_USAGE,
                          "not making the same call");
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

TEST(HostBoard, AnAbortWakesAWait) {
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(2, [&](int r) {
    CancelFlag cancel{false};
    Rank me;
    RANK_OK(open_rank(id, r, 2, 60000, &cancel, &me));
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      return 0;
    }
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      cancel.store(true, std::memory_order_release);
    });
    uint64_t v[2] = {};
    const int bad = expect_failure(me.board->allgather(v, sizeof(uint64_t)), GICL_ABORTED,
                                   "aborted in host exchange #1");
    aborter.join();
    return bad;
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

}  // namespace
}  // namespace gicl
