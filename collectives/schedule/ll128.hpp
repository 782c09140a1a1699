// SPDX-License-Identifier: Apache-2.0
// Where the LL128 protocol puts each 8-byte unit of a rank block, shared by the kernel
// (collectives/direct/ll128.cu) and its unit test. A row is a sequence of 128-byte lines; a line
// carries 15 data units and, in its last 8 bytes, the flag (the epoch). A warp moves 4 lines per
// instruction, 8 lanes per line, each lane 16 bytes: lanes 0..6 two data units, lane 7 one data
// unit and the flag. The receiver trusts a whole line once its flag lane sees the epoch, which
// holds only where a warp's 128-byte store reaches the peer as one transaction and a warp's
// 128-byte load reads one: NVLink between GPUs (what NCCL's LL128 also relies on).
#pragma once

#include <cstddef>

#include "collectives/schedule/limits.hpp"
#include "collectives/schedule/step.hpp"

namespace gicl::coll {

inline constexpr size_t kLL128LineBytes = 128;
inline constexpr size_t kLL128LineUnits = 15;  // data units per line
inline constexpr int kLL128LinesPerWarp = 4;

/// What one lane of a warp carries for line group `group` (lines 4 x group .. 4 x group + 3).
struct LL128Slot {
  size_t line;     // line of the row
  size_t unit;     // first data unit (8-byte index into the rank block)
  int units;       // data units: 2, or 1 on the flag lane
  size_t row_off;  // byte offset of the lane's 16 bytes in the row
  bool flag_lane;  // the lane whose second word is the flag
};

GICL_HD LL128Slot ll128_slot(size_t group, int lane) {
  const int q = lane % 8;
  LL128Slot s;
  s.line = group * kLL128LinesPerWarp + static_cast<size_t>(lane / 8);
  s.unit = s.line * kLL128LineUnits + 2 * static_cast<size_t>(q);
  s.units = q < 7 ? 2 : 1;
  s.row_off = s.line * kLL128LineBytes + 16 * static_cast<size_t>(q);
  s.flag_lane = q == 7;
  return s;
}

/// Lines of a rank block of `bytes`.
GICL_HD size_t ll128_lines(size_t bytes) {
  return ((bytes + 7) / 8 + kLL128LineUnits - 1) / kLL128LineUnits;
}

/// Line groups (warp iterations) of a rank block of `bytes`.
GICL_HD size_t ll128_groups(size_t bytes) {
  return (ll128_lines(bytes) + kLL128LinesPerWarp - 1) / kLL128LinesPerWarp;
}

/// Grid of the LL128 kernel: a warp per line group, at most 96 blocks (warps then loop). A rank
/// block's time grows with the line groups each warp carries one after another, not with the
/// bytes on the link, so more warps help up to 96 blocks on 2 x H200 (one block of 512 threads
/// fits an SM, 132 SMs); 128 measured no better.
inline constexpr int kMaxLL128Blocks = 96;
GICL_HD int ll128_blocks(size_t bytes) {
  const size_t per_block = kLLThreads / 32;
  const size_t b = (ll128_groups(bytes) + per_block - 1) / per_block;
  return b < 1 ? 1 : b > kMaxLL128Blocks ? kMaxLL128Blocks : static_cast<int>(b);
}

}  // namespace gicl::coll
