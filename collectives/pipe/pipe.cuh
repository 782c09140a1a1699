// Pipe collectives: algorithms given as schedules (collectives/schedule) run over pairwise
// FIFOs of the communicator's scratch. Every message is a put into the receiver's inbox slot
// followed by a signal (head); the receiver copies or reduces the slot into its working buffer
// and returns the slot (tail). Only device-API operations cross ranks, so the same kernel runs
// over any transport the device API reaches. Point-to-point groups use the same FIFOs.
#pragma once

#include <cuda_runtime_api.h>

#include "ccl/ccl.h"
#include "collectives/common/coll_args.h"
#include "collectives/schedule/step.hpp"
#include "common/kernel_launch.hpp"
#include "proxy/copy_queue.h"

namespace ccl::coll {

struct PipeArgs {
  Collective coll;  // kAllReduce, kAllGather, kBroadcast or kReduceScatter
  Algorithm algo;
  int root;
  int chunks;      // pipeline depth of a ring broadcast
  bool canonical;  // reduce in rank order (CCL_DETERMINISTIC, avg): canonical reduce-scatter
                   // first, then the algorithm's allgather
  const void* send;
  void* recv;
  size_t count;    // allreduce, broadcast: elements; allgather, reduce-scatter: per rank
  size_t send_ld;  // reduce-scatter: elements between rank blocks of send
};

/// One point-to-point operation of a group.
struct P2pOp {
  void* buf;  // send: source; recv: destination
  size_t bytes;
  int peer;
  int is_send;
  uint64_t win;     // a rendezvous receive: the window of buf, or kNoWindow
  int copy_engine;  // a rendezvous send the copy-engine proxy copies when the receiver offers
                    // a window (CCL_P2P_COPY_ENGINE)
};
struct P2pArgs {
  int nops;
  int fifo_blocks;  // blocks for the FIFO and rendezvous operations (set by launch_p2p); one
                    // block per LL operation follows them
  int ll_budget;    // blocks the LL operations take together, at most (set by launch_p2p)
  int ce_share;     // percent of a copy_engine send the copy engine copies (p2p_ce_bytes)
  CopyQueue ce;     // the copy-engine proxy's queue when an operation has copy_engine set
  P2pOp ops[kMaxP2pOps];
};

/// Lowers *out to the fewest blocks per multiprocessor of the pipe and point-to-point kernels.
cudaError_t pipe_blocks_per_sm(int* out);

cudaError_t launch_pipe(ccl_datatype_t dtype, ccl_redop_t op, const ccl_device_comm_t& c,
                        const CollScratch& s, const PipeArgs& a, int grid, const Launch& l);
/// `most_blocks`: the grid's limit where ranks share a GPU (0: none; never below kPipeChannels,
/// the FIFO channels every peer's launch meets).
cudaError_t launch_p2p(const ccl_device_comm_t& c, const CollScratch& s, const P2pArgs& a,
                       const Launch& l, int most_blocks);

}  // namespace ccl::coll
