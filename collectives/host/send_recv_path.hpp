// SPDX-License-Identifier: Apache-2.0
// Broadcast and allgather as sends and receives (the send_recv algorithm): the direct kernels'
// data movement, each block one gicl_send/gicl_recv pair, so that the large ones go through the
// copy-engine proxy (GICL_P2P_COPY_ENGINE), which needs no window exchange on the host: the
// receiver offers its window at run time. The tuner picks it for two ranks' broadcasts from the
// proxy's size (tuner.hpp, send_recv_wins); GICL_ALGO=send_recv forces it for any rank count.
#pragma once

#include "collectives/host/coll_state.hpp"
#include "collectives/host/run.hpp"

namespace gicl::coll {

/// Enqueues a checked broadcast or allgather as one send/recv group of this rank's blocks
/// (a local copy for its own block when out of place). The caller holds the operation lock.
Status run_send_recv(gicl_comm* comm, CollState* st, const CollCall& k);

}  // namespace gicl::coll
