// SPDX-License-Identifier: Apache-2.0
// The tuner: which algorithm, protocol and block count a collective call runs with. A table of
// crossover points measured on the GPU machine (docs/design/tuner.md), overridden by GICL_ALGO,
// GICL_PROTO and GICL_NCHANNELS. Pure functions of its inputs: unit-tested.
#pragma once

#include <cstddef>
#include <string>

#include "collectives/schedule/step.hpp"
#include "common/status.hpp"
#include "gicl/types.h"

namespace gicl::coll {

/// Order as GICL_PROTO's names (settings.def): AUTO, LL, SIMPLE, LL128.
enum class Proto : uint8_t { kAuto, kLL, kSimple, kLL128 };

/// The settings a communicator reads once, at its first collective.
struct TunerConfig {
  bool forced[kNumCollectives] = {};
  Algorithm algo[kNumCollectives] = {};
  Proto proto = Proto::kAuto;
  int nchannels = 0;
  bool deterministic = false;
  bool nvls_real = false;     // GICL_NVLS_ENABLE=1 and no peer library forbids multicast
  bool nvls_emulate = false;  // GICL_NVLS_EMULATE=1
  size_t p2p_ce_from = 0;     // GICL_P2P_COPY_ENGINE: sends the copy-engine proxy takes; 0: none
};

/// Parses GICL_ALGO's text ("ring", "allreduce:two_shot,allgather:ring"): unknown names and
/// algorithms a collective lacks are GICL_INVALID_ARGUMENT naming them.
Status parse_algo_setting(const std::string& text, TunerConfig* cfg);
/// Reads GICL_ALGO, GICL_PROTO, GICL_NCHANNELS, GICL_DETERMINISTIC and the NVLS gates.
Status load_tuner_config(TunerConfig* cfg);

struct TunerInput {
  Collective coll;
  size_t bytes;  // the nccl-tests "size": allreduce/broadcast/reduce: count x type size;
                 // allgather/reduce-scatter/alltoall: the whole (n-block) buffer
  int nranks;
  bool all_p2p;      // every rank reachable by load/store
  bool nvlink;       // every pair of GPUs linked by NVLink (LL128's premise)
  int resident = 0;  // most blocks a launch may have (ranks sharing a GPU under MPS); 0: any
};

struct Choice {
  Algorithm algo;
  Proto proto;  // kLL, kLL128 or kSimple (one-shot and direct kernels)
  int blocks;   // grid of the kernel
  bool forced;  // from GICL_ALGO
  // Two-shot allreduce in its measured range: push the peers' blocks before the entry barrier
  // (collectives/direct/direct.cu; reduce-scatter measured slower pushed first, so never here).
  // Every rank decides alike from the same inputs.
  bool push_first = false;
};

/// The table (no overrides): what runs when nothing is forced.
Choice table_choice(const TunerInput& in);
/// The table, then the overrides of `cfg`; then, unforced, send_recv for the two-rank
/// broadcasts, allgathers and alltoalls the copy-engine proxy takes (send_recv_wins). Where some
/// rank is not load/store reachable only the pipe algorithms run (a forced other one is passed
/// over), the ring unless another is forced.
Choice choose(const TunerConfig& cfg, const TunerInput& in);
/// Whether a two-rank broadcast, or a two-rank allgather's or alltoall's block, moves at least
/// GICL_P2P_COPY_ENGINE, so that its send/recv form goes through the copy engines, ahead of the
/// SM kernel there. Every input is alike on every rank (the setting too, as GICL_ALGO must be),
/// so the ranks agree.
bool send_recv_wins(const TunerConfig& cfg, const TunerInput& in);
/// Whether the algorithm runs in a pipe kernel (its own block limit) or a direct kernel.
bool is_pipe(Algorithm a);

}  // namespace gicl::coll
