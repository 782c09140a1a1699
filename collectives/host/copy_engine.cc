// SPDX-License-Identifier: Apache-2.0
#include "collectives/host/copy_engine.hpp"

#include <algorithm>
#include <vector>

#include "collectives/common/dtypes.cuh"
#include "collectives/schedule/tables.hpp"
#include "common/cuda.hpp"
#include "common/log.hpp"
#include "core/comm.hpp"
#include "core/host_exchange.hpp"
#include "core/stream_kernels.cuh"

namespace gicl::coll {
namespace {

/// What a rank tells the others before the copies.
struct CeOffer {
  uint64_t window;  // where the peers push (its receive buffer's window), or kNoWindow
  uint64_t block;   // bytes of a rank block (broadcast: of the buffer)
  int32_t coll;
  int32_t root;
  int32_t unable;  // why the copy engines cannot run it (Unable), 0 when they can
  int32_t pad;
};

enum Unable : int32_t { kAble, kNoRecvWindow, kInPlaceAllToAll };

/// Copies to more peers than this share the side streams (round robin).
constexpr int kMaxSideStreams = 8;

Status make_side_streams(CollState* st, int want) {
  if (static_cast<int>(st->ce_streams.size()) >= want) return GICL_SUCCESS;
  // Not part of a capture in progress: stream and event creation are set-up.
  RelaxedCapture relaxed;
  if (st->ce_fork == nullptr)
    GICL_CUDA_CHECK(cudaEventCreateWithFlags(&st->ce_fork, cudaEventDisableTiming));
  while (static_cast<int>(st->ce_streams.size()) < want) {
    cudaStream_t s = nullptr;
    GICL_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    st->ce_streams.push_back(s);
    cudaEvent_t e = nullptr;
    GICL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    st->ce_join.push_back(e);
  }
  return GICL_SUCCESS;
}

/// Where this process writes into rank j's window `w`.
char* peer_window(gicl_comm* comm, uint64_t w, int j) {
  if (w & kRegWindow) {
    if (!comm->registry) return nullptr;
    char* base = comm->registry->peer_address(registered_slot(w), j);
    return base != nullptr ? base + registered_offset(w) : nullptr;
  }
  return static_cast<char*>(comm->heap->peer_at(w, j));
}

struct Copy {
  void* dst;
  const void* src;
};

/// Every rank's offer of its receive window, allgathered; mismatched calls fail on every rank
/// before anything is enqueued (a push sized by the wrong count would write past a buffer).
/// `able` is false where some rank cannot take pushes (logged once at GICL_DEBUG=INFO).
Status exchange_offers(gicl_comm* comm, CollState* st, const CollCall& k, std::vector<CeOffer>* all,
                       bool* able) {
  const int n = comm->nranks, me = comm->rank;
  const bool bcast = k.coll == Collective::kBroadcast;
  const size_t block = k.count * dtype_size(k.dtype);
  const bool receives = !bcast || me != k.root;
  all->assign(n, CeOffer{});
  CeOffer& mine = (*all)[me];
  mine = {kNoWindow, block, static_cast<int32_t>(k.coll), bcast ? k.root : -1, kAble, 0};
  uint64_t w = 0;
  if (k.coll == Collective::kAllToAll && k.send == k.recv)
    mine.unable = kInPlaceAllToAll;  // peers would overwrite blocks this rank has yet to send
  else if (receives && !window_of(comm, k.recv, (bcast ? 1 : n) * block, true, &w))
    mine.unable = kNoRecvWindow;
  else if (receives)
    mine.window = w;
  GICL_CHECK(host_allgather(comm, all->data(), sizeof(CeOffer)));
  for (int r = 0; r < n; ++r) {
    const CeOffer& o = (*all)[r];
    if (o.coll != mine.coll || o.block != mine.block || o.root != mine.root)
      return GICL_FAIL(GICL_INVALID_USAGE,
                       "%s (copy_engine): rank %d called %s of %llu bytes per block (root %d), "
                       "rank %d %s of %llu (root %d)",
                       collective_name(k.coll), me, collective_name(k.coll),
                       static_cast<unsigned long long>(block), mine.root, r,
                       collective_name(static_cast<Collective>(o.coll)),
                       static_cast<unsigned long long>(o.block), o.root);
  }
  *able = true;
  for (int r = 0; r < n && *able; ++r) {
    const CeOffer& o = (*all)[r];
    if (o.unable == kAble) continue;
    *able = false;
    // Once per collective and reason at GICL_DEBUG=INFO (bit 63: apart from run.cc's keys).
    const uint64_t key = (uint64_t{1} << 63) | (static_cast<uint64_t>(k.coll) << 8) |
                         static_cast<uint64_t>(o.unable);
    if (log_enabled(LogLevel::kInfo, kSubsysColl) && st->first_report(key))
      GICL_INFO(kSubsysColl, "%s (copy_engine): %s; the SM kernels run it", collective_name(k.coll),
                o.unable == kInPlaceAllToAll
                    ? "an in-place alltoall"
                    : "a receive buffer is neither symmetric nor registered");
  }
  return GICL_SUCCESS;
}

/// This rank's pushes into its peers' windows and its own block's local copy (dst null: none).
Status plan_copies(gicl_comm* comm, const CollCall& k, const std::vector<CeOffer>& all,
                   std::vector<Copy>* pushes, Copy* local) {
  const int n = comm->nranks, me = comm->rank;
  const bool bcast = k.coll == Collective::kBroadcast;
  const size_t block = k.count * dtype_size(k.dtype);
  const char* send = static_cast<const char*>(k.send);
  char* recv = static_cast<char*>(k.recv);
  for (int step = 1; step < n && !(bcast && me != k.root); ++step) {
    const int j = (me + step) % n;
    char* dst = peer_window(comm, all[j].window, j);
    if (dst == nullptr)
      return GICL_FAIL(GICL_INTERNAL_ERROR, "%s (copy_engine): rank %d's window is not mapped here",
                       collective_name(k.coll), j);
    if (bcast)
      pushes->push_back({dst, send});
    else if (k.coll == Collective::kAllGather)
      pushes->push_back({dst + me * block, send});
    else
      pushes->push_back({dst + me * block, send + j * block});
  }
  *local = {nullptr, nullptr};
  if (bcast && me == k.root && send != recv) *local = {recv, send};
  if (k.coll == Collective::kAllGather && recv + me * block != send)
    *local = {recv + me * block, send};
  if (k.coll == Collective::kAllToAll) *local = {recv + me * block, send + me * block};
  return GICL_SUCCESS;
}

}  // namespace

Status run_copy_engine(gicl_comm* comm, CollState* st, const CollCall& k, bool* ran) {
  *ran = false;
  std::vector<CeOffer> all;
  bool able = false;
  GICL_CHECK(exchange_offers(comm, st, k, &all, &able));
  if (!able) return GICL_SUCCESS;
  std::vector<Copy> pushes;
  Copy local;
  GICL_CHECK(plan_copies(comm, k, all, &pushes, &local));
  const size_t block = k.count * dtype_size(k.dtype);
  const int sides = std::min(static_cast<int>(pushes.size()), kMaxSideStreams);
  GICL_CHECK(make_side_streams(st, sides));
  const Launch l{k.stream, comm->pdl};
  const gicl_device_comm_t& dc = comm->dev->handle;
  // Entry: every peer's stream has reached this call, so its window may be written.
  GICL_CUDA_CHECK(launch_barrier(dc, l));
  if (sides > 0) GICL_CUDA_CHECK(cudaEventRecord(st->ce_fork, k.stream));
  for (int i = 0; i < sides; ++i)
    GICL_CUDA_CHECK(cudaStreamWaitEvent(st->ce_streams[i], st->ce_fork));
  for (size_t i = 0; i < pushes.size(); ++i)
    GICL_CUDA_CHECK(cudaMemcpyAsync(pushes[i].dst, pushes[i].src, block, cudaMemcpyDefault,
                                    st->ce_streams[i % sides]));
  if (local.dst != nullptr)
    GICL_CUDA_CHECK(
        cudaMemcpyAsync(local.dst, local.src, block, cudaMemcpyDeviceToDevice, k.stream));
  for (int i = 0; i < sides; ++i) {
    GICL_CUDA_CHECK(cudaEventRecord(st->ce_join[i], st->ce_streams[i]));
    GICL_CUDA_CHECK(cudaStreamWaitEvent(k.stream, st->ce_join[i]));
  }
  // Exit: every rank's pushes are complete (each joined its copies before arriving).
  GICL_CUDA_CHECK(launch_barrier(dc, l));
  *ran = true;
  return GICL_SUCCESS;
}

}  // namespace gicl::coll
