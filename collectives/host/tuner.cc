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

// Algorithms and protocols (docs/design/tuner.md has the measured crossovers): the LL one-shot
// (data with flags, no barrier) wins up to the LL rows' capacity; above it the barrier-delimited
// one-shot and two-shot are level on two ranks and two-shot moves half the bytes per rank as ranks
// grow, so it takes the rest. For the other collectives LL beats SIMPLE wherever its rows hold
// the rank block; where every GPU pair is on NVLink, LL128 takes the blocks above 128 KiB.

// Blocks of the direct kernels: one per 64 KiB, at least 4, at most 32 below 64 MiB and all 64
// (kMaxBlocks) from there: below, the extra blocks' entry and exit flags cost more than their
// bandwidth brings. Two ranks' collectives whose traffic runs both ways (not broadcast or reduce)
// take all 64 from 4 MiB, where the links are busy both ways. 48, 96 and 128 blocks measured
// slower on 2 x H200. Beyond two ranks: docs/design/tuner.md.
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

// LL128 wins from rank blocks above 128 KiB until each GPU sends or receives 2 MiB (allreduce),
// 4 MiB (reduce_scatter, broadcast, reduce) or 1 MiB (allgather, alltoall, whose SIMPLE kernels
// copy the own block on extra blocks beside the NVLink ones), as measured on 2 x H200 (NV18).
// The limit is the bytes crossing the busiest GPU's links, (n - 1) rank blocks. One rank moves
// nothing over links, and its LL128 call is the slower copy.
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

// Push first (direct.cu) for symmetric buffers, two-shot allreduce: below 16 MiB the pushes'
// fenced entry barrier costs more than the pulls' latency; from 16 MiB NVLink writes outrun
// reads, until the staging cuts the call into pieces that each pay the barriers (above 64 MiB).
// Reduce-scatter measured slower pushed first and is not. Ranks without a source window always
// push first (direct.cu), whatever this range.
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

// Across nodes every message step costs proxy round trips (tens of microseconds over
// tcp;ofi_rxm), so below kNetworkDoublingTo the fewest steps win: recursive doubling's log2(n)
// exchanges of the whole buffer beat the ring's 2(n - 1) steps for allreduce, measured up to
// 512 KiB on 2 ranks (8 B: 43 against 78 us) and on 2 nodes x 2 GPUs (8 B: 53 against 116 us;
// 512 KiB: 350 against 393); allgather likewise beyond 2 ranks (2 x 2 at 8 KiB: 52 against 77 us),
// where on 2 ranks both take one step. Above, and for the other collectives, the ring. The same
// choice serves more ranks than kMaxDirectRanks on NVLink: fewer steps for small calls.
constexpr size_t kNetworkDoublingTo = size_t{512} << 10;

/// Whether the load/store and copy-engine algorithms reach every rank (their kernels keep a
/// pointer per rank in shared memory).
bool direct_ok(const TunerInput& in) {
  return in.all_p2p && in.nranks <= kMaxDirectRanks;
}

Algorithm pipe_algorithm(const TunerInput& in) {
  if (in.bytes > kNetworkDoublingTo) return Algorithm::kRing;
  if (in.coll == Collective::kAllReduce) return Algorithm::kRecursiveDoubling;
  if (in.coll == Collective::kAllGather && in.nranks > 2) return Algorithm::kRecursiveDoubling;
  return Algorithm::kRing;
}

}  // namespace

Choice table_choice(const TunerInput& in) {
  Choice ch{Algorithm::kDirect, Proto::kSimple, 0, false};
  // Some rank only on the network path, or more ranks than the direct kernels take: the pipe
  // algorithms, whose FIFOs reach each neighbour over NVLink inside a node and through the proxy
  // between nodes.
  if (!direct_ok(in)) {
    ch.algo = pipe_algorithm(in);
    ch.blocks = blocks_for(ch.algo, in);
    return ch;
  }
  // One-shot allreduce while a flag protocol carries it; two-shot moves half the bytes per rank.
  if (in.coll == Collective::kAllReduce)
    ch.algo = table_proto(in, Algorithm::kOneShot) != Proto::kSimple ? Algorithm::kOneShot
                                                                     : Algorithm::kTwoShot;
  ch.blocks = blocks_for(ch.algo, in);
  ch.proto = table_proto(in, ch.algo);
  ch.push_first = push_first_wins(in, ch);
  return ch;
}

// Two ranks' broadcasts, allgathers and alltoalls whose send to the peer reaches the copy-engine
// proxy's size (GICL_P2P_COPY_ENGINE) run as send/recv: the copy engines then carry them faster
// than the SM kernels, out of place and in place, symmetric and cudaMalloc buffers alike; below
// that size the SM kernels win. An allgather's and an alltoall's size is the whole buffer: the
// block for the peer is half. Beyond two ranks a broadcast root would send the whole buffer to
// every peer.
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
  // Only the pipe algorithms reach a rank on the network path or more than kMaxDirectRanks ranks:
  // a forced load/store or copy-engine algorithm gives way to the table's there, as NCCL passes
  // over an algorithm a topology lacks.
  if (cfg.forced[ci] && (direct_ok(in) || is_pipe(cfg.algo[ci]))) {
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
