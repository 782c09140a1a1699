// SPDX-License-Identifier: Apache-2.0
// Communicators between real processes (and threads) without a GPU: init, split, teams, destroy,
// abort from another thread, 1000 init/abort cycles that must leave nothing behind, a killed
// rank named by every survivor within a second, a stopped one within GICL_PEER_TIMEOUT, and a
// busy one not at all.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/root.hpp"
#include "common/cuda.hpp"
#include "gicl/gicl.h"
#include "mp/fork_ranks.hpp"

namespace gicl {
namespace {

using test::fork_ranks;

int count_entries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

// "rank 2" in `why` as a whole word: "rank 2 (pid ...)", "rank 2:", "rank 2, rank 3", at the end.
bool names_rank(const std::string& why, int rank) {
  const std::string word = "rank " + std::to_string(rank);
  for (size_t at = why.find(word); at != std::string::npos; at = why.find(word, at + 1)) {
    const size_t end = at + word.size();
    if (end == why.size() || !std::isdigit(static_cast<unsigned char>(why[end]))) return true;
  }
  return false;
}

// The fewest threads /proc/self/task lists until the count is down to `expected` or `wait_ms`
// passed. A joined thread's entry stays a moment after pthread_join returns (the kernel wakes the
// joiner when it clears the thread's id, before it removes the task); a thread never joined stays.
int settled_thread_count(int expected, int wait_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  int n = count_entries("/proc/self/task");
  while (n > expected && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    n = std::min(n, count_entries("/proc/self/task"));
  }
  return n;
}

long resident_kib() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long size = 0, resident = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Device memory in use on the current device (0 without a GPU).
long long gpu_used_bytes() {
  if (cuda_device_count() == 0) return 0;
  size_t free_b = 0, total = 0;
  if (cudaMemGetInfo(&free_b, &total) != cudaSuccess) return 0;
  return static_cast<long long>(total - free_b);
}

/// Seconds on CLOCK_MONOTONIC, comparable across the processes of one machine.
double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// A rank SIGKILLed after init, the root's rank 0 included, at 2, 3 and 4 ranks: every survivor's
// communicator goes into error naming it (GICL_REMOTE_ERROR) within a second of the kill, a host
// call fails at once with that error, and destroy returns without waiting for the dead rank.
TEST(Comm, AKilledRankIsNamedByEverySurvivorWithinASecond) {
  // GICL_TEST_KILL_TRIALS: more trials for a longer look at the delays' tail.
  const int kTrials = test::env_count("GICL_TEST_KILL_TRIALS", 24);
  // Shared with the ranks: the kill's time, and each survivor's delay until it saw the error.
  auto* shared = static_cast<double*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(shared, MAP_FAILED);
  std::vector<double> delays;
  for (int t = 0; t < kTrials; ++t) {
    const int n = 2 + t % 3, victim = (t / 3) % n;
    gicl_unique_id_t id;
    ASSERT_TRUE(test::child_root_id(&id));
    for (int i = 0; i < 8; ++i) shared[i] = -1;
    auto results = fork_ranks(n, [&](int r) {
      gicl_comm_t comm;
      RANK_OK(gicl_comm_init_rank(&comm, n, id, r));
      if (r == victim) {
        shared[7] = now_s();
        kill(getpid(), SIGKILL);
      }
      gicl_result_t e = GICL_SUCCESS;
      const char* why = nullptr;
      const double until = now_s() + 5;
      while (e == GICL_SUCCESS && now_s() < until) {
        RANK_OK(gicl_comm_get_async_error(comm, &e, &why));
        if (e == GICL_SUCCESS) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      shared[r] = now_s();
      RANK_CHECK(e == GICL_REMOTE_ERROR, "no error within 5 s of the kill (%d)", e);
      const std::string name = "rank " + std::to_string(victim) + " (pid ";
      RANK_CHECK(why != nullptr && std::string(why).find(name) != std::string::npos,
                 "the error does not name rank %d: %s", victim, why ? why : "(none)");
      gicl_comm_t sub = nullptr;
      RANK_CHECK(gicl_comm_split(comm, 0, r, &sub) == GICL_REMOTE_ERROR,
                 "a host call after the loss did not fail with it");
      const double t0 = now_s();
      RANK_CHECK(gicl_comm_destroy(comm) == GICL_REMOTE_ERROR, "destroy after the loss");
      RANK_CHECK(now_s() - t0 < 2, "destroy took %.1f s", now_s() - t0);
      return 0;
    });
    for (int r = 0; r < n; ++r) {
      if (r == victim) {
        EXPECT_EQ(results[r].code, 128 + SIGKILL) << "trial " << t;
        continue;
      }
      EXPECT_EQ(results[r].code, 0)
          << "trial " << t << ", rank " << r << " of " << n << ", rank " << victim << " killed";
      if (shared[r] >= 0 && shared[7] >= 0) delays.push_back(shared[r] - shared[7]);
    }
  }
  munmap(shared, 4096);
  ASSERT_FALSE(delays.empty());
  std::sort(delays.begin(), delays.end());
  const double p50 = delays[delays.size() / 2], p99 = delays[delays.size() * 99 / 100];
  std::printf("a killed rank seen by %zu survivors: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
              delays.size(), p50 * 1e3, p99 * 1e3, delays.back() * 1e3);
  EXPECT_LT(delays.back(), 1.0) << "a survivor took longer than 1 s";
}

gicl_result_t wait_error(gicl_comm_t comm, const char** why);

// A rank SIGKILLed at a moment spread over init (from before its hello to after init returns),
// at 2, 3 and 4 ranks, rank 0 included: every survivor fails init, or sees its communicator in
// error after it, naming the killed rank; within a second of the kill, unless the rank died
// before its hello reached the root (nothing then tells a dead rank from a late one: the
// survivors fail at GICL_BOOTSTRAP_TIMEOUT, naming it as missing).
TEST(Comm, ARankKilledDuringInitIsNamedByEverySurvivor) {
  // How long init takes here, to spread the kills over it.
  double init_s = 0;
  {
    gicl_unique_id_t id;
    ASSERT_TRUE(test::child_root_id(&id));
    auto* t = static_cast<double*>(
        mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    auto res = fork_ranks(3, [&](int r) {
      const double t0 = now_s();
      gicl_comm_t comm;
      RANK_OK(gicl_comm_init_rank(&comm, 3, id, r));
      t[r] = now_s() - t0;
      RANK_OK(gicl_comm_destroy(comm));
      return 0;
    });
    for (int r = 0; r < 3; ++r) ASSERT_EQ(res[r].code, 0);
    init_s = std::max({t[0], t[1], t[2]});
    munmap(t, 4096);
  }
  const int kTrials = test::env_count("GICL_TEST_KILL_TRIALS", 30);
  auto* shared = static_cast<double*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(shared, MAP_FAILED);
  std::vector<double> delays;
  int before_hello = 0, in_init = 0, after_init = 0;
  for (int t = 0; t < kTrials; ++t) {
    const int n = 2 + t % 3, victim = (t / 3) % n;
    const double delay = init_s * 1.2 * (t % 10) / 9.0;
    // The root gives up before the ranks do, so that they hear from it which rank is missing.
    setenv("GICL_BOOTSTRAP_TIMEOUT", "1500", 1);
    gicl_unique_id_t id;
    const bool made = test::child_root_id(&id);
    unsetenv("GICL_BOOTSTRAP_TIMEOUT");
    ASSERT_TRUE(made);
    for (int i = 0; i < 16; ++i) shared[i] = -1;
    auto results = fork_ranks(n, [&](int r) {
      setenv("GICL_BOOTSTRAP_TIMEOUT", "2500", 1);
      if (r == victim) {
        std::thread([delay, shared] {
          std::this_thread::sleep_for(std::chrono::duration<double>(delay));
          shared[7] = now_s();
          kill(getpid(), SIGKILL);
        }).detach();
      }
      gicl_comm_t comm = nullptr;
      const gicl_result_t rc = gicl_comm_init_rank(&comm, n, id, r);
      std::string why = rc == GICL_SUCCESS ? "" : gicl_get_last_error();
      if (rc == GICL_SUCCESS) {
        if (r == victim) std::this_thread::sleep_for(std::chrono::seconds(10));  // killed here
        const char* w = nullptr;
        RANK_CHECK(wait_error(comm, &w) == GICL_REMOTE_ERROR, "no error after init");
        why = w != nullptr ? w : "";
        shared[8 + r] = 2;  // seen after init
      } else {
        shared[8 + r] = why.find("did not reach the bootstrap root") != std::string::npos ? 0 : 1;
      }
      shared[r] = now_s();
      // "rank 2 (pid ...)", "rank 2: ..." (lost before the pids were exchanged), "ranks (2)".
      const std::string v = std::to_string(victim);
      const bool named = shared[8 + r] == 0 ? why.find("ranks (" + v + ")") != std::string::npos
                                            : names_rank(why, victim);
      RANK_CHECK(named, "rank %d killed; the error: %s", victim, why.c_str());
      if (comm != nullptr) (void)gicl_comm_destroy(comm);
      return 0;
    });
    for (int r = 0; r < n; ++r) {
      if (r == victim) {
        EXPECT_EQ(results[r].code, 128 + SIGKILL) << "trial " << t;
        continue;
      }
      EXPECT_EQ(results[r].code, 0)
          << "trial " << t << ", rank " << r << " of " << n << ", rank " << victim << " killed";
      const int where = static_cast<int>(shared[8 + r]);
      if (where == 0) {
        ++before_hello;
      } else if (shared[r] >= 0 && shared[7] >= 0) {
        (where == 1 ? in_init : after_init) += 1;
        delays.push_back(shared[r] - shared[7]);
      }
    }
  }
  munmap(shared, 4096);
  std::sort(delays.begin(), delays.end());
  std::printf(
      "init %.1f ms; survivors: %d failed init, %d saw it after init (p50 %.1f ms, max "
      "%.1f ms from the kill), %d timed out (killed before its hello)\n",
      init_s * 1e3, in_init, after_init, delays.empty() ? 0 : delays[delays.size() / 2] * 1e3,
      delays.empty() ? 0 : delays.back() * 1e3, before_hello);
  ASSERT_FALSE(delays.empty());
  EXPECT_LT(delays.back(), 1.0) << "a survivor took longer than 1 s";
}

// A rank whose process is stopped (SIGSTOP) keeps its connections open, as a node that stops
// answering does: only heartbeats find it. At 2 and 3 ranks with the default GICL_PEER_TIMEOUT
// (1000 ms) every survivor names it, saying no heartbeat came, within the timeout; with
// GICL_PEER_TIMEOUT=0 nothing is sent or expected and nobody is named within 2 s.
TEST(Comm, AStoppedRankIsNamedWithinThePeerTimeout) {
  auto* shared = static_cast<double*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(shared, MAP_FAILED);
  std::vector<double> delays;
  for (int t = 0; t < 6; ++t) {
    const bool off = t == 5;
    const int n = off ? 2 : 2 + t % 2, victim = off ? 1 : t % n;
    gicl_unique_id_t id;
    ASSERT_TRUE(test::child_root_id(&id));
    for (int i = 0; i < 8; ++i) shared[i] = -1;
    auto results = fork_ranks(n, [&](int r) {
      if (off) setenv("GICL_PEER_TIMEOUT", "0", 1);
      gicl_comm_t comm;
      RANK_OK(gicl_comm_init_rank(&comm, n, id, r));
      if (r == victim) {
        shared[6] = getpid();
        shared[7] = now_s();
        kill(getpid(), SIGSTOP);
        return 0;  // continued only to be killed
      }
      gicl_result_t e = GICL_SUCCESS;
      const char* why = nullptr;
      const double until = now_s() + (off ? 2 : 5);
      while (e == GICL_SUCCESS && now_s() < until) {
        RANK_OK(gicl_comm_get_async_error(comm, &e, &why));
        if (e == GICL_SUCCESS) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      shared[r] = now_s();
      if (r == (victim + 1) % n) {
        // The survivor that ends the trial: the stopped rank is killed, which closes its
        // connections; the others have decided by then (they see the close after the silence).
        if (!off) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        kill(static_cast<pid_t>(shared[6]), SIGKILL);
      }
      if (off) {
        RANK_CHECK(e == GICL_SUCCESS, "GICL_PEER_TIMEOUT=0, yet rank %d was named: %s", victim,
                   why ? why : "");
        (void)gicl_comm_abort(comm);
        return 0;
      }
      RANK_CHECK(e == GICL_REMOTE_ERROR, "no error within 5 s of the stop (%d)", e);
      const std::string name = "rank " + std::to_string(victim) + " (pid ";
      RANK_CHECK(why != nullptr && std::string(why).find(name) != std::string::npos &&
                     std::string(why).find("no heartbeat for 1000 ms") != std::string::npos,
                 "the error does not name rank %d's silence: %s", victim, why ? why : "(none)");
      RANK_CHECK(gicl_comm_destroy(comm) == GICL_REMOTE_ERROR, "destroy after the loss");
      return 0;
    });
    for (int r = 0; r < n; ++r) {
      if (r == victim) {
        EXPECT_EQ(results[r].code, 128 + SIGKILL) << "trial " << t;
        continue;
      }
      EXPECT_EQ(results[r].code, 0) << "trial " << t << ", rank " << r << " of " << n;
      if (!off && shared[r] >= 0 && shared[7] >= 0) delays.push_back(shared[r] - shared[7]);
    }
  }
  munmap(shared, 4096);
  ASSERT_FALSE(delays.empty());
  std::sort(delays.begin(), delays.end());
  std::printf("a stopped rank named by %zu survivors: p50 %.0f ms, max %.0f ms\n", delays.size(),
              delays[delays.size() / 2] * 1e3, delays.back() * 1e3);
  // Named 0.8 s after the last heartbeat by design; the rest is slack for a loaded machine.
  EXPECT_LT(delays.back(), 1.5) << "a survivor took much longer than GICL_PEER_TIMEOUT";
}

// Heartbeats come from the watch's thread, not the caller's: a rank that computes (or sleeps)
// for 6 x GICL_PEER_TIMEOUT without calling gicl is not taken for lost, nor is a rank that
// waits in destroy for 6 x the timeout for a slower one. Ranks whose GICL_PEER_TIMEOUT differ
// are refused at init, naming it.
TEST(Comm, ABusyRankIsNotTakenForLost) {
  gicl_unique_id_t id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(3, [&](int r) {
    setenv("GICL_PEER_TIMEOUT", "500", 1);
    gicl_comm_t comm;
    RANK_OK(gicl_comm_init_rank(&comm, 3, id, r));
    const double until = now_s() + 3;
    uint64_t spins = 0;
    if (r == 1)
      while (now_s() < until) ++spins;  // busy on the CPU
    else
      std::this_thread::sleep_for(std::chrono::seconds(3));
    RANK_CHECK(r != 1 || spins > 1000, "rank 1 did not spin (%llu)",
               static_cast<unsigned long long>(spins));
    gicl_result_t e = GICL_SUCCESS;
    const char* why = nullptr;
    RANK_OK(gicl_comm_get_async_error(comm, &e, &why));
    RANK_CHECK(e == GICL_SUCCESS, "a busy or sleeping rank was taken for lost: %s", why);
    if (r == 2) std::this_thread::sleep_for(std::chrono::seconds(3));  // the others wait
    RANK_OK(gicl_comm_destroy(comm));
    return 0;
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;

  gicl_unique_id_t id2;
  ASSERT_TRUE(test::child_root_id(&id2));
  auto mism = fork_ranks(2, [&](int r) {
    setenv("GICL_PEER_TIMEOUT", r == 0 ? "1000" : "500", 1);
    gicl_comm_t comm = nullptr;
    const gicl_result_t rc = gicl_comm_init_rank(&comm, 2, id2, r);
    const std::string msg = gicl_get_last_error();
    RANK_CHECK(
        rc == GICL_INVALID_ARGUMENT && msg.find("GICL_PEER_TIMEOUT differs") != std::string::npos,
        "mismatched GICL_PEER_TIMEOUT: %d '%s'", rc, msg.c_str());
    return 0;
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(mism[r].code, 0) << "rank " << r;
}

// Waits up to 5 s for comm's asynchronous error; returns it.
gicl_result_t wait_error(gicl_comm_t comm, const char** why) {
  gicl_result_t e = GICL_SUCCESS;
  const double until = now_s() + 5;
  while (e == GICL_SUCCESS && now_s() < until) {
    if (gicl_comm_get_async_error(comm, &e, why) != GICL_SUCCESS) return GICL_INTERNAL_ERROR;
    if (e == GICL_SUCCESS) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return e;
}

// After a rank is SIGKILLed (the root's rank 0 in one trial, another rank in the other), the
// survivors shrink without it: by its number (GICL_SHRINK_ABORT) at 4 ranks and by
// GICL_SHRINK_LOST at 3. The new communicator has the survivors in their old order, works (a
// split over it, which needs every member's connection), and destroys cleanly; the parent is
// destroyed afterwards, reporting the loss.
TEST(Comm, SurvivorsShrinkWithoutAKilledRankAndContinue) {
  for (int trial = 0; trial < 2; ++trial) {
    const int n = trial == 0 ? 4 : 3, victim = trial == 0 ? 2 : 0;
    gicl_unique_id_t id;
    ASSERT_TRUE(test::child_root_id(&id));
    auto results = fork_ranks(n, [&](int r) {
      gicl_comm_t comm;
      RANK_OK(gicl_comm_init_rank(&comm, n, id, r));
      if (r == victim) kill(getpid(), SIGKILL);
      const char* why = nullptr;
      RANK_CHECK(wait_error(comm, &why) == GICL_REMOTE_ERROR, "the loss was not seen");
      gicl_comm_t small = nullptr;
      const double t0 = now_s();
      if (trial == 0)
        RANK_OK(gicl_comm_shrink(comm, &victim, 1, &small, GICL_SHRINK_ABORT));
      else
        RANK_OK(gicl_comm_shrink(comm, nullptr, GICL_SHRINK_LOST, &small, GICL_SHRINK_DEFAULT));
      const double took = now_s() - t0;
      int sr = -1, ss = -1;
      RANK_OK(gicl_comm_rank(small, &sr));
      RANK_OK(gicl_comm_size(small, &ss));
      RANK_CHECK(ss == n - 1 && sr == (r < victim ? r : r - 1),
                 "world rank %d became %d of %d without rank %d", r, sr, ss, victim);
      gicl_comm_t again = nullptr;
      RANK_OK(gicl_comm_split(small, 0, -sr, &again));
      int ar = -1;
      RANK_OK(gicl_comm_rank(again, &ar));
      RANK_CHECK(ar == ss - 1 - sr, "split of the shrunk communicator: rank %d", ar);
      RANK_OK(gicl_comm_destroy(again));
      RANK_OK(gicl_comm_destroy(small));
      RANK_CHECK(gicl_comm_destroy(comm) == GICL_REMOTE_ERROR, "the parent forgot the loss");
      std::printf("rank %d: shrank %d -> %d in %.1f ms\n", r, n, ss, took * 1e3);
      return 0;
    });
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(results[r].code, r == victim ? 128 + SIGKILL : 0)
          << "trial " << trial << ", rank " << r;
  }
}

// Shrinking a healthy communicator: rank 1 of 4 stays out (it does not call, and destroys the
// parent after the others' shrink). Bad arguments are refused naming them, and ranks that
// exclude different sets fail naming both instead of forming different communicators.
TEST(Comm, ShrinkExcludesNamedRanksAndRefusesMismatchedSets) {
  const int n = 4;
  gicl_unique_id_t id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(n, [&](int r) {
    gicl_comm_t comm;
    RANK_OK(gicl_comm_init_rank(&comm, n, id, r));
    gicl_comm_t small = nullptr;
    const int one = 1, bad[2] = {3, 3}, self = r, range = 9;
    auto refused = [&](gicl_result_t rc, const char* words) {
      return rc == GICL_INVALID_ARGUMENT &&
             std::string(gicl_get_last_error()).find(words) != std::string::npos;
    };
    RANK_CHECK(refused(gicl_comm_shrink(comm, bad, 2, &small, 0), "listed twice"), "duplicate");
    RANK_CHECK(refused(gicl_comm_shrink(comm, &range, 1, &small, 0), "exclude_ranks[0]=9"),
               "out of range");
    RANK_CHECK(refused(gicl_comm_shrink(comm, &self, 1, &small, 0), "does not call"), "self");
    RANK_CHECK(refused(gicl_comm_shrink(comm, &one, 1, &small, 7), "flags=7"), "flags");
    RANK_CHECK(refused(gicl_comm_shrink(comm, nullptr, 1, &small, 0), "exclude_ranks must not"),
               "NULL list");
    RANK_CHECK(gicl_comm_shrink(comm, nullptr, GICL_SHRINK_LOST, &small, 0) == GICL_INVALID_USAGE,
               "GICL_SHRINK_LOST with no rank lost");
    if (r != 1) {
      RANK_OK(gicl_comm_shrink(comm, &one, 1, &small, GICL_SHRINK_DEFAULT));
      int sr = -1, ss = -1;
      RANK_OK(gicl_comm_rank(small, &sr));
      RANK_OK(gicl_comm_size(small, &ss));
      RANK_CHECK(ss == 3 && sr == (r == 0 ? 0 : r - 1), "rank %d became %d of %d", r, sr, ss);
      RANK_OK(gicl_comm_destroy(small));
    }
    RANK_OK(gicl_comm_destroy(comm));
    return 0;
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;

  // Ranks 0 and 1 exclude nobody, rank 2 excludes rank 1: rank 2 receives the new root's set and
  // refuses at once naming both; ranks 0 and 1 time out forming a communicator rank 2 never
  // joins (GICL_BOOTSTRAP_TIMEOUT=1500).
  gicl_unique_id_t id3;
  ASSERT_TRUE(test::child_root_id(&id3));
  auto mism = fork_ranks(3, [&](int r) {
    setenv("GICL_BOOTSTRAP_TIMEOUT", "1500", 1);
    gicl_comm_t comm;
    RANK_OK(gicl_comm_init_rank(&comm, 3, id3, r));
    const int one = 1;
    gicl_comm_t small = nullptr;
    const double t0 = now_s();
    const gicl_result_t rc = gicl_comm_shrink(comm, &one, r == 2 ? 1 : 0, &small, 0);
    const std::string msg = gicl_get_last_error();
    if (r == 2)
      RANK_CHECK(rc == GICL_INVALID_USAGE &&
                     msg.find("rank 0 excludes none, rank 2 excludes {1}") != std::string::npos,
                 "mismatched sets: %d '%s'", rc, msg.c_str());
    else
      RANK_CHECK(rc != GICL_SUCCESS && small == nullptr, "a shrink without rank 2 formed");
    RANK_CHECK(now_s() - t0 < 10, "the refusal took %.1f s", now_s() - t0);
    RANK_OK(gicl_comm_abort(comm));
    return 0;
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(mism[r].code, 0) << "rank " << r;
}

TEST(Comm, InitSplitTeamsDestroyAcrossProcesses) {
  const int n = 6;
  gicl_unique_id_t id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(n, [&](int r) {
    gicl_comm_t comm;
    RANK_OK(gicl_comm_init_rank(&comm, n, id, r));
    int rank = -1, size = -1;
    RANK_OK(gicl_comm_rank(comm, &rank));
    RANK_OK(gicl_comm_size(comm, &size));
    RANK_CHECK(rank == r && size == n, "rank %d size %d", rank, size);
    // Split by parity, key reverses the order: new rank = (members - 1 - index).
    gicl_comm_t half;
    RANK_OK(gicl_comm_split(comm, r % 2, -r, &half));
    int hr = -1, hs = -1;
    RANK_OK(gicl_comm_rank(half, &hr));
    RANK_OK(gicl_comm_size(half, &hs));
    RANK_CHECK(hs == 3, "half size %d", hs);
    RANK_CHECK(hr == 2 - r / 2, "half rank %d for world rank %d", hr, r);
    // A rank that opts out gets NULL; the rest form a communicator.
    gicl_comm_t some;
    RANK_OK(gicl_comm_split(comm, r == 0 ? GICL_SPLIT_NOCOLOR : 7, r, &some));
    RANK_CHECK((some == nullptr) == (r == 0), "NOCOLOR handling");
    // Teams: world, a strided team, translation both ways.
    gicl_team_t world, odd = nullptr;
    RANK_OK(gicl_comm_get_team(comm, GICL_TEAM_WORLD, &world));
    RANK_OK(gicl_team_split_strided(world, 1, 2, 3, &odd));
    RANK_CHECK((odd != nullptr) == (r % 2 == 1), "membership of the odd team");
    if (odd) {
      int tr = -1, ts = -1, back = -1;
      RANK_OK(gicl_team_rank(odd, &tr));
      RANK_OK(gicl_team_size(odd, &ts));
      RANK_CHECK(tr == r / 2 && ts == 3, "odd team rank %d size %d", tr, ts);
      RANK_OK(gicl_team_translate_rank(odd, 2, world, &back));
      RANK_CHECK(back == 5, "odd team rank 2 is world rank %d", back);
      RANK_OK(gicl_team_translate_rank(world, 4, odd, &back));
      RANK_CHECK(back == GICL_RANK_INVALID, "world rank 4 is not odd");
      RANK_OK(gicl_team_destroy(odd));
    }
    gicl_team_t node;
    int ns = 0;
    RANK_OK(gicl_comm_get_team(comm, GICL_TEAM_NODE, &node));
    RANK_OK(gicl_team_size(node, &ns));
    int dev = 0;
    RANK_OK(gicl_comm_device(comm, &dev));
    // Without GPUs nothing is load/store reachable: the node team is this rank alone.
    if (dev < 0) RANK_CHECK(ns == 1, "node team size %d without a GPU", ns);
    if (some) RANK_OK(gicl_comm_destroy(some));
    RANK_OK(gicl_comm_destroy(half));
    RANK_OK(gicl_comm_destroy(comm));
    return 0;
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

TEST(Comm, AbortFromAnotherThreadReturnsWithinOneSecond) {
  gicl_unique_id_t id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(2, [&](int r) {
    setenv("GICL_BOOTSTRAP_TIMEOUT", "60000", 1);
    gicl_comm_t comm;
    RANK_OK(gicl_comm_init_rank(&comm, 2, id, r));
    if (r == 1) {
      sleep(4);  // never joins the split rank 0 starts
      RANK_OK(gicl_comm_abort(comm));
      return 0;
    }
    std::atomic<int> split_result{-1};
    std::thread blocked([&] {
      gicl_comm_t nc;
      split_result = gicl_comm_split(comm, 0, 0, &nc);
    });
    usleep(300000);
    const auto t0 = std::chrono::steady_clock::now();
    RANK_OK(gicl_comm_abort(comm));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    blocked.join();
    RANK_CHECK(s < 1.0, "abort took %.3f s", s);
    RANK_CHECK(split_result == GICL_ABORTED, "blocked split returned %d", split_result.load());
    return 0;
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

// In a child process: with a GPU, CUDA gets initialised, and a parent that did so cannot fork
// the ranks of later tests. Two ranks as two threads; on a GPU machine each cycle also creates
// and releases the symmetric heap (VMM range, handle sockets).
TEST(Comm, ThousandInitAbortCyclesLeaveNothingBehind) {
  auto results = fork_ranks(
      1,
      [](int) {
        setenv("GICL_SHARED_GPU_THREADS", "1", 1);  // on a GPU machine both threads use GPU 0
        auto once = []() -> int {
          gicl_unique_id_t id;
          RANK_OK(gicl_get_unique_id(&id));
          gicl_comm_t c[2] = {nullptr, nullptr};
          int rc1 = 0;
          std::thread t([&] { rc1 = gicl_comm_init_rank(&c[1], 2, id, 1); });
          RANK_OK(gicl_comm_init_rank(&c[0], 2, id, 0));
          t.join();
          RANK_CHECK(rc1 == 0, "rank 1 init: %d", rc1);
          RANK_OK(gicl_comm_abort(c[0]));
          RANK_OK(gicl_comm_abort(c[1]));
          return 0;
        };
        for (int i = 0; i < 5; ++i)  // warm-up: one-time allocations (logging, CUDA probe)
          if (once()) return 1;
        bootstrap::reap_roots(true);
        const int fds0 = count_entries("/proc/self/fd");
        const int threads0 = settled_thread_count(1, 200);
        const long rss0 = resident_kib();
        const long long gpu0 = gpu_used_bytes();
        for (int i = 0; i < 1000; ++i)
          if (once()) return 1;
        bootstrap::reap_roots(true);
        const int fds1 = count_entries("/proc/self/fd");
        const int threads1 = settled_thread_count(threads0, 2000);
        RANK_CHECK(fds1 == fds0, "open fds went from %d to %d", fds0, fds1);
        RANK_CHECK(threads1 == threads0, "threads went from %d to %d", threads0, threads1);
        RANK_CHECK(bootstrap::live_roots() == 0, "bootstrap roots still alive");
        const long rss1 = resident_kib();
#ifdef __SANITIZE_THREAD__
        constexpr long kSlackKib = 65536;  // TSan's runtime keeps state for every thread that ran
#else
        constexpr long kSlackKib = 8192;
#endif
        RANK_CHECK(rss1 - rss0 < kSlackKib, "resident memory grew by %ld KiB over 1000 cycles",
                   rss1 - rss0);
        const long long gpu1 = gpu_used_bytes();
        RANK_CHECK(gpu1 - gpu0 < (16ll << 20), "GPU memory in use grew by %lld MiB",
                   (gpu1 - gpu0) >> 20);
        return 0;
      },
      600000);
  EXPECT_EQ(results[0].code, 0);
}

TEST(Comm, DestroyWithAMissingPeerTimesOut) {
  gicl_unique_id_t id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(2, [&](int r) {
    setenv("GICL_BOOTSTRAP_TIMEOUT", "1000", 1);
    gicl_comm_t comm;
    RANK_OK(gicl_comm_init_rank(&comm, 2, id, r));
    if (r == 1) {
      sleep(3);
      RANK_OK(gicl_comm_abort(comm));
      return 0;
    }
    gicl_result_t s = gicl_comm_destroy(comm);  // rank 1 never arrives at the barrier
    RANK_CHECK(s == GICL_TIMEOUT, "destroy returned %d", s);
    RANK_CHECK(std::string(gicl_get_last_error()).find("rank 1") != std::string::npos, "%s",
               gicl_get_last_error());
    return 0;
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

}  // namespace
}  // namespace gicl
