// SPDX-License-Identifier: Apache-2.0
#include "collectives/host/run.hpp"

#include <algorithm>
#include <cstdint>

#include "collectives/common/dtypes.cuh"
#include "collectives/direct/direct.cuh"
#include "collectives/host/check_mode.hpp"
#include "collectives/host/coll_state.hpp"
#include "collectives/host/copy_engine.hpp"
#include "collectives/host/direct_plan.hpp"
#include "collectives/host/local_copy.hpp"
#include "collectives/host/pipe_plan.hpp"
#include "collectives/host/send_recv_path.hpp"
#include "collectives/host/tuner.hpp"
#include "collectives/pipe/pipe.cuh"
#include "collectives/schedule/direct.hpp"
#include "collectives/schedule/tables.hpp"
#include "common/cuda.hpp"
#include "common/log.hpp"
#include "core/api_guard.hpp"
#include "core/comm.hpp"
#include "core/net_path.hpp"

namespace gicl::coll {
namespace {

/// Elements of send and recv for a call of `count` on n ranks.
void buffer_elems(const CollCall& k, int n, size_t* send, size_t* recv) {
  *send = send_elems(k.coll, k.count, n);
  *recv = recv_elems(k.coll, k.count, n);
}

/// Heap offset of [p, p + bytes) when all of it is in the mapped symmetric heap.
bool symmetric(gicl_comm* comm, const void* p, size_t bytes, uint64_t* off) {
  return comm->heap && comm->heap->offset_of(p, off) && comm->heap->mapped_bytes() - *off >= bytes;
}

}  // namespace

bool window_of(gicl_comm* comm, const void* p, size_t bytes, bool registered, uint64_t* w) {
  if (symmetric(comm, p, bytes, w)) return true;
  int slot = 0;
  uint64_t off = 0;
  if (!registered || !comm->registry || !comm->registry->find(p, bytes, &slot, &off)) return false;
  *w = registered_window(slot, off);
  return true;
}

/// A buffer must be device memory of this process holding `bytes` from `p`.
Status check_buffer(gicl_comm* comm, const void* p, size_t bytes, const char* fn,
                    const char* name) {
  uint64_t off;
  if (symmetric(comm, p, bytes, &off)) return GICL_SUCCESS;
  // The driver finds a cudaMalloc range only from its own device's context, and one thread may
  // queue calls of communicators on other GPUs (a group driving several).
  DeviceScope device(comm->device);
  const DriverApi* cu = nullptr;
  GICL_CHECK(driver_api(&cu));
  CUdeviceptr base = 0;
  size_t size = 0;
  if (cu->cuMemGetAddressRange(&base, &size, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS)
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "%s: %s=%p is not device memory (cudaMalloc, gicl_mem_alloc or VMM)", fn, name,
                     p);
  const size_t left = static_cast<size_t>(base + size - reinterpret_cast<CUdeviceptr>(p));
  if (left < bytes)
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "%s: %s=%p needs %zu bytes but its allocation ends %zu bytes after it", fn,
                     name, p, bytes, left);
  return GICL_SUCCESS;
}

