// SPDX-License-Identifier: Apache-2.0
// gicl_group_start / gicl_group_end: calls between them are queued per thread and issued at the
// end, point-to-point operations of one communicator fused into one kernel so that a rank's
// sends and receives progress together (no send waits for a receive queued behind it).
#pragma once

#include <functional>

#include <cuda_runtime_api.h>

#include "collectives/pipe/p2p.cuh"
#include "common/status.hpp"

struct gicl_comm;

namespace gicl::coll {

Status group_start();
Status group_end();

/// Whether this thread has a group open.
bool in_group();
/// Runs `fn` now, or at group end when a group is open. `fn` runs the whole call (it locks).
Status run_or_queue(gicl_comm* comm, cudaStream_t stream, std::function<Status()> fn);
/// A checked send or receive: launched alone now, or fused with the group's others at its end.
Status p2p(gicl_comm* comm, const P2pOp& op, cudaStream_t stream);

}  // namespace gicl::coll
