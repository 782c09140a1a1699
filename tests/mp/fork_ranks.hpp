// SPDX-License-Identifier: Apache-2.0
// Runs a function as N real processes (fork), each its own rank, and collects their exit codes.
// A rank reports failure by returning non-zero (after printing why); the parent kills every rank
// still running when the timeout expires, so a hang fails the test instead of stalling ctest.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

#include "common/status.hpp"

namespace gicl::test {

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