namespace {

void log_choice(CollState* st, const CollCall& k, size_t bytes, const Choice& ch) {
  if (!log_enabled(LogLevel::kInfo, kSubsysColl)) return;
  // Once per (collective, algorithm, protocol, blocks, power-of-two size class).
  int lg = 0;
  while ((size_t{1} << lg) < bytes && lg < 63) ++lg;
  const uint64_t key =
      (static_cast<uint64_t>(ch.push_first) << 48) | (static_cast<uint64_t>(k.coll) << 40) |
      (static_cast<uint64_t>(ch.algo) << 32) | (static_cast<uint64_t>(ch.proto) << 24) |
      (static_cast<uint64_t>(ch.blocks) << 8) | static_cast<uint64_t>(lg);
  if (!st->first_report(key)) return;
  if (ch.algo == Algorithm::kSendRecv) {  // the send/recv kernel sizes its own grid
    GICL_INFO(kSubsysColl, "%s of %zu bytes (size class 2^%d): send_recv%s",
              collective_name(k.coll), bytes, lg, ch.forced ? " (GICL_ALGO)" : "");
    return;
  }
  GICL_INFO(kSubsysColl, "%s of %zu bytes (size class 2^%d): %s%s, %d blocks%s%s",
            collective_name(k.coll), bytes, lg, algorithm_name(ch.algo),
            ch.proto == Proto::kLL      ? "/LL"
            : ch.proto == Proto::kLL128 ? "/LL128"
                                        : "/SIMPLE",
            ch.blocks, ch.forced ? " (GICL_ALGO)" : "", ch.push_first ? ", pushed first" : "");
}

DirectKind direct_kind(Collective c, Algorithm a) {
  if (a == Algorithm::kNvls)
    return c == Collective::kAllReduce ? DirectKind::kNvlsAllReduce : DirectKind::kNvlsAllGather;
  switch (c) {
    case Collective::kAllReduce:
      return a == Algorithm::kOneShot ? DirectKind::kOneShot : DirectKind::kTwoShot;
    case Collective::kReduceScatter:
      return DirectKind::kReduceScatter;
    case Collective::kAllGather:
      return DirectKind::kAllGather;
    case Collective::kBroadcast:
      return DirectKind::kBroadcast;
    case Collective::kReduce:
      return DirectKind::kReduce;
    case Collective::kAllToAll:
      return DirectKind::kAllToAll;
  }
  return DirectKind::kOneShot;
}

/// Blocks of the real NVLS kernels (the host checks 16-byte packs per block slice against it).
constexpr int kNvlsBlocks = 32;

/// The facts plan_direct reads: the call's shape and where its buffers are windows.
DirectCall describe_direct(gicl_comm* comm, const CollState* st, const CollCall& k,
                           const Choice& ch, DirectKind kind, int grid) {
  DirectCall c;
  c.kind = kind;
  c.nranks = comm->nranks;
  c.rank = comm->rank;
  c.root = k.root;
  c.count = k.count;
  c.esize = dtype_size(k.dtype);
  c.send_is_recv = k.send == k.recv;
  c.send_null = k.send == nullptr;
  c.own_block_in_place =
      kind == DirectKind::kAllGather && k.recv != nullptr &&
      static_cast<const char*>(k.recv) + static_cast<size_t>(c.rank) * k.count * c.esize == k.send;
  size_t send_n, recv_n;
  buffer_elems(k, c.nranks, &send_n, &recv_n);
  // NVLS windows are multicast addresses: heap offsets only (registered buffers are staged).
  const bool nvls = kind == DirectKind::kNvlsAllReduce || kind == DirectKind::kNvlsAllGather;
  uint64_t w = 0;
  if (window_of(comm, k.send, send_n * c.esize, !nvls, &w)) c.send_window = w;
  if (window_of(comm, k.recv, recv_n * c.esize, !nvls, &w)) c.recv_window = w;
  if (kind == DirectKind::kAllToAll && c.send_is_recv &&
      window_of(comm, k.recv, recv_n * c.esize, true, &w))
    c.recv_swap_window = w;
  if (kind == DirectKind::kBroadcast && c.rank != k.root && c.send_null &&
      window_of(comm, k.recv, send_n * c.esize, !nvls, &w))
    c.recv_as_send_window = w;
  c.push_first_range = ch.push_first;
  c.time_sliced = st->time_sliced;
  c.local_blocks_fit = st->fits(grid + kLocalBlocks);
  c.stage_bytes = st->scratch.stage_bytes;
  return c;
}

/// Direct kernels, in the pieces plan_direct cuts (what the staging holds, where a rank stages or
/// pushes). LL and LL128 store straight into the peers' rows: no windows, no staging; the tuner
/// picks them only where the rank block fits their rows.
Status run_direct(gicl_comm* comm, CollState* st, const CollCall& k, const Choice& ch) {
  const CollScratch s = launch_scratch(comm, st);
  const gicl_device_comm_t& dc = comm->dev->handle;
  const Launch l{k.stream, comm->pdl};
  if (ch.proto == Proto::kLL || ch.proto == Proto::kLL128) {
    const LLArgs ll{k.send, k.recv, k.count * dtype_size(k.dtype), k.root, k.coll};
    GICL_CUDA_CHECK(ch.proto == Proto::kLL ? launch_ll(k.dtype, k.op, dc, s, ll, l)
                                           : launch_ll128(k.dtype, k.op, dc, s, ll, l));
    return GICL_SUCCESS;
  }
  const DirectKind kind = direct_kind(k.coll, ch.algo);
  const DirectCall c = describe_direct(comm, st, k, ch, kind, ch.blocks);
  const DirectPlan plan = plan_direct(c);
  if (plan.piece == 0)
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "GICL_COLL_SCRATCH_SIZE is too small to stage one element per rank");
  const bool nvls = kind == DirectKind::kNvlsAllReduce || kind == DirectKind::kNvlsAllGather;
  for (size_t done = 0; done < k.count; done += plan.piece) {
    DirectArgs a = piece_args(c, plan, k.send, k.recv, done);
    a.mc = nvls ? st->mc_base : nullptr;
    GICL_CUDA_CHECK(launch_direct(k.dtype, k.op, dc, s, a, ch.blocks + plan.local_blocks, l));
  }
  return GICL_SUCCESS;
}

