// SPDX-License-Identifier: Apache-2.0
// The co-residency limit: a collective launch's blocks meet the peers' blocks of the same index
// (entry and exit flags, FIFO channels, LL rows), so where ranks share a GPU and run at once
// (MPS) a block can only finish once its partner on the same GPU has started. With more blocks
// than the GPU holds for all sharers together, resident blocks spin for partners that have no
// multiprocessor to start on. The limit keeps every sharer's grid resident together.
#pragma once

#include <vector>

#include "collectives/common/coll_args.h"
#include "common/status.hpp"
#include "topology/peer_info.hpp"

namespace gicl::coll {

/// Most blocks one launch may have so that the grids of all ranks sharing a GPU at once (under
/// MPS, or ranks of one process: run_at_once) are resident together: per GPU with k >= 2 such
/// ranks, its multiprocessors x `blocks_per_sm` / k, and within each of those ranks' own MPS
/// share (the multiprocessors it sees; the GPU's count is inferred from the shares and
/// percentages). 0: no GPU of the ranks is shared at once (no limit), else at least 1. Below
/// kPipeChannels (more than 8 ranks on one H200) collectives still run with fewer blocks, while
/// send/recv groups that need the FIFO channels are refused (fifo_channels_fit). Every rank
/// computes the same value from the same table.
int co_resident_cap(const std::vector<PeerInfo>& peers, int blocks_per_sm);

/// Whether a point-to-point launch whose operations include one above the LL size (all 16 FIFO
/// channel blocks of every rank meet their partners') fits `resident` (0: no limit).
inline bool fifo_channels_fit(int resident) {
  return resident == 0 || resident >= kPipeChannels;
}

/// GICL_RESIDENT_BLOCKS, or (-1) co_resident_cap with the fewest blocks per multiprocessor of
/// any collective kernel (occupancy queries, only where a GPU is shared at once).
Status resident_blocks(const std::vector<PeerInfo>& peers, int* out);

}  // namespace gicl::coll
