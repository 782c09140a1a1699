// The 32-bit flag an LL entry carries beside 4 data bytes (LL collectives: the epoch; point-to-
// point LL: the operation's sequence number). Both counters are 64-bit; the flag folds them so
// that it is never 0, the value of rows never written (truncating to the low 32 bits made epoch
// 2^32 flag 0: a unit no earlier message reached read as arrived), and two numbers share a flag
// only when they are a multiple of 2^32 - 1 apart.
#pragma once

#include <cstdint>

#include "collectives/schedule/step.hpp"

namespace ccl::coll {

CCL_HD uint32_t ll_flag(uint64_t q) {
  return static_cast<uint32_t>(q % 0xffffffffull) + 1;
}

}  // namespace ccl::coll
