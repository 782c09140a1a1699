// SPDX-License-Identifier: Apache-2.0
// CPU simulator of the collective schedules: n ranks with integer data exchange messages step by
// step exactly as collectives/schedule says, every send must meet its receive, and the final
// buffers must equal the collective's definition. Exact (integers), so any wrong index shows.
#pragma once

#include <cstdint>
#include <string>

#include "collectives/schedule/schedule.hpp"
#include "collectives/schedule/tables.hpp"

namespace gicl::coll {

struct SimResult {
  bool ok = true;
  std::string error;  // the first mismatch: step, rank, element
  int steps = 0;
  uint64_t elements_moved = 0;  // per rank at most (a load measure for the tests)
};

/// Runs the schedule of `shape` on random inputs from `seed` and checks the result.
SimResult simulate(const Shape& shape, uint64_t seed);

}  // namespace gicl::coll
