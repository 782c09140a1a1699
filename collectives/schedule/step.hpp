// SPDX-License-Identifier: Apache-2.0
// The data movement of every collective algorithm as pure functions of (rank, nranks, count,
// root, step): which element range goes to which peer, which comes from which peer, and whether
// it is copied or reduced. The kernels (collectives issue) and the CPU simulator
// (collectives/sim) both use these functions, so the simulator checks the very index
// arithmetic the GPU runs. Header-only, __host__ __device__, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/schedule/tables.hpp"

namespace gicl::coll {

/// What arriving data does to the destination range.
enum class Action : uint8_t { kNone, kCopy, kReduce };

/// One element range of the full buffer moving between two ranks.
struct Transfer {
  int peer = -1;  // -1: nothing
  size_t offset = 0;
  size_t count = 0;
};

/// One step of one rank: at most one send and one receive (the simulator checks that every send
/// meets the matching receive). Sends read the buffer as it was before the step's receives.
struct Step {
  Transfer send;
  Transfer recv;
  Action action = Action::kNone;
};

/// Balanced partition of `count` elements into `parts` ranges: the first count % parts ranges get
/// one more element. Ranges are empty when count < parts.
GICL_HD void partition(size_t count, int parts, int i, size_t* offset, size_t* n) {
  const size_t base = count / static_cast<size_t>(parts),
               extra = count % static_cast<size_t>(parts);
  const size_t ui = static_cast<size_t>(i);
  *offset = ui * base + (ui < extra ? ui : extra);
  *n = base + (ui < extra ? 1 : 0);
}

/// partition() in whole units of `unit` elements: every part starts on a unit boundary, the
/// last non-empty one takes the ragged end. Kernels whose blocks copy 16-byte packs slice with it.
GICL_HD void partition_units(size_t count, int parts, int i, size_t unit, size_t* offset,
                             size_t* n) {
  size_t ulo, un;
  partition((count + unit - 1) / unit, parts, i, &ulo, &un);
  const size_t lo = ulo * unit, hi = (ulo + un) * unit;
  *offset = lo < count ? lo : count;
  *n = (hi < count ? hi : count) - *offset;
}

/// partition_units() in whole 16-byte packs of `esize`-byte elements: how the direct kernels'
/// blocks, the pipe kernels' channels and the two-shot / NVLS rank blocks split a range (a part
/// starting mid-pack would put every copy of it on the byte path). A rank block so cut is never
/// larger than the inbox slot of ceil(count / parts) elements: ceil(ceil(count E / 16) / parts)
/// packs.
GICL_HD void partition_packs(size_t count, int parts, int i, size_t esize, size_t* offset,
                             size_t* n) {
  partition_units(count, parts, i, esize < 16 ? 16 / esize : 1, offset, n);
}

GICL_HD int mod(int a, int n) {
  return ((a % n) + n) % n;
}

GICL_HD Transfer block(int peer, size_t count, int parts, int i) {
  Transfer t;
  t.peer = peer;
  partition(count, parts, i, &t.offset, &t.count);
  return t;
}

GICL_HD Transfer whole(int peer, size_t count) {
  Transfer t;
  t.peer = peer;
  t.count = count;
  return t;
}

}  // namespace gicl::coll
