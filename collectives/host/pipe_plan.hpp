// SPDX-License-Identifier: Apache-2.0
// How a pipe collective (collectives/pipe/pipe.cu) is cut into launches and how deep a launch's
// chain is pipelined: pure functions of the call's shape, unit-tested in
// tests/unit/coll_pipe_plan_test.cc; run.cc launches the pieces.
#pragma once

#include <algorithm>
#include <cstddef>

#include "collectives/schedule/tables.hpp"

namespace gicl::coll {

/// Elements each launch takes of a call of `count` elements of `esize` bytes on `nranks` ranks.
/// Reduce-scatter, an in-place alltoall and a reduce's non-roots work in the local temp buffer
/// (`stage_bytes`): pieces of what it holds, alike on every rank (each launch's messages pair
/// up); every other collective is one launch.
inline size_t pipe_piece(Collective c, size_t count, size_t esize, int nranks, size_t stage_bytes) {
  if (c == Collective::kReduceScatter || c == Collective::kAllToAll)
    return std::max<size_t>(stage_bytes / esize / static_cast<size_t>(nranks), 1);
  if (c == Collective::kReduce) return std::max<size_t>(stage_bytes / esize, 1);
  return count;
}

/// Pipeline depth of a launch's chain (the ring broadcast and reduce) moving `len` elements of
/// `esize` bytes over `blocks` channels: a slot's worth per chunk, 1 to 64. From the launch's own
/// elements: a depth from the whole call would cut each of a reduce's pieces into messages
/// smaller than a slot, each a proxy write across the network.
inline int pipe_chunks(size_t len, size_t esize, int blocks, size_t slot_bytes) {
  const size_t per_block = len / static_cast<size_t>(std::max(blocks, 1)) * esize;
  return static_cast<int>(std::clamp<size_t>(per_block / slot_bytes, 1, 64));
}

}  // namespace gicl::coll
