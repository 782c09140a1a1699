// SPDX-License-Identifier: Apache-2.0
// Runs a function as N real processes (fork), each its own rank, and collects their exit codes.
// A rank reports failure by returning non-zero (after printing why); the parent kills every rank
// still running when the timeout expires, so a hang fails the test instead of stalling ctest.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "bootstrap/root.hpp"
#include "bootstrap/unique_id.hpp"
#include "common/status.hpp"

namespace gicl::test {

/// A positive count from the environment variable `name` (a test's size knob), else `fallback`.
inline int env_count(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::max(1, std::atoi(v)) : fallback;
}

inline int result_code(gicl_result_t r) {
  return static_cast<int>(r);
}
inline int result_code(const gicl::Status& s) {
  return static_cast<int>(s.code());
}

struct RankResult {
  int code = -1;       // exit code, or 128 + signal
  double seconds = 0;  // wall time until it exited
};

inline std::vector<RankResult> fork_ranks(int n, const std::function<int(int)>& body,
                                          int timeout_ms = 120000) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids(n, -1);
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      int code = 99;
      try {
        code = body(r);
      } catch (...) {
        std::fprintf(stderr, "rank %d: exception\n", r);
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    pids[r] = pid;
  }
  std::vector<RankResult> out(n);
  int live = n;
  bool killed = false;
  while (live > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < n; ++r) {
        if (pids[r] != pid) continue;
        out[r].code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        out[r].seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        pids[r] = -1;
        --live;
      }
      continue;
    }
    if (!killed &&
        std::chrono::steady_clock::now() - start > std::chrono::milliseconds(timeout_ms)) {
      killed = true;
      for (int r = 0; r < n; ++r)
        if (pids[r] > 0) {
          std::fprintf(stderr, "fork_ranks: rank %d still running at the timeout; killed\n", r);
          kill(pids[r], SIGKILL);
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return out;
}

/// A unique id that `make(Id*)` (true on success) makes in a child process forked now, so that
/// its bootstrap root runs there while this process has no thread: making it here would start the
/// root as a thread, and fork_ranks would then fork beside it. A rank may inherit a lock that
/// thread held (GCC's ASan allocator, the log's or OpenSSL's), and TSan does not survive it. The
/// child then calls `hold()`, which returns once its root is done, and ends; it ends too with this
/// process (a refusing root serves until its timeout, and ctest waits for every holder of the
/// output). A later waitpid(-1) in fork_ranks reaps it. False where the id could not be made.
template <typename Id, typename Make, typename Hold>
inline bool child_made_id(Id* id, Make make, Hold hold) {
  int p[2];
  if (pipe(p) != 0) return false;
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(p[0]);
    Id made;
    std::memset(static_cast<void*>(&made), 0, sizeof(Id));
    const char ok = make(&made) ? 1 : 0;
    const bool sent = write(p[1], &ok, 1) == 1 && write(p[1], &made, sizeof(Id)) == sizeof(Id);
    close(p[1]);
    if (ok && sent) hold();
    _exit(ok && sent ? 0 : 1);
  }
  close(p[1]);
  char ok = 0;
  Id got_id;
  const bool got = read(p[0], &ok, 1) == 1 && read(p[0], &got_id, sizeof(Id)) == sizeof(Id);
  close(p[0]);
  if (!got || !ok) return false;
  std::memcpy(static_cast<void*>(id), &got_id, sizeof(Id));
  return true;
}

/// A unique id (gicl_unique_id_t, ncclUniqueId or bootstrap::UniqueIdData) made by the bootstrap
/// in a child process (child_made_id).
template <typename Id>
inline bool child_root_id(Id* id) {
  static_assert(sizeof(Id) >= sizeof(bootstrap::UniqueIdData));
  return child_made_id(
      id,
      [](Id* out) {
        bootstrap::UniqueIdData d{};
        if (!bootstrap::make_unique_id(&d).ok()) return false;
        std::memcpy(static_cast<void*>(out), &d, sizeof(d));
        return true;
      },
      [] { bootstrap::reap_roots(true); });
}

/// In a rank: print and fail when cond is false.
#define RANK_CHECK(cond, ...)                                                       \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                            \
      std::fprintf(stderr, "\n");                                                   \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

/// In a rank: a gicl call that must succeed.
#define RANK_OK(expr)                                                                \
  do {                                                                               \
    auto rank_ok_s_ = (expr);                                                        \
    if (::gicl::test::result_code(rank_ok_s_) != 0) {                                \
      std::fprintf(stderr, "%s:%d: %s returned %d: %s\n", __FILE__, __LINE__, #expr, \
                   ::gicl::test::result_code(rank_ok_s_), gicl_get_last_error());    \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

}  // namespace gicl::test
