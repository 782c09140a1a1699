// SPDX-License-Identifier: Apache-2.0
// The copy-engine path of the collectives that only move bytes (allgather, broadcast, alltoall;
// GICL_ALGO=copy_engine): every block a rank sends is one cudaMemcpyAsync into the receiver's
// window, on side streams so that the copies to different peers and of the own block run on
// several copy engines at once, between two barriers of the communicator (no SMs move data).
// The host needs the receivers' windows when it enqueues, and ranks may pass buffers at
// different offsets, so the ranks first exchange them: one host allgather per call (in a graph,
// once, at capture), through the shared-memory board where all ranks are on this host.
#pragma once

#include "collectives/host/coll_state.hpp"
#include "collectives/host/run.hpp"

namespace gicl::coll {

/// Runs the call through the copy engines when every rank can (each receiver's buffer is a
/// window, symmetric or registered, and an alltoall is out of place) and sets `*ran`; else
/// enqueues nothing and leaves `*ran` false. Ranks whose calls differ (collective, block size,
/// root) all fail with GICL_INVALID_USAGE naming them, before anything is enqueued.
Status run_copy_engine(gicl_comm* comm, CollState* st, const CollCall& k, bool* ran);

}  // namespace gicl::coll
