// SPDX-License-Identifier: Apache-2.0
#include "collectives/host/tuner.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "collectives/common/coll_args.h"
#include "collectives/schedule/ll128.hpp"
#include "collectives/schedule/p2p.hpp"
#include "collectives/schedule/schedule.hpp"
#include "collectives/schedule/tables.hpp"
#include "common/settings.hpp"

namespace gicl::coll {
namespace {

bool algo_from_name(const std::string& s, Algorithm* out) {
  for (int i = 0; i < kNumAlgorithms; ++i)
    if (s == algorithm_name(static_cast<Algorithm>(i))) {
      *out = static_cast<Algorithm>(i);
      return true;
    }
  return false;
}

bool coll_from_name(const std::string& s, Collective* out) {
  for (int i = 0; i < kNumCollectives; ++i)
    if (s == collective_name(static_cast<Collective>(i))) {
      *out = static_cast<Collective>(i);
      return true;
    }
  return false;
}

/// "a, b, c": every algorithm's name, or every collective's, for the error messages.
std::string algorithm_names() {
  std::string out;
  for (int i = 0; i < kNumAlgorithms; ++i)
    out += (i ? ", " : "") + std::string(algorithm_name(static_cast<Algorithm>(i)));
  return out;
}
std::string collective_names() {
  std::string out;
  for (int i = 0; i < kNumCollectives; ++i)
    out += (i ? ", " : "") + std::string(collective_name(static_cast<Collective>(i)));
  return out;
}

// Crossover points, measured on 2 x H200 NV18 (perf/results/2026-11-23_h200x2_collectives.md,
// each algorithm forced over one sweep, symmetric buffers, median of 20 calls):
//   bytes      one_shot LL   one_shot SIMPLE   two_shot   ring
//   16 KiB       6.98 us        -               13.41 us   16.78 us
//   64 KiB       6.84         13.65             13.17      20.43
//   256 KiB      8.08         15.22             14.72      34.24
//   512 KiB     10.26         15.63             15.19        -
//   1 MiB         -           16.24             16.26      34.31
//   16 MiB        -           64.17             64.22     117.34
// The LL one-shot (data with flags, no barrier) wins up to the LL rows' capacity (512 KiB on up
// to 8 ranks); above it the barrier-delimited one-shot and two-shot are within 3% of each other
// on two ranks and two-shot moves half the bytes per rank as ranks grow, so it takes the rest.
// The other collectives, LL against SIMPLE per rank block (us, 2 ranks):
//   block      reduce_scatter   allgather     broadcast     reduce        alltoall
//   64 KiB      7.75 / 13.48    7.13 / 12.79   5.85 / 13.02  6.16 / 13.51  7.06 / 12.56
//   512 KiB    10.66 / 14.67   10.21 / 14.33   8.45 / 14.18  8.50 / 15.53 10.59 / 13.77
// LL beats SIMPLE everywhere it fits (ll_capacity(nranks)); where every GPU pair is on NVLink,
// LL128 takes the blocks above 128 KiB (table further down).

// Blocks of the direct kernels: one per 64 KiB, at least 4, at most 32 below 64 MiB and all 64
// (kMaxBlocks) from there. Measured at 1 GiB (2 x H200, 2026-11-23 second sweep): 64 blocks
// against 32 lift allreduce 325 -> 338 GB/s, allgather 353 -> 360, alltoall 340 -> 361; below
// 64 MiB the extra entry/exit flags cost more than the bandwidth brings. Two ranks' collectives
// whose traffic runs both ways take all 64 from 4 MiB since the entry flags need no fence
// (2026-11-27, the table against 64 forced and then 64 against 32 forced, us): allreduce 4 MiB
// 20.9-21.1 -> 20.5-20.8, 8 MiB 33.7-34.0 -> 32.9-33.5, 32 MiB 110.0-110.7 -> 108.3-108.6;
// allgather and alltoall 8-32 MiB 0.3-1.8 us less; reduce_scatter 8 and 32 MiB 0.3-0.8 less, 4
// and 16 MiB 0.1-0.5 more. Broadcast (one way) was level to 0.4 us slower and keeps 32, as does
// reduce (one way, not measured); 48 blocks lost everywhere, and so did 96 and 128 (a kMaxBlocks
// raised in experiment libraries, 2026-11-27: allreduce 4 MiB 20.9 -> 22.5 / 21.1 us, allgather
// 8 MiB 19.6 -> 20.7 / 26.3; only allreduce 8 MiB gained 0.5 at 128). More ranks: not measured.
constexpr size_t kManyBlocksFrom = size_t{64} << 20;
constexpr size_t kManyBlocksFromTwoWays = size_t{4} << 20;

int direct_blocks(const TunerInput& in) {
  const bool two_ways = in.coll != Collective::kBroadcast && in.coll != Collective::kReduce;
  const size_t from = in.nranks == 2 && two_ways ? kManyBlocksFromTwoWays : kManyBlocksFrom;
  if (in.bytes >= from) return kMaxBlocks;
  return static_cast<int>(std::clamp<size_t>(in.bytes >> 16, 4, 32));
}

int pipe_blocks(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>(bytes >> 18, 1, kPipeChannels));
}

}  // namespace