Status run_pipe(gicl_comm* comm, CollState* st, const CollCall& k, const Choice& ch) {
  const int n = comm->nranks;
  const size_t E = dtype_size(k.dtype);
  const CollScratch& s = st->scratch;
  if (n > kMaxPipeRanks)
    return GICL_FAIL(GICL_UNSUPPORTED,
                     "the pipe algorithms take at most %d ranks; this communicator has %d",
                     kMaxPipeRanks, n);
  PipeArgs a{};
  a.coll = k.coll;
  a.algo = ch.algo;
  a.root = k.root;
  a.canonical = st->cfg.deterministic || k.op == gicl_avg;
  const size_t piece = pipe_piece(k.coll, k.count, E, n, s.stage_bytes);
  auto at = [&](auto* p, size_t elems) { return p == nullptr ? p : p + elems * E; };
  net_path_kick(comm);  // network peers' messages go through the proxy
  for (size_t done = 0; done < k.count; done += piece) {
    const size_t len = std::min(piece, k.count - done);
    a.count = len;
    a.chunks = pipe_chunks(len, E, ch.blocks, s.slot_bytes);
    a.send_ld = k.count;
    a.send = at(static_cast<const char*>(k.send), done);
    a.recv = at(static_cast<char*>(k.recv), done);
    GICL_CUDA_CHECK(
        launch_pipe(k.dtype, k.op, comm->dev->handle, s, a, ch.blocks, {k.stream, comm->pdl}));
  }
  return GICL_SUCCESS;
}

/// One rank: every collective's result is its input (the sum, product, minimum, maximum and
/// average of one value are the value), so the call is a copy, or nothing in place, as in NCCL.
Status run_alone(gicl_comm* comm, CollState* st, const CollCall& k, size_t bytes) {
  // Keys of log_choice never set bit 62.
  if (log_enabled(LogLevel::kInfo, kSubsysColl) && st->first_report(uint64_t{1} << 62))
    GICL_INFO(kSubsysColl,
              "one rank: collectives are copies (nothing in place) unless GICL_ALGO "
              "forces an algorithm");
  return local_copy(comm, k.recv, k.send, bytes, k.stream);
}

