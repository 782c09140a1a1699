// SPDX-License-Identifier: Apache-2.0
// The bootstrap between real processes over loopback: 1..16 ranks, every operation, random sizes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/auth.hpp"
#include "bootstrap/bootstrap.hpp"
#include "bootstrap/unique_id.hpp"
#include "mp/fork_ranks.hpp"

namespace gicl {
namespace {

using bootstrap::Bootstrap;
using test::fork_ranks;

int exercise(const bootstrap::UniqueIdData& id, int rank, int n, uint32_t seed) {
  std::unique_ptr<Bootstrap> b;
  RANK_OK(Bootstrap::create(id, rank, n, nullptr, 30000, &b));
  RANK_CHECK(b->rank() == rank && b->nranks() == n, "identity");
  std::mt19937 rng(seed);  // same seed on all ranks: everyone knows the sizes
  for (int round = 0; round < 4; ++round) {
    // allgather of a random block size, content derived from (rank, round, index)
    const size_t bytes = 1 + rng() % (round == 3 ? 300000 : 257);
    std::vector<uint8_t> buf(bytes * n, 0xee);
    for (size_t i = 0; i < bytes; ++i)
      buf[rank * bytes + i] = static_cast<uint8_t>(rank * 31 + round * 7 + i);
    RANK_OK(b->allgather(buf.data(), bytes));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < bytes; ++i)
        RANK_CHECK(buf[r * bytes + i] == static_cast<uint8_t>(r * 31 + round * 7 + i),
                   "allgather block %d byte %zu", r, i);
    // broadcast from a random root
    const int root = static_cast<int>(rng() % n);
    std::vector<uint32_t> bc(1 + rng() % 1000, 0);
    if (rank == root)
      for (size_t i = 0; i < bc.size(); ++i) bc[i] = static_cast<uint32_t>(i * 2654435761u + round);
    RANK_OK(b->broadcast(bc.data(), bc.size() * 4, root));
    for (size_t i = 0; i < bc.size(); ++i)
      RANK_CHECK(bc[i] == static_cast<uint32_t>(i * 2654435761u + round), "broadcast word %zu", i);
    RANK_OK(b->barrier());
    // point to point: each rank sends to rank+shift and receives from rank-shift
    const int shift = 1 + static_cast<int>(rng() % std::max(1, n - 1));
    const size_t len = rng() % 70000;
    const int to = (rank + shift) % n, from = (rank - shift % n + n) % n;
    std::vector<uint8_t> out(len), in(len);
    for (size_t i = 0; i < len; ++i) out[i] = static_cast<uint8_t>(rank ^ i);
    if (to != rank) {
      RANK_OK(b->send(to, bootstrap::kUserTagBase + round, out.data(), len));
      RANK_OK(b->recv(from, bootstrap::kUserTagBase + round, in.data(), len));
      for (size_t i = 0; i < len; ++i)
        RANK_CHECK(in[i] == static_cast<uint8_t>(from ^ i), "p2p byte %zu from %d", i, from);
    }
  }
  return 0;
}

class BootstrapRanks : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapRanks, AllOperationsWithRandomSizes) {
  const int n = GetParam();
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(n, [&](int r) { return exercise(id, r, n, 1234u + n); });
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Sizes, BootstrapRanks, ::testing::Values(1, 2, 3, 4, 5, 7, 8, 16));