bool is_pipe(Algorithm a) {
  return family(a) == Family::kPipe;
}

namespace {
int blocks_for(Algorithm a, const TunerInput& in) {
  return is_pipe(a) ? pipe_blocks(in.bytes) : direct_blocks(in);
}
}  // namespace

Status parse_algo_setting(const std::string& text, TunerConfig* cfg) {
  if (text.empty()) return GICL_SUCCESS;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    Algorithm a;
    const std::string an = colon == std::string::npos ? item : item.substr(colon + 1);
    if (!algo_from_name(an, &a))
      return GICL_FAIL(GICL_INVALID_ARGUMENT, "GICL_ALGO=%s: unknown algorithm '%s' (%s)",
                       text.c_str(), an.c_str(), algorithm_names().c_str());
    if (colon == std::string::npos) {
      bool any = false;
      for (int i = 0; i < kNumCollectives; ++i)
        if (const auto c = static_cast<Collective>(i); supported(c, a)) {
          cfg->forced[static_cast<int>(c)] = true;
          cfg->algo[static_cast<int>(c)] = a;
          any = true;
        }
      if (!any)
        return GICL_FAIL(GICL_INVALID_ARGUMENT, "GICL_ALGO=%s: no collective has it", text.c_str());
      continue;
    }
    Collective c;
    const std::string cn = item.substr(0, colon);
    if (!coll_from_name(cn, &c))
      return GICL_FAIL(GICL_INVALID_ARGUMENT, "GICL_ALGO=%s: unknown collective '%s' (%s)",
                       text.c_str(), cn.c_str(), collective_names().c_str());
    if (!supported(c, a))
      return GICL_FAIL(GICL_INVALID_ARGUMENT, "GICL_ALGO=%s: %s has no algorithm %s", text.c_str(),
                       cn.c_str(), an.c_str());
    cfg->forced[static_cast<int>(c)] = true;
    cfg->algo[static_cast<int>(c)] = a;
  }
  return GICL_SUCCESS;
}

