// SPDX-License-Identifier: Apache-2.0
// The 32-bit flag an LL entry carries beside 4 data bytes (LL collectives: the epoch; point-to-
// point LL: the operation's sequence number). Both counters are 64-bit; the flag folds them so
// that it is never 0, the value of rows never written (truncating to the low 32 bits made epoch
// 2^32 flag 0: a unit no earlier message reached read as arrived), and two numbers share a flag
// only when they are a multiple of 2^32 - 1 apart. A unit a row's calls leave unwritten keeps
// its old flag, so every row is rewritten whole once in a while (ll_refresh) and no unit grows
// that old.
#pragma once

#include <cstdint>

#include "collectives/schedule/step.hpp"

namespace gicl::coll {

GICL_HD uint32_t ll_flag(uint64_t q) {
  return static_cast<uint32_t>(q % 0xffffffffull) + 1;
}

/// Whether the call numbered `q` of a protocol whose rows rotate by q % `rows` (2 epoch
/// parities; kP2pLLSlots point-to-point slots) rewrites its whole row at every receiver: each row
/// once every 2^31 numbers, at q mod 2^31 in [2^30, 2^30 + rows) (not at a communicator's first
/// calls, which start near 0). A unit is then never older than 2^31 + rows numbers, far from the
/// rows x (2^32 - 1) at which a row's flag repeats. The senders write the units the call leaves
/// out with data 0 and the call's flag, which no later call of the row waits for.
GICL_HD bool ll_refresh(uint64_t q, unsigned rows) {
  return (q & 0x7fffffffull) - 0x40000000ull < rows;  // unsigned: below 2^30 wraps high
}

}  // namespace gicl::coll
