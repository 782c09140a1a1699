// SPDX-License-Identifier: Apache-2.0
// The bootstrap root: a thread in the process that created the unique id (or in rank 0 of a
// launcher-started job). It collects every rank's listening address, then sends the table to
// all, or, when ranks are missing at the timeout, an abort text naming them.
#pragma once

#include <cstdint>

#include "bootstrap/wire.hpp"

namespace gicl::bootstrap {

/// Starts a root listening on `bind_addr` (port 0: ephemeral) for job `job`, whose ranks prove
/// `secret`; `bound` receives its address. With `listen_fd` >= 0 the root serves that listening
/// socket (taking it over) instead of binding.
Status start_root(const SockAddr& bind_addr, const uint8_t* secret, const uint8_t* job,
                  int64_t timeout_ms, SockAddr* bound, int listen_fd = -1);
/// Joins the root threads that have finished. `wait_all` waits for every root of this process.
void reap_roots(bool wait_all);
/// Number of root threads alive in this process.
int live_roots();

}  // namespace gicl::bootstrap