Status load_tuner_config(TunerConfig* cfg) {
  *cfg = TunerConfig{};
  std::string algo;
  GICL_CHECK(setting_string(Setting::kAlgo, &algo));
  GICL_CHECK(parse_algo_setting(algo, cfg));
  int64_t v = 0;
  GICL_CHECK(setting_int(Setting::kProto, &v));
  cfg->proto = static_cast<Proto>(v);
  GICL_CHECK(setting_int(Setting::kNChannels, &v));
  cfg->nchannels = static_cast<int>(v);
  GICL_CHECK(setting_int(Setting::kDeterministic, &v));
  cfg->deterministic = v != 0;
  GICL_CHECK(setting_int(Setting::kP2pCopyEngine, &v));
  cfg->p2p_ce_from = static_cast<size_t>(v);
  GICL_CHECK(setting_int(Setting::kNvlsEmulate, &v));
  cfg->nvls_emulate = v != 0;
  GICL_CHECK(setting_int(Setting::kNvlsEnable, &v));
  if (v != 0) {
    // Peer libraries' switches win: a job that turned multicast off for NCCL or NVSHMEM has a
    // reason (a shared machine whose fabric manager must not be disturbed).
    const char* nccl = std::getenv("NCCL_NVLS_ENABLE");
    const char* nvshmem = std::getenv("NVSHMEM_DISABLE_NVLS");
    if (nccl != nullptr && std::strcmp(nccl, "0") == 0)
      return GICL_FAIL(GICL_INVALID_USAGE,
                       "GICL_NVLS_ENABLE=1 is refused because NCCL_NVLS_ENABLE=0 is set");
    if (nvshmem != nullptr && std::strcmp(nvshmem, "1") == 0)
      return GICL_FAIL(GICL_INVALID_USAGE,
                       "GICL_NVLS_ENABLE=1 is refused because NVSHMEM_DISABLE_NVLS=1 is set");
    cfg->nvls_real = true;
  }
  return GICL_SUCCESS;
}

namespace {

/// Bytes of one rank block: what the LL protocols carry per peer.
size_t block_bytes(const TunerInput& in) {
  const bool blocked = send_splits(in.coll) || recv_splits(in.coll);
  return blocked ? in.bytes / std::max(in.nranks, 1) : in.bytes;
}

// LL128 against LL and SIMPLE, per rank block (us, 2 x H200 NV18, 2026-11-24, each protocol
// forced over one sweep, perf/results/2026-11-24_h200x2_collectives.md; allreduce one-shot,
// two-shot in brackets):
//   block   allreduce            allgather           reduce_scatter     broadcast
//           LL / LL128 / SIMPLE  LL / LL128 / SIMPLE LL / LL128 / SIMPLE LL / LL128 / SIMPLE
//   128 K   4.98/ 4.97/10.66     4.77/ 5.11/10.44    5.11/ 5.18/11.21   5.22/ 4.72/12.45
//   256 K   5.80/ 5.51/12.29     6.20/ 5.63/11.21    5.99/ 5.81/12.06   5.05/ 4.86/10.90
//   512 K   7.68/ 7.00/13.26     7.63/ 7.12/11.80    8.34/ 7.10/12.38   5.54/ 5.18/11.96
//   1 M       - / 9.38/13.80(14.40) - /10.26/14.38     - / 9.46/13.83   13.43/ 7.03/13.15
//   2 M       - /14.89/16.78(17.29) - /17.45/16.01     - /15.17/17.42     - /11.57/16.02
//   4 M       - /23.42/23.26(23.33)                                        - /21.78/21.74
// (reduce and alltoall follow broadcast and allgather.) LL128 wins from 256 KiB blocks (128 KiB
// is a tie) until each GPU receives or sends 2 MiB; allgather and alltoall only to 1 MiB, as
// their SIMPLE kernels copy the own block on blocks of its own beside the NVLink ones. At 4 MiB
// all are within noise of each other. Beyond two ranks the limit is the bytes crossing the
// busiest GPU's links, (n - 1) blocks: not measured there. One rank moves nothing over links,
// and its LL128 call is the slower copy (one H200, 256 KiB in a graph: LL 2.10 us, LL128 2.78).
//
// With 96-block grids and 4.5 MiB rows (2026-11-27,
// perf/results/2026-11-27_h200x2_ll128_refresh.md, LL128 forced against the table's SIMPLE in the
// same call, us): reduce_scatter 8 MiB (4 MiB blocks) 19.9-20.0 against 21.0-21.5 and broadcast 4
// MiB 17.9-18.4 against 19.9-20.0 moved to LL128; allreduce 4 MiB (one-shot LL128 20.7-20.8,
// two-shot 20.5-20.9) stays two-shot; allgather and alltoall 4 MiB (14.6-15.3 against 13.8-14.1)
// stay SIMPLE. Reduce 4 MiB, either root: 15.7-16.1 against 20.7-20.8, LL128 too.
constexpr size_t kLL128From = size_t{128} << 10;  // blocks above it
size_t ll128_traffic_limit(Collective c) {
  switch (c) {
    case Collective::kReduceScatter:
    case Collective::kBroadcast:
    case Collective::kReduce:
      return size_t{4} << 20;
    case Collective::kAllGather:
    case Collective::kAllToAll:
      return size_t{1} << 20;
    default:  // allreduce
      return size_t{2} << 20;
  }
}

bool ll128_wins(const TunerInput& in) {
  if (in.nranks < 2 || !in.nvlink) return false;
  const size_t block = block_bytes(in);
  const size_t traffic = block * static_cast<size_t>(in.nranks - 1);
  return block > kLL128From && block <= ll128_capacity(in.nranks) &&
         traffic <= ll128_traffic_limit(in.coll);
}

// Push first (direct.cu) against the pull for symmetric buffers, two-shot allreduce (2 x H200
// NV18, 2026-11-27, us, three alternations each; perf/results/2026-11-27_h200x2_push_first.md):
//   size     1 M    2 M    4 M    8 M    16 M   32 M    64 M    128 M
//   pull     12.2   15.1   20.6   33.2   57.8   108.4   206.7   403.1
//   push     14.3   17.2   22.7   34.2   57.1   102.1   204.8   409.1
// The pushes' fenced barrier costs more than the pulls' latency up to 8 MiB; from 16 MiB NVLink
// writes outrun reads, until the staging cuts the call into pieces (32 MiB of staging: 128 MiB
// runs in four, each paying the barriers). Reduce-scatter lost from 16 MiB (35.4 against 34.3
// at 16 MiB, 65.6 against 60.3 at 32) and takes LL128 below: not pushed first. Ranks without a
// source window always push first (direct.cu), whatever this range. More ranks: not measured.
constexpr size_t kPushFirstFrom = size_t{16} << 20;
constexpr size_t kPushFirstTo = size_t{64} << 20;

bool push_first_wins(const TunerInput& in, const Choice& ch) {
  if (in.nranks < 2 || ch.proto != Proto::kSimple) return false;
  return in.coll == Collective::kAllReduce && ch.algo == Algorithm::kTwoShot &&
         in.bytes >= kPushFirstFrom && in.bytes <= kPushFirstTo;
}

/// The protocol of the one-shot and direct kernels: LL128 in its measured range, else LL where
/// its rows hold the block (measured faster than the barrier-delimited kernels wherever they
/// do), else SIMPLE.
Proto table_proto(const TunerInput& in, Algorithm a) {
  if (a != Algorithm::kOneShot && a != Algorithm::kDirect) return Proto::kSimple;
  if (ll128_wins(in)) return Proto::kLL128;
  return block_bytes(in) <= ll_capacity(in.nranks) ? Proto::kLL : Proto::kSimple;
}

}  // namespace

