// SPDX-License-Identifier: Apache-2.0
// A communicator's collective resources: symmetric staging, flags and pipe FIFOs, the epoch.
// Created by the first collective call (collective: it allocates from the heap).
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>

#include "collectives/common/coll_args.h"
#include "collectives/host/tuner.hpp"
#include "common/status.hpp"
#include "proxy/copy_proxy.hpp"

struct gicl_comm;

namespace gicl::coll {

struct CollState {
  CollScratch scratch{};
  void* heap_block = nullptr;  // staging, flags and FIFOs: one heap allocation
  void* local = nullptr;       // finished counter, pipe sequence numbers, temp (cudaMalloc)
  TunerConfig cfg;             // read once, at the first collective
  bool all_nvlink = false;     // every GPU pair on NVLink; asked unless GICL_PROTO forces LL/SIMPLE
  int resident_blocks = 0;     // most blocks per launch (residency.hpp); 0: no limit
  bool time_sliced = false;    // ranks take turns on a GPU: no chunk-by-chunk handshakes
  char* mc_base = nullptr;     // NVLS: multicast address of heap offset 0 (GICL_NVLS_ENABLE=1)
  size_t mc_bytes = 0;         // heap bytes the multicast object covers
  std::vector<uint64_t> logged;  // what was already reported at GICL_DEBUG=INFO (keys)
  // Sends to the rank itself that went through the p2p kernel, less such receives: group.cc
  // pairs them into local copies only while it is 0.
  int64_t self_sends_unmatched = 0;
  // The copy-engine path (copy_engine.cc): side streams, the event that forks them from the
  // caller's stream and one per side stream that joins it back; made by its first call.
  std::vector<cudaStream_t> ce_streams;
  std::vector<cudaEvent_t> ce_join;
  cudaEvent_t ce_fork = nullptr;
  // The copy-engine proxy of large sends (cfg.p2p_ce_from), started by the first such send;
  // `p2p_proxy_failed` keeps a proxy that could not start from being asked again.
  int p2p_ce_share = 100;  // percent of such a send the copy engine copies (the SMs the rest)
  std::unique_ptr<CopyProxy> p2p_proxy;
  bool p2p_proxy_failed = false;
  // An in-place alltoall as send/recv (send_recv_path.cc): where its outgoing blocks are set
  // aside (cudaMalloc), the newest and largest last; older ones stay for graphs that read them.
  std::vector<void*> a2a_space;
  size_t a2a_space_bytes = 0;
  ~CollState();
  /// Whether a launch of `blocks` keeps within resident_blocks.
  bool fits(int blocks) const { return resident_blocks == 0 || blocks <= resident_blocks; }
  /// True the first time `key` is asked for (one GICL_DEBUG=INFO report per key).
  bool first_report(uint64_t key) {
    if (std::find(logged.begin(), logged.end(), key) != logged.end()) return false;
    logged.push_back(key);
    return true;
  }
};

/// What a communicator keeps for its collectives (gicl_comm::collectives points to it): the
/// GICL_CHECK_MODE switch and call count, from the first call, and the scratch state, from the
/// first call that runs a kernel.
struct CollExt {
  int check_mode = -1;  // GICL_CHECK_MODE, read at the first collective call
  uint64_t calls = 0;   // collective calls made (GICL_CHECK_MODE numbers them)
  std::shared_ptr<CollState> state;
};
/// The communicator's collectives extension, made on first use.
CollExt& coll_ext(gicl_comm* comm);
/// The state if the communicator has made it (nullptr otherwise): no collective allocation.
CollState* existing_coll_state(const gicl_comm* comm);

/// The scratch a kernel launch receives: the state's, with the registered-buffer table as it is
/// now (the registry is made by the first gicl_comm_register, possibly after the state).
CollScratch launch_scratch(const gicl_comm* comm, const CollState* st);

/// The communicator's state, created on first use (collective; outside any graph capture in
/// progress on the calling thread).
Status coll_state(gicl_comm* comm, CollState** out);

}  // namespace gicl::coll
