// SPDX-License-Identifier: Apache-2.0
// A communicator's sends and receives, from a checked list to kernel launches: the pairs with
// the rank itself copied, the rest in batches agreed with every partner (p2p_plan.hpp), the
// large sends marked for the copy-engine proxy. Used by groups and lone gicl_send/gicl_recv
// (group.cc) and by the collectives that run as send/recv (send_recv_path.cc).
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "collectives/host/coll_state.hpp"
#include "collectives/pipe/p2p.cuh"
#include "common/status.hpp"

struct gicl_comm;

namespace gicl::coll {

/// Enqueues `ops` on `stream`. The caller holds the communicator's operation lock, has its
/// device current and has checked every operation.
Status issue_p2p(gicl_comm* comm, CollState* st, cudaStream_t stream,
                 const std::vector<P2pOp>& ops);

}  // namespace gicl::coll