Choice table_choice(const TunerInput& in) {
  Choice ch{Algorithm::kDirect, Proto::kSimple, 0, false};
  const bool direct_ok = in.all_p2p && in.nranks <= kMaxDirectRanks;
  switch (in.coll) {
    case Collective::kAllReduce:
      // One-shot while a flag protocol carries it; two-shot moves half the bytes per rank.
      if (!direct_ok) {
        ch.algo = Algorithm::kRing;
      } else if (table_proto(in, Algorithm::kOneShot) != Proto::kSimple) {
        ch.algo = Algorithm::kOneShot;
      } else {
        ch.algo = Algorithm::kTwoShot;
      }
      break;
    case Collective::kReduceScatter:
    case Collective::kAllGather:
    case Collective::kBroadcast:
      if (!direct_ok) ch.algo = Algorithm::kRing;
      break;
    default:
      break;
  }
  ch.blocks = blocks_for(ch.algo, in);
  ch.proto = table_proto(in, ch.algo);
  ch.push_first = push_first_wins(in, ch);
  return ch;
}

// Two ranks' broadcasts, allgathers and alltoalls whose sends the copy-engine proxy takes (2 x
// H200 NV18, 2026-11-27; perf/results/2026-11-27_h200x2_send_recv_path.md and
// 2026-11-27_h200x2_alltoall_send_recv.md), against the SM kernels, out of place / in place:
// broadcast 512 MiB 387.4 / 388.5 GB/s against 364.8 / 367.7, 128 MiB 369.0 / 363.5 us against
// 401.3 / 372.6, cudaMalloc buffers 284.5 / 307.7 GB/s against 283.9 / 284.5; allgather 512 MiB
// 372.4 / 378.6 against 360.1, 256 MiB 376.4 / 369.2 us against 379.1 / 382.8, cudaMalloc 512
// MiB 274.7 / 307.3 GB/s against 247.3 / 254.9 (once the FIFO channels sent and received on
// blocks of their own: 200.7 before); alltoall 512 MiB 372.0 / 320.5 against 360.3 / 264.4,
// 256 MiB 375.8 / 431.0 us against 378.9 / 519.1, cudaMalloc 512 MiB 271.0 / 274.5 GB/s against
// 259.7 / 263.2. Below the proxy's size the SM kernels win (allgather and alltoall 64-128 MiB:
// 2-13 %). An allgather's and an alltoall's size is the whole buffer: the block for the peer is
// half. Beyond two ranks a broadcast root would send the whole buffer to every peer (not measured).
bool send_recv_wins(const TunerConfig& cfg, const TunerInput& in) {
  if (in.nranks != 2 || !in.all_p2p || in.resident != 0) return false;
  switch (in.coll) {
    case Collective::kBroadcast:
      return p2p_copy_engine(in.bytes, cfg.p2p_ce_from);
    case Collective::kAllGather:
    case Collective::kAllToAll:
      return p2p_copy_engine(in.bytes / 2, cfg.p2p_ce_from);
    default:
      return false;
  }
}

