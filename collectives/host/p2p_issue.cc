// SPDX-License-Identifier: Apache-2.0
#include "collectives/host/p2p_issue.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "collectives/host/local_copy.hpp"
#include "collectives/host/residency.hpp"
#include "collectives/host/run.hpp"
#include "collectives/schedule/p2p.hpp"
#include "collectives/schedule/p2p_plan.hpp"
#include "common/cuda.hpp"
#include "common/log.hpp"
#include "common/settings.hpp"
#include "core/comm.hpp"
#include "core/net_path.hpp"

namespace gicl::coll {
namespace {

/// Sends to and receives from the rank itself pair up in order (NCCL's matching per peer), and a
/// pair is a local copy rather than a trip through the kernel's FIFOs or rendezvous (one H200,
/// one rank, 128 MiB: 410 us through the FIFOs for cudaMalloc buffers, 99 us through the
/// rendezvous, 66 us for the copy). Only where they pair whole: as many sends as receives, equal
/// sizes, and every earlier operation with the rank itself paired too (one that went through the
/// kernel must meet its partner there, in order). The pairs go to `*copies`, the rest (all of
/// `ops` when they do not pair) to `*rest` for the kernel.
///
/// Except beside a large send to a peer: a copy on the stream runs before the launch, and on a
/// side stream it did not overlap it eagerly (2 x H200, 512 MiB broadcast out of place as
/// send/recv: 1520 us against 1374 in place, yet 1384 in a graph; a hardware queue the side stream
/// shares with another is the likely cause, not confirmed). A pair of rendezvous size into a
/// window then stays in the kernel, whose multiprocessors copy it while the copy engine carries
/// the peer's bytes, or, beside a send the SMs copy from p2p_self_beside's size, on blocks of its
/// own (launch_p2p's self blocks, only where launches have no block limit).
void pair_self_ops(gicl_comm* comm, CollState* st, const std::vector<P2pOp>& ops,
                   std::vector<CopySpec>* copies, std::vector<P2pOp>* rest) {
  std::vector<const P2pOp*> sends, recvs;
  bool beside = false;  // a send to a peer that the self pair's copy can run beside
  for (const P2pOp& op : ops) {
    if (op.peer == comm->rank) {
      (op.is_send ? sends : recvs).push_back(&op);
    } else if (op.is_send) {
      // (a proxy that could not start takes no send)
      beside |= !st->p2p_proxy_failed && p2p_copy_engine(op.bytes, st->cfg.p2p_ce_from);
      beside |= st->resident_blocks == 0 && p2p_self_beside(op.bytes);
    }
  }
  bool pair = !sends.empty() && sends.size() == recvs.size() && st->self_sends_unmatched == 0;
  for (size_t i = 0; pair && i < sends.size(); ++i) pair = sends[i]->bytes == recvs[i]->bytes;
  if (!pair) {
    st->self_sends_unmatched +=
        static_cast<int64_t>(sends.size()) - static_cast<int64_t>(recvs.size());
    *rest = ops;
    return;
  }
  std::vector<const P2pOp*> in_kernel;
  for (size_t i = 0; i < sends.size(); ++i) {
    uint64_t w = 0;
    if (beside && p2p_rendezvous(sends[i]->bytes) &&
        window_of(comm, recvs[i]->buf, recvs[i]->bytes, /*registered=*/true, &w)) {
      in_kernel.push_back(sends[i]);
      in_kernel.push_back(recvs[i]);
      continue;
    }
    copies->push_back({reinterpret_cast<uintptr_t>(recvs[i]->buf),
                       reinterpret_cast<uintptr_t>(sends[i]->buf), sends[i]->bytes});
  }
  for (const P2pOp& op : ops)
    if (op.peer != comm->rank ||
        std::find(in_kernel.begin(), in_kernel.end(), &op) != in_kernel.end())
      rest->push_back(op);
}

/// Marks the sends the copy-engine proxy copies (GICL_P2P_COPY_ENGINE) and gives the launch its
/// queue, starting the proxy with the first such send. A proxy that cannot start is reported
/// once and those sends, then and later, go through the SMs.
void mark_copy_engine_sends(gicl_comm* comm, CollState* st, P2pArgs* a) {
  if (st->cfg.p2p_ce_from == 0) return;
  bool any = false;
  for (int i = 0; i < a->nops; ++i) {
    P2pOp& op = a->ops[i];
    op.copy_engine = op.is_send && op.peer != comm->rank && !op.net &&
                     p2p_copy_engine(op.bytes, st->cfg.p2p_ce_from);
    any |= op.copy_engine != 0;
  }
  if (!any) return;
  if (!st->p2p_proxy && !st->p2p_proxy_failed) {
    st->p2p_proxy_failed =
        !CopyProxy::start(comm->device, comm->peers[comm->rank].mps, &st->p2p_proxy).ok();
    // A warning only for a user who asked: by default (CUDA_DEVICE_MAX_CONNECTIONS=1, say) the
    // SM copy is the expected fallback.
    SettingSource asked = SettingSource::kDefault;
    if (st->p2p_proxy_failed) setting_raw(Setting::kP2pCopyEngine, &asked);
    if (st->p2p_proxy_failed && asked == SettingSource::kEnvironment)
      GICL_WARN(kSubsysProxy, "GICL_P2P_COPY_ENGINE: no copy-engine proxy (%s); the SMs copy",
                last_error());
    else if (st->p2p_proxy_failed)
      GICL_INFO(kSubsysProxy, "no copy-engine proxy (%s); the SMs copy large sends", last_error());
    else
      GICL_INFO(kSubsysProxy, "rank %d: copy-engine proxy started for sends of %zu bytes and more",
                comm->rank, std::max(st->cfg.p2p_ce_from, kP2pRendezvousFrom));
  }
  if (!st->p2p_proxy) {
    for (int i = 0; i < a->nops; ++i) a->ops[i].copy_engine = 0;
    return;
  }
  a->ce = st->p2p_proxy->queue();
  a->ce_share = st->p2p_ce_share;
  st->p2p_proxy->kick();
}

/// One launch of at most kMaxP2pOps operations (a part of a group p2p_plan made, or all of it).
Status launch_part(gicl_comm* comm, CollState* st, cudaStream_t stream,
                   const std::vector<P2pOp>& ops) {
  if (ops.size() > static_cast<size_t>(kMaxP2pOps))
    return GICL_FAIL(GICL_INTERNAL_ERROR, "a point-to-point launch of %zu operations; at most %d",
                     ops.size(), kMaxP2pOps);
  P2pArgs a{};
  a.nops = static_cast<int>(ops.size());
  std::copy(ops.begin(), ops.end(), a.ops);
  // A large receive offers its buffer to the sender when the sender can write into it.
  // Operations with a network peer take no rendezvous (p2p_rendezvous_of): they offer no window.
  for (int i = 0; i < a.nops; ++i) {
    P2pOp& op = a.ops[i];
    uint64_t w = 0;
    const bool offer = !op.is_send && p2p_rendezvous_of(op) &&
                       window_of(comm, op.buf, op.bytes, /*registered=*/true, &w);
    op.win = offer ? w : kNoWindow;
  }
  mark_copy_engine_sends(comm, st, &a);
  if (std::any_of(a.ops, a.ops + a.nops, [](const P2pOp& op) { return op.net != 0; }))
    net_path_kick(comm);
  GICL_CUDA_CHECK(launch_p2p(comm->dev->handle, launch_scratch(comm, st), a, {stream, comm->pdl},
                             st->resident_blocks));
  return GICL_SUCCESS;
}

/// The operations for the kernel (with other ranks, and pairs with itself kept there): one launch
/// where they form one batch, else the launches of their plan (p2p_plan.hpp).
Status launch_rest(gicl_comm* comm, CollState* st, cudaStream_t stream,
                   const std::vector<P2pOp>& rest) {
  if (rest.empty()) return GICL_SUCCESS;
  // A group of one batch is one launch as it stands (no plan to allocate on the common path).
  std::vector<int> batch = p2p_batches(rest, comm->nranks, comm->rank);
  if (rest.size() <= static_cast<size_t>(kMaxP2pOps) && p2p_one_batch(batch))
    return launch_part(comm, st, stream, rest);
  const P2pPlan plan = p2p_plan(std::move(batch));
  std::vector<P2pOp> part;
  for (const std::vector<int>& members : plan.launches) {
    part.clear();
    for (int i : members) {
      part.push_back(rest[static_cast<size_t>(i)]);
      part.back().batch = plan.place[static_cast<size_t>(i)];
    }
    GICL_CHECK(launch_part(comm, st, stream, part));  // the later parts' partners wait on this one
  }
  return GICL_SUCCESS;
}

}  // namespace

Status issue_p2p(gicl_comm* comm, CollState* st, cudaStream_t stream,
                 const std::vector<P2pOp>& ops_in) {
  // An operation with a rank on the network path goes through the FIFOs and the proxy, which
  // needs the communicator's network path open (GICL_NET=AUTO opens none where libfabric does
  // not open on every rank).
  if (comm->nranks > kMaxPipeRanks)
    return GICL_FAIL(GICL_UNSUPPORTED,
                     "send/recv take communicators of at most %d ranks (the FIFO counts per "
                     "peer); this one has %d",
                     kMaxPipeRanks, comm->nranks);
  std::vector<P2pOp> ops = ops_in;
  for (P2pOp& op : ops) {
    op.net = comm->paths[op.peer] == PeerPath::kNetwork ? 1 : 0;
    if (op.net && !comm->net)
      return GICL_FAIL(GICL_UNSUPPORTED,
                       "gicl_%s with rank %d: rank %d is on the network path, and this "
                       "communicator has none open (GICL_NET; the log at INFO says why)",
                       op.is_send ? "send" : "recv", op.peer, op.peer);
  }
  if (!(comm->dev->handle.flags & GICL_DEVICE_FLAG_ALL_P2P) && !comm->net)
    return GICL_FAIL(GICL_UNSUPPORTED,
                     "send/recv need every rank reachable over NVLink/PCIe peer mappings or the "
                     "network path");
  // Too many ranks at once on one GPU (MPS, or one process) for every rank's 16 FIFO channel blocks
  // to be resident together: refused, before anything is enqueued, rather than left to stall (both
  // sides of an operation decide alike, by its size).
  if (!fifo_channels_fit(st->resident_blocks))
    for (const P2pOp& op : ops)
      if (op.peer != comm->rank && !p2p_ll_of(op, p2p_ll_capacity(comm->nranks)))
        return GICL_FAIL(GICL_INVALID_USAGE,
                         "gicl_%s of %zu bytes with rank %d: ranks share a GPU at once (MPS, or "
                         "one process) so that each launch keeps to %d blocks, fewer than the %d "
                         "FIFO channels operations above %zu bytes need (fewer ranks per GPU run "
                         "them)",
                         op.is_send ? "send" : "recv", op.bytes, op.peer, st->resident_blocks,
                         kPipeChannels, p2p_ll_capacity(comm->nranks));
  std::vector<CopySpec> copies;
  std::vector<P2pOp> rest;
  pair_self_ops(comm, st, ops, &copies, &rest);
  if (!copies.empty()) GICL_CHECK(local_copies(comm, copies, stream));
  return launch_rest(comm, st, stream, rest);
}

}  // namespace gicl::coll