TEST(Bootstrap, WorksOverIpv6) {
  setenv("GICL_SOCKET_FAMILY", "IPV6", 1);
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  EXPECT_EQ(id.root.family, AF_INET6);
  auto results = fork_ranks(3, [&](int r) { return exercise(id, r, 3, 99); });
  unsetenv("GICL_SOCKET_FAMILY");
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

TEST(Bootstrap, MismatchedMessageLengthIsAnErrorNamingThePeer) {
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(2, [&](int r) {
    std::unique_ptr<Bootstrap> b;
    RANK_OK(Bootstrap::create(id, r, 2, nullptr, 5000, &b));
    char buf[16] = {};
    if (r == 0) {
      RANK_OK(b->send(1, bootstrap::kUserTagBase, buf, 8));
      RANK_OK(b->barrier());
      return 0;
    }
    Status s = b->recv(0, bootstrap::kUserTagBase, buf, 16);
    RANK_CHECK(s.code() == GICL_REMOTE_ERROR, "got %d", s.code());
    RANK_CHECK(std::string(last_error()).find("rank 0 sent 8 bytes") != std::string::npos, "%s",
               last_error());
    RANK_OK(b->barrier());
    return 0;
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

/// Processes that disagree about the job fail at once (not at the timeout), each with an error
/// naming the disagreement: `ranks[i]` and `sizes[i]` are what process i says it is. The last
/// process starts 300 ms after the others, so that the root has seen the disagreement before a
/// job could be complete (a complete job starts, and is then no longer the root's to refuse).
void expect_refused(const std::vector<int>& ranks, const std::vector<int>& sizes,
                    const std::vector<std::string>& words) {
  bootstrap::UniqueIdData id;
  ASSERT_TRUE(test::child_root_id(&id));
  const int last = static_cast<int>(ranks.size()) - 1;
  auto results = fork_ranks(static_cast<int>(ranks.size()), [&](int i) {
    if (i == last) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::unique_ptr<Bootstrap> b;
    const Status s = Bootstrap::create(id, ranks[i], sizes[i], nullptr, 20000, &b);
    RANK_CHECK(s.code() == GICL_INVALID_USAGE, "process %d: got %d: %s", i, s.code(), last_error());
    for (const std::string& w : words)
      RANK_CHECK(std::string(last_error()).find(w) != std::string::npos, "process %d: '%s' in %s",
                 i, w.c_str(), last_error());
    return 0;
  });
  for (size_t i = 0; i < ranks.size(); ++i) {
    EXPECT_EQ(results[i].code, 0) << "process " << i;
    EXPECT_LT(results[i].seconds, 10.0) << "process " << i << " waited for the 20 s timeout";
  }
}

TEST(Bootstrap, ARankCountMismatchIsRefusedAtOnceNamingBothSizes) {
  // Whichever of the first two hellos the root reads first sets the job's size; either way both
  // sizes are named, and the process that comes later gets the same answer.
  expect_refused({0, 2, 1}, {2, 3, 2}, {"says the job has", "ranks; the root has"});
}

TEST(Bootstrap, TwoProcessesWithOneRankAreRefusedAtOnce) {
  expect_refused({1, 1, 0}, {3, 3, 3}, {"two processes say they are rank 1 of 3"});
}

// OpenSSL 3 takes process-wide locks inside a MAC computation and when a thread that computed one
// ends; a process forked while the library's threads did either must still authenticate. One-rank
// jobs start and end bootstrap roots without pause (each root thread authenticates the rank and
// ends) while this process forks 3000 children that each compute a MAC; one that does not finish
// within 5 s inherited a lock held by a root thread.
TEST(Bootstrap, AProcessForkedWhileRootsAuthenticateCanAuthenticate) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "forks beside running threads, which the sanitizers' runtimes do not survive "
                  "(docs/testing.md)";
#endif
  auto results = fork_ranks(
      1,
      [](int) {
        const uint8_t key[bootstrap::kSecretBytes] = {1, 2, 3};
        std::atomic<bool> stop{false};
        std::atomic<long> jobs{0};
        std::thread busy([&] {
          while (!stop.load(std::memory_order_relaxed)) {
            bootstrap::UniqueIdData id;
            std::unique_ptr<Bootstrap> b;
            if (bootstrap::make_unique_id(&id).ok() &&
                Bootstrap::create(id, 0, 1, nullptr, 30000, &b).ok())
              ++jobs;
            b.reset();
            bootstrap::reap_roots(false);
          }
        });
        int hung = 0, failed = 0;
        for (int i = 0; i < 3000 && hung == 0; ++i) {
          const pid_t pid = fork();
          if (pid == 0) {
            uint8_t out[16];
            _exit(bootstrap::auth_derive(key, sizeof(key), "child", out, sizeof(out)).ok() ? 0 : 1);
          }
          if (pid < 0) break;
          // Polled every 200 us rather than through fork_ranks (2 ms): the faster the forks
          // follow each other, the more of them land while a root holds OpenSSL's lock.
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
          int status = 0;
          pid_t got = 0;
          while ((got = waitpid(pid, &status, WNOHANG)) == 0 &&
                 std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
          if (got == 0) {
            ++hung;
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
          } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            ++failed;
          }
        }
        stop = true;
        busy.join();
        bootstrap::reap_roots(true);
        RANK_CHECK(jobs.load() > 100, "only %ld one-rank jobs ran", jobs.load());
        RANK_CHECK(hung == 0, "a child forked beside the roots hung in OpenSSL");
        RANK_CHECK(failed == 0, "%d children failed to compute a MAC", failed);
        return 0;
      },
      600000);
  EXPECT_EQ(results[0].code, 0);
}

}  // namespace
}  // namespace gicl
