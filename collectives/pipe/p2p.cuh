// SPDX-License-Identifier: Apache-2.0
// Point-to-point groups (gicl_send / gicl_recv between gicl_group_start and gicl_group_end) as one
// or more launches of batches (collectives/schedule/p2p_plan.hpp): operations up to the LL size
// through LL rows, rendezvous-sized sends written straight
// into the receiver's offered window (or by the copy-engine proxy), the rest through the pipe
// FIFOs (fifo.cuh). collectives/schedule/p2p.hpp holds the arithmetic the host shares.
#pragma once

#include <cuda_runtime_api.h>

#include "collectives/common/coll_args.h"
#include "common/kernel_launch.hpp"
#include "gicl/device/detail/copy_queue.h"
#include "gicl/gicl.h"

namespace gicl::coll {

/// One point-to-point operation of a group.
struct P2pOp {
  void* buf;  // send: source; recv: destination
  size_t bytes;
  int peer;
  int is_send;
  uint64_t win;     // a rendezvous receive: the window of buf, or kNoWindow
  int copy_engine;  // a rendezvous send the copy-engine proxy copies when the receiver offers
                    // a window (GICL_P2P_COPY_ENGINE)
  int batch = 0;    // its batch's place in the launch (p2p_plan.hpp); operations sorted by it
  int net = 0;      // the peer is on the network path: FIFO messages only (no LL rows, no
                    // rendezvous window), each led by a header with the operation's size
};
struct P2pArgs {
  int nops;
  int fifo_blocks;  // blocks for the FIFO and rendezvous operations (set by launch_p2p); one
                    // block per LL operation follows them
  int fifo_split;   // each FIFO channel's sends and receives on blocks of their own (set by
                    // launch_p2p): channel b sends on block b, receives on kPipeChannels + b
  int self_blocks;  // blocks after the FIFO ones that copy the rendezvous sends to this rank
                    // itself, beside the other blocks' sends to peers (set by launch_p2p; 0:
                    // every block copies a share of every such send); the LL blocks follow
  int ll_budget;    // blocks the LL operations take together, at most (set by launch_p2p)
  int ll_limit;     // blocks ranks sharing the GPU leave them; 0: no limit (p2p_ll_looped)
  int ce_share;     // percent of a copy_engine send the copy engine copies (p2p_ce_bytes)
  CopyQueue ce;     // the copy-engine proxy's queue when an operation has copy_engine set
  P2pOp ops[kMaxP2pOps];
};

/// Lowers *out to the fewest blocks per multiprocessor of the point-to-point kernel.
cudaError_t p2p_blocks_per_sm(int* out);

/// `most_blocks`: the grid's limit where ranks share a GPU (0: none; never below kPipeChannels,
/// the FIFO channels every peer's launch meets).
cudaError_t launch_p2p(const gicl_device_comm_t& c, const CollScratch& s, const P2pArgs& a,
                       const Launch& l, int most_blocks);

}  // namespace gicl::coll
