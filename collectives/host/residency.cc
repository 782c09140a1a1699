// SPDX-License-Identifier: Apache-2.0
#include "collectives/host/residency.hpp"

#include <algorithm>
#include <climits>

#include "collectives/common/coll_args.h"
#include "collectives/direct/direct.cuh"
#include "collectives/pipe/p2p.cuh"
#include "collectives/pipe/pipe.cuh"
#include "common/cuda.hpp"
#include "common/log.hpp"
#include "common/settings.hpp"

namespace gicl::coll {
namespace {
// Shares up to this many multiprocessors may be MPS's floor rather than the percentage (8 on an
// H200, measured; twice that for other parts).
constexpr long kMpsFloorSms = 16;
}  // namespace

int co_resident_cap(const std::vector<PeerInfo>& peers, int blocks_per_sm) {
  long cap = LONG_MAX;
  for (const PeerInfo& p : peers) {
    if (p.device < 0) continue;
    // A client sees only its MPS share of the multiprocessors: the GPU x its percentage rounded
    // down to whole TPCs, but never below a floor (an H200 client at 1-7 % sees 8 of 132). So
    // the GPU has at least share x 100 / percent, rounded up, for a share above the floor;
    // a share at it tells only itself. A daemon-wide percentage, which no client sees, makes
    // this an underestimate too: fewer blocks, never a stall. Ranks of one process without MPS
    // see the whole GPU (percent 100). Sharers time-sliced with p (other processes, no MPS)
    // have the GPU in turns and do not count.
    long sharers = 0, gpu = 1;
    for (const PeerInfo& q : peers)
      if (run_at_once(p, q)) {
        ++sharers;
        const long share = std::max(q.sm_count, 1), percent = std::max<long>(q.mps_percent, 1);
        gpu = std::max(gpu, share > kMpsFloorSms ? (share * 100 + percent - 1) / percent : share);
      }
    if (sharers < 2) continue;
    const long own = std::max(p.sm_count, 1);
    cap = std::min({cap, gpu * blocks_per_sm / sharers, own * blocks_per_sm});
  }
  if (cap == LONG_MAX) return 0;
  return static_cast<int>(std::max<long>(cap, 1));
}

Status resident_blocks(const std::vector<PeerInfo>& peers, int* out) {
  int64_t setting = -1;
  GICL_CHECK(setting_int(Setting::kResidentBlocks, &setting));
  if (setting > 0 && setting < kPipeChannels)
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "GICL_RESIDENT_BLOCKS=%lld: at least %d (the FIFO channels of a "
                     "point-to-point launch), 0 for no limit or -1 for the automatic one",
                     static_cast<long long>(setting), kPipeChannels);
  if (setting >= 0) {
    *out = static_cast<int>(setting);
    return GICL_SUCCESS;
  }
  *out = 0;
  // Only where ranks share a GPU at once: the occupancy queries of every instantiation.
  if (!ranks_share_a_gpu_at_once(peers)) return GICL_SUCCESS;
  int per_sm = INT_MAX;
  GICL_CUDA_CHECK(direct_blocks_per_sm(&per_sm));
  GICL_CUDA_CHECK(ll_blocks_per_sm(&per_sm));
  GICL_CUDA_CHECK(ll128_blocks_per_sm(&per_sm));
  GICL_CUDA_CHECK(pipe_blocks_per_sm(&per_sm));
  GICL_CUDA_CHECK(p2p_blocks_per_sm(&per_sm));
  *out = co_resident_cap(peers, std::max(per_sm, 1));
  GICL_INFO(kSubsysColl,
            "ranks share a GPU at once (MPS, or one process): every collective launch keeps to %d "
            "blocks (%d per "
            "multiprocessor) so that all sharers' grids are resident together%s",
            *out, per_sm,
            *out < kPipeChannels ? "; send/recv above the LL size (16 FIFO channels) refused" : "");
  return GICL_SUCCESS;
}

}  // namespace gicl::coll