Choice choose(const TunerConfig& cfg, const TunerInput& in) {
  Choice ch = table_choice(in);
  const int ci = static_cast<int>(in.coll);
  if (!cfg.forced[ci] && send_recv_wins(cfg, in))
    return {Algorithm::kSendRecv, Proto::kSimple, 0, false};
  if (cfg.forced[ci]) {
    ch.algo = cfg.algo[ci];
    ch.forced = true;
    ch.blocks = blocks_for(ch.algo, in);
    ch.proto = table_proto(in, ch.algo);
  }
  if (cfg.proto != Proto::kAuto &&
      (ch.algo == Algorithm::kOneShot || ch.algo == Algorithm::kDirect))
    ch.proto = cfg.proto;
  // A forced LL or LL128 still needs the rank block to fit its rows; the kernels trust this.
  if (ch.proto == Proto::kLL && block_bytes(in) > ll_capacity(in.nranks)) ch.proto = Proto::kSimple;
  // LL128 trusts a whole 128-byte line on one flag: only where NVLink delivers lines whole.
  if (ch.proto == Proto::kLL128 && (!in.nvlink || block_bytes(in) > ll128_capacity(in.nranks)))
    ch.proto = Proto::kSimple;
  if (cfg.nchannels > 0)
    ch.blocks = std::min(cfg.nchannels, is_pipe(ch.algo) ? kPipeChannels : kMaxBlocks);
  // Where ranks share a GPU every sharer's grid must be resident at once: the LL kernels' grids
  // follow the rank block, so a block too large for the limit goes to SIMPLE, whose kernels
  // take any block count.
  if (in.resident > 0) {
    if (ch.proto == Proto::kLL && ll_blocks(block_bytes(in)) > in.resident)
      ch.proto = Proto::kSimple;
    if (ch.proto == Proto::kLL128 && ll128_blocks(block_bytes(in)) > in.resident)
      ch.proto = Proto::kSimple;
    ch.blocks = std::min(ch.blocks, in.resident);
  }
  // The LL kernels size their grid by the rank block (one thread per unit, one warp per line
  // group) whatever GICL_NCHANNELS says: report the grid that runs.
  if (ch.proto == Proto::kLL) ch.blocks = ll_blocks(block_bytes(in));
  if (ch.proto == Proto::kLL128) ch.blocks = ll128_blocks(block_bytes(in));
  ch.push_first = push_first_wins(in, ch);
  return ch;
}

}  // namespace gicl::coll