/// NVLS: the emulated mode needs nothing; the real one maps the heap's multicast object on first
/// use and runs only where multimem has the type and operation and every slice is 16-byte
/// aligned, else the same data movement over unicast (two-shot, direct) with a log line.
Status prepare_nvls(gicl_comm* comm, CollState* st, const CollCall& k, Choice* ch) {
  if (st->cfg.nvls_emulate) return GICL_SUCCESS;
  if (!st->cfg.nvls_real)
    return GICL_FAIL(GICL_INVALID_USAGE,
                     "%s: the nvls algorithm needs GICL_NVLS_ENABLE=1 (NVLink multicast) or "
                     "GICL_NVLS_EMULATE=1",
                     collective_name(k.coll));
  if (st->mc_base == nullptr) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    GICL_CUDA_CHECK(cudaStreamIsCapturing(k.stream, &capture));
    if (capture != cudaStreamCaptureStatusNone)
      return GICL_FAIL(GICL_INVALID_USAGE,
                       "the first nvls collective maps the multicast object: not under capture");
    CUdeviceptr va = 0;
    GICL_CHECK(comm->heap->map_multicast(&va, &st->mc_bytes));
    st->mc_base = reinterpret_cast<char*>(va);
  }
  const size_t E = dtype_size(k.dtype);
  const bool types = k.coll == Collective::kAllGather ||
                     (k.dtype == gicl_float32 && k.op == gicl_sum) ||
                     ((k.dtype == gicl_float16 || k.dtype == gicl_bfloat16) &&
                      (k.op == gicl_sum || k.op == gicl_min || k.op == gicl_max));
  const size_t unit = 16 / E * static_cast<size_t>(comm->nranks) * kNvlsBlocks;
  uint64_t off = 0;
  const bool inside =
      symmetric(comm, k.recv, k.count * E, &off) && off + k.count * E <= st->mc_bytes;
  if (!types || k.count % unit != 0 || !inside || st->cfg.deterministic || !st->fits(kNvlsBlocks)) {
    GICL_INFO(kSubsysColl,
              "%s: multimem cannot run this call (type/op, alignment, buffer outside "
              "the multicast range, GICL_DETERMINISTIC, or GICL_RESIDENT_BLOCKS); unicast instead",
              collective_name(k.coll));
    ch->algo = k.coll == Collective::kAllReduce ? Algorithm::kTwoShot : Algorithm::kDirect;
  } else {
    ch->blocks = kNvlsBlocks;
  }
  return GICL_SUCCESS;
}

}  // namespace

Status check_collective(gicl_comm* comm, const CollCall& k, const char* fn) {
  GICL_ARG_CHECK(comm != nullptr, "%s: comm must not be NULL", fn);
  GICL_ARG_CHECK(k.dtype >= 0 && k.dtype < gicl_num_datatypes,
                 "%s: datatype=%d is not a gicl_datatype_t", fn, static_cast<int>(k.dtype));
  if (is_reduction(k.coll))
    GICL_ARG_CHECK(k.op >= 0 && k.op < gicl_num_redops, "%s: op=%d is not a gicl_redop_t", fn,
                   static_cast<int>(k.op));
  const int n = comm->nranks;
  if (has_root(k.coll))
    GICL_ARG_CHECK(k.root >= 0 && k.root < n, "%s: root=%d is out of range [0, %d)", fn, k.root, n);
  const size_t E = dtype_size(k.dtype);
  const bool blocked = send_splits(k.coll) || recv_splits(k.coll);
  GICL_ARG_CHECK(k.count <= SIZE_MAX / E / (blocked ? n : 1),
                 "%s: count=%zu overflows the byte size of the %s buffers", fn, k.count,
                 dtype_name(k.dtype));
  if (k.count == 0) return GICL_SUCCESS;
  const bool root_only_recv = k.coll == Collective::kReduce && comm->rank != k.root;
  GICL_ARG_CHECK(k.send != nullptr || (k.coll == Collective::kBroadcast && comm->rank != k.root),
                 "%s: sendbuff must not be NULL", fn);
  GICL_ARG_CHECK(k.recv != nullptr || root_only_recv, "%s: recvbuff must not be NULL", fn);
  return GICL_SUCCESS;
}

