// SPDX-License-Identifier: Apache-2.0
// What the two-process network benchmarks share: the size ladder, the endpoint list, the
// loopback provider's defaults and the driver that forks rank 1 and runs rank 0 here.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/unique_id.hpp"
#include "common/status.hpp"
#include "gicl/gicl.h"

namespace gicl::perf_net {

/// min, min x factor, ... up to max (inclusive, up to rounding).
inline std::vector<size_t> size_ladder(size_t min, size_t max, double factor) {
  std::vector<size_t> sizes;
  for (double b = static_cast<double>(min); b <= static_cast<double>(max) * 1.0000001; b *= factor)
    sizes.push_back(static_cast<size_t>(b));
  return sizes;
}

/// "1,4" into endpoint counts; false (said on stderr, naming `prog`) for a count outside 1 to 16
/// or an empty list.
inline bool parse_endpoints(const char* prog, char* list, std::vector<int>* out) {
  out->clear();
  for (char* tok = std::strtok(list, ","); tok != nullptr; tok = std::strtok(nullptr, ",")) {
    char* end = nullptr;
    const long e = std::strtol(tok, &end, 10);
    if (*end != '\0' || e < 1 || e > 16) {
      std::fprintf(stderr, "%s: -E %s: endpoint counts are 1 to 16\n", prog, tok);
      return false;
    }
    out->push_back(static_cast<int>(e));
  }
  if (out->empty()) std::fprintf(stderr, "%s: -E: no endpoint count\n", prog);
  return !out->empty();
}

/// tcp;ofi_rxm on loopback unless the environment names another provider or interface.
inline void default_loopback_provider() {
  setenv("GICL_OFI_PROVIDER", "tcp;ofi_rxm", 0);
  setenv("FI_TCP_IFACE", "lo", 0);
}

/// Runs `rank(id, r)` as rank 1 in a forked child and as rank 0 here, with `endpoints` endpoints
/// per process (GICL_NET_ENDPOINTS); true when both returned success. Rank 0's results stay with
/// what `rank` captured; a failing rank's error is printed, naming `prog`.
template <typename Rank>
bool run_two_ranks(const char* prog, int endpoints, Rank rank) {
  setenv("GICL_NET_ENDPOINTS", std::to_string(endpoints).c_str(), 1);
  bootstrap::UniqueIdData id;
  if (!bootstrap::make_unique_id(&id).ok()) {
    std::fprintf(stderr, "%s: %s\n", prog, last_error());
    return false;
  }
  std::fflush(stdout);  // the child's exit must not print rank 0's buffered lines again
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "%s: fork: %s\n", prog, std::strerror(errno));
    return false;
  }
  if (child == 0) {
    const Status s = rank(id, 1);
    if (!s.ok()) std::fprintf(stderr, "%s rank 1: %s\n", prog, last_error());
    _exit(s.ok() ? 0 : 1);
  }
  const Status s = rank(id, 0);
  if (!s.ok()) std::fprintf(stderr, "%s rank 0: %s\n", prog, last_error());
  int status = 0;
  if (waitpid(child, &status, 0) != child) {
    std::fprintf(stderr, "%s: waitpid: %s\n", prog, std::strerror(errno));
    return false;
  }
  return s.ok() && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace gicl::perf_net
