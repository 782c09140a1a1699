// SPDX-License-Identifier: Apache-2.0
// How a direct-kernel collective runs (collectives/direct/direct.cu): which buffers the peers
// read or write in place, whether this rank stages, pushes (first) or swaps, and the pieces the
// call is cut into. plan_direct is a pure function of what the call and the communicator look
// like (DirectCall), unit-tested in tests/unit/coll_direct_plan_test.cc; run.cc gathers the
// facts and launches the plan's pieces.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/direct/direct.cuh"

namespace gicl::coll {

/// The facts the plan depends on. Windows are kNoWindow where the buffer is not one (neither in
/// the symmetric heap nor registered; for NVLS, not in the heap).
struct DirectCall {
  DirectKind kind;
  int nranks = 1, rank = 0, root = 0;
  size_t count = 0;                       // the call's count (per rank block where blocks split)
  size_t esize = 0;                       // bytes of one element
  bool send_is_recv = false;              // the same pointer (in place for all but the two below)
  bool send_null = false;                 // a broadcast non-root may pass NULL (NCCL's contract)
  bool own_block_in_place = false;        // allgather: send is this rank's block of recv
  uint64_t send_window = kNoWindow;       // send, over the call's send elements
  uint64_t recv_window = kNoWindow;       // recv, over the call's receive elements
  uint64_t recv_swap_window = kNoWindow;  // recv, registered allowed even for NVLS (alltoall)
  uint64_t recv_as_send_window = kNoWindow;  // recv over the send elements (broadcast non-root)
  bool push_first_range = false;             // the tuner's push-first range (Choice::push_first)
  bool time_sliced = false;                  // ranks take turns on a GPU: no chunk handshakes
  bool local_blocks_fit = false;             // the grid may grow by kLocalBlocks (residency)
  size_t stage_bytes = 0;                    // one staging buffer
};

/// Extra blocks that copy a rank's own block (allgather, alltoall out of place) from this block
/// size on, beside the blocks that push and pull.
inline constexpr int kLocalBlocks = 16;
inline constexpr size_t kLocalBlocksFrom = size_t{1} << 20;

struct DirectPlan {
  bool src_zero = false;    // the peers read this rank's send buffer in place
  bool dst_zero = false;    // the peers write (or this rank pushes into) its recv in place
  bool pushes = false;      // push mode: this rank writes its peers' blocks into their inboxes
  bool push_first = false;  // ... before the entry barrier (DirectArgs::push_first)
  bool stage_src = false;   // copy send into this rank's staging first
  bool unstage = false;     // the destination window is staging: copy out at the end
  bool swaps = false;       // in-place alltoall by trading blocks (every rank's buffer a window)
  size_t piece = 0;         // elements of `count` per launch; 0: the staging holds too little
  int local_blocks = 0;     // extra blocks for this rank's own block
};

DirectPlan plan_direct(const DirectCall& c);

/// The launch arguments of the piece starting at element `done` of the call.
DirectArgs piece_args(const DirectCall& c, const DirectPlan& p, const void* send, void* recv,
                      size_t done);

}  // namespace gicl::coll