Status check_buffers(gicl_comm* comm, const CollCall& k, const char* fn) {
  if (k.count == 0) return GICL_SUCCESS;
  if (!comm->heap) return GICL_FAIL(GICL_UNSUPPORTED, "%s: the communicator has no GPU", fn);
  const size_t E = dtype_size(k.dtype);
  size_t send_elems, recv_elems;
  buffer_elems(k, comm->nranks, &send_elems, &recv_elems);
  const bool root_only_recv = k.coll == Collective::kReduce && comm->rank != k.root;
  if (k.send != nullptr && !(k.coll == Collective::kBroadcast && comm->rank != k.root))
    GICL_CHECK(check_buffer(comm, k.send, send_elems * E, fn, "sendbuff"));
  if (k.recv != nullptr && !root_only_recv)
    GICL_CHECK(check_buffer(comm, k.recv, recv_elems * E, fn, "recvbuff"));
  return GICL_SUCCESS;
}

Status meets_on_host(gicl_comm* comm, bool* meets) {
  std::lock_guard<std::mutex> lock(comm->op_mutex);
  GICL_CHECK(check_mode_on(comm, meets));
  // The tuner never picks the copy engines by itself: only GICL_ALGO does.
  if (const CollState* st = existing_coll_state(comm); st != nullptr)
    for (int c = 0; c < kNumCollectives; ++c)
      *meets |= st->cfg.forced[c] && st->cfg.algo[c] == Algorithm::kCopyEngine;
  return GICL_SUCCESS;
}

Status run_collective(gicl_comm* comm, const CollCall& k) {
  std::lock_guard<std::mutex> lock(comm->op_mutex);
  DeviceScope device(comm->device);
  CommOp guard(comm);
  GICL_CHECK(guard.check());
  GICL_CHECK(check_call(comm, {0, k.count, static_cast<int32_t>(k.coll), k.dtype,
                               is_reduction(k.coll) ? k.op : -1, has_root(k.coll) ? k.root : -1}));
  if (k.count == 0) return GICL_SUCCESS;
  GICL_CHECK(check_buffers(comm, k, collective_name(k.coll)));
  CollState* st = nullptr;
  GICL_CHECK(coll_state(comm, &st));
  const gicl_device_comm_t& dc = comm->dev->handle;
  const size_t E = dtype_size(k.dtype);
  size_t send_elems, recv_elems;
  buffer_elems(k, comm->nranks, &send_elems, &recv_elems);
  const size_t bytes = std::max(send_elems, recv_elems) * E;
  const TunerInput in{k.coll,         bytes,
                      comm->nranks,   (dc.flags & GICL_DEVICE_FLAG_ALL_P2P) != 0,
                      st->all_nvlink, st->resident_blocks};
  Choice ch = choose(st->cfg, in);
  if (comm->nranks == 1 && !ch.forced) return run_alone(comm, st, k, bytes);
  if (ch.algo == Algorithm::kSendRecv) {
    log_choice(st, k, bytes, ch);
    return run_send_recv(comm, st, k);
  }
  if (ch.algo == Algorithm::kCopyEngine) {
    log_choice(st, k, bytes, ch);
    bool ran = false;
    GICL_CHECK(run_copy_engine(comm, st, k, &ran));
    if (ran) return GICL_SUCCESS;
    // Some rank cannot take pushes: every rank runs what the table picks instead.
    TunerConfig unforced = st->cfg;
    unforced.forced[static_cast<int>(k.coll)] = false;
    ch = choose(unforced, in);
  }
  if (ch.algo == Algorithm::kNvls) GICL_CHECK(prepare_nvls(comm, st, k, &ch));
  log_choice(st, k, bytes, ch);
  if (is_pipe(ch.algo)) return run_pipe(comm, st, k, ch);
  return run_direct(comm, st, k, ch);
}

}  // namespace gicl::coll
