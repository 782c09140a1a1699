// SPDX-License-Identifier: Apache-2.0
// The collectives' fixed sizes: blocks and channels of each kernel, FIFO slots, the LL and LL128
// rows' capacities, operations of a point-to-point launch. Pure constants and size functions, so
// that the schedules, the planner and the kernels read the same numbers.
#pragma once

#include <cstddef>

namespace gicl::coll {

/// Blocks of every direct (load/store) kernel: each block index keeps its own flags with each
/// peer, so every launch uses all of them (a block's slice may be empty).
inline constexpr int kMaxBlocks = 64;
/// Channels (blocks) of a pipe kernel, each with its own FIFO to every peer.
inline constexpr int kPipeChannels = 16;
/// Slots of each pipe FIFO.
inline constexpr int kPipeSlots = 4;
/// Largest rank block the LL protocol carries (data travels with its flags, 16 bytes of row per
/// 8 data bytes). The rows take 4 x nranks x capacity bytes of heap, so the capacity shrinks as
/// ranks grow: 512 KiB up to 8 ranks, never below 64 KiB.
inline constexpr size_t kLLMaxBytes = 512 << 10;
constexpr size_t ll_capacity(int nranks) {
  const size_t share =
      (size_t{4} << 20) / static_cast<size_t>(nranks < 1 ? 1 : nranks) / 4096 * 4096;
  return share > kLLMaxBytes ? kLLMaxBytes : share < (64 << 10) ? (64 << 10) : share;
}
/// Threads of an LL or LL128 block.
inline constexpr int kLLThreads = 512;
/// Grid of the LL kernel: a thread per 8-byte unit of the rank block (the tuner reports it).
constexpr int ll_blocks(size_t block_bytes) {
  const size_t units = (block_bytes + 7) / 8;
  const size_t b = (units + kLLThreads - 1) / kLLThreads;
  return b < 1 ? 1 : static_cast<int>(b);
}
/// Threads of the block when the LL grid is one block: a thread per unit, rounded to whole
/// warps, and at least one per rank (the epoch bookkeeping gives each rank a thread). A small
/// call then launches, and meets at each block barrier, only the warps it uses.
constexpr int ll_threads(size_t block_bytes, int nranks) {
  const size_t units = (block_bytes + 7) / 8;
  const size_t need = units > static_cast<size_t>(nranks) ? units : static_cast<size_t>(nranks);
  const size_t t = (need + 31) / 32 * 32;
  return t < 32 ? 32 : t > kLLThreads ? kLLThreads : static_cast<int>(t);
}
/// LL128 rows (collectives/schedule/ll128.hpp): one per (epoch parity, sender) at every rank,
/// 18 MiB in all split over the senders, between 256 KiB and 4.5 MiB each; a row of R bytes
/// carries a rank block of R / 128 x 120 bytes. 4.5 MiB holds a 4 MiB block (4.27 MiB of lines),
/// where two ranks' reduce_scatter and broadcast measured LL128 ahead of SIMPLE.
constexpr size_t ll128_row_bytes(int nranks) {
  constexpr size_t kMost = size_t{4608} << 10;
  const size_t share = 2 * kMost / static_cast<size_t>(nranks < 1 ? 1 : nranks) / 4096 * 4096;
  return share > kMost ? kMost : share < (256 << 10) ? (256 << 10) : share;
}
constexpr size_t ll128_capacity(int nranks) {
  return ll128_row_bytes(nranks) / 128 * 120;
}
/// Ranks a direct kernel reduces over (pointer tables live in shared memory).
inline constexpr int kMaxDirectRanks = 64;

/// Ranks of a pipe or point-to-point kernel: its FIFO counts (16 bytes a rank) and the canonical
/// reduce-scatter's input pointers (8 bytes a rank) live in shared memory, 24 KiB at this count.
inline constexpr int kMaxPipeRanks = 1024;

/// Operations of one point-to-point launch (a group runs as one or more: p2p_plan.hpp).
inline constexpr int kMaxP2pOps = 64;

}  // namespace gicl::coll
