// SPDX-License-Identifier: Apache-2.0
// Pipe collectives: algorithms given as schedules (collectives/schedule) run over pairwise
// FIFOs of the communicator's scratch. Every message is a put into the receiver's inbox slot
// followed by a signal (head); the receiver copies or reduces the slot into its working buffer
// and returns the slot (tail). Only device-API operations cross ranks, so the same kernel runs
// over any transport the device API reaches. Point-to-point groups (p2p.cuh) use the same FIFOs.
#pragma once

#include <cuda_runtime_api.h>

#include "collectives/common/coll_args.h"
#include "collectives/schedule/step.hpp"
#include "common/kernel_launch.hpp"
#include "gicl/gicl.h"

namespace gicl::coll {

struct PipeArgs {
  Collective coll;
  Algorithm algo;
  int root;
  int chunks;      // pipeline depth of a ring broadcast
  bool canonical;  // reduce in rank order (GICL_DETERMINISTIC, avg): canonical reduce-scatter
                   // first, then the algorithm's allgather
  const void* send;
  void* recv;
  size_t count;    // allreduce, broadcast, reduce: elements; the others: per rank block
  size_t send_ld;  // reduce-scatter, alltoall: elements between rank blocks of send (and of
                   // alltoall's recv)
};

/// Lowers *out to the fewest blocks per multiprocessor of the pipe kernels.
cudaError_t pipe_blocks_per_sm(int* out);

cudaError_t launch_pipe(gicl_datatype_t dtype, gicl_redop_t op, const gicl_device_comm_t& c,
                        const CollScratch& s, const PipeArgs& a, int grid, const Launch& l);

}  // namespace gicl::coll
