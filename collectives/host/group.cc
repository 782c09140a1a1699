#include "collectives/host/group.hpp"

#include <algorithm>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collectives/host/coll_state.hpp"
#include "collectives/host/local_copy.hpp"
#include "collectives/host/residency.hpp"
#include "collectives/host/run.hpp"
#include "collectives/schedule/p2p.hpp"
#include "collectives/schedule/p2p_plan.hpp"
#include "common/cuda.hpp"
#include "common/log.hpp"
#include "common/settings.hpp"
#include "core/api_guard.hpp"
#include "core/comm.hpp"

namespace ccl::coll {
namespace {

struct Pending {
  ccl_comm* comm;
  cudaStream_t stream;
  std::function<Status()> fn;  // a collective; empty for a point-to-point op
  P2pOp op;
};

thread_local int g_depth = 0;
thread_local std::vector<Pending> g_pending;

/// Sends to and receives from the rank itself pair up in order (NCCL's matching per peer), and a
/// pair is a local copy rather than a trip through the kernel's FIFOs or rendezvous (one H200,
/// one rank, 128 MiB: 410 us through the FIFOs for cudaMalloc buffers, 99 us through the
/// rendezvous, 66 us for the copy). Only where they pair whole: as many sends as receives, equal
/// sizes, and every earlier operation with the rank itself paired too (one that went through the
/// kernel must meet its partner there, in order). A group's pairs are copied together, small ones
/// in one kernel (local_copies), whatever launches the rest become: batches are counted per
/// stream, so taking the rank's own streams out moves no other operation's batch. The rest go
/// to the kernel in `*rest`.
Status copy_self_pairs(ccl_comm* comm, CollState* st, const std::vector<P2pOp>& ops,
                       cudaStream_t stream, std::vector<P2pOp>* rest) {
  std::vector<const P2pOp*> sends, recvs;
  for (const P2pOp& op : ops)
    if (op.peer == comm->rank) (op.is_send ? sends : recvs).push_back(&op);
  bool pair = !sends.empty() && sends.size() == recvs.size() && st->self_sends_unmatched == 0;
  for (size_t i = 0; pair && i < sends.size(); ++i) pair = sends[i]->bytes == recvs[i]->bytes;
  if (!pair) {
    st->self_sends_unmatched +=
        static_cast<int64_t>(sends.size()) - static_cast<int64_t>(recvs.size());
    *rest = ops;
    return CCL_SUCCESS;
  }
  std::vector<CopySpec> copies;
  for (size_t i = 0; i < sends.size(); ++i)
    copies.push_back({reinterpret_cast<uintptr_t>(recvs[i]->buf),
                      reinterpret_cast<uintptr_t>(sends[i]->buf), sends[i]->bytes});
  CCL_CHECK(local_copies(comm, copies, stream));
  for (const P2pOp& op : ops)
    if (op.peer != comm->rank) rest->push_back(op);
  return CCL_SUCCESS;
}

/// Marks the sends the copy-engine proxy copies (CCL_P2P_COPY_ENGINE) and gives the launch its
/// queue, starting the proxy with the first such send. A proxy that cannot start is reported
/// once and those sends, then and later, go through the SMs.
void mark_copy_engine_sends(ccl_comm* comm, CollState* st, P2pArgs* a) {
  if (st->p2p_ce_from == 0) return;
  bool any = false;
  for (int i = 0; i < a->nops; ++i) {
    P2pOp& op = a->ops[i];
    op.copy_engine = op.is_send && p2p_rendezvous(op.bytes) && op.bytes >= st->p2p_ce_from;
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
      CCL_WARN(kSubsysProxy, "CCL_P2P_COPY_ENGINE: no copy-engine proxy (%s); the SMs copy",
               last_error());
    else if (st->p2p_proxy_failed)
      CCL_INFO(kSubsysProxy, "no copy-engine proxy (%s); the SMs copy large sends", last_error());
    else
      CCL_INFO(kSubsysProxy, "rank %d: copy-engine proxy started for sends of %zu bytes and more",
               comm->rank, std::max(st->p2p_ce_from, kP2pRendezvousFrom));
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
Status launch_part(ccl_comm* comm, CollState* st, cudaStream_t stream,
                   const std::vector<P2pOp>& ops) {
  if (ops.size() > static_cast<size_t>(kMaxP2pOps))
    return CCL_FAIL(CCL_INTERNAL_ERROR, "a point-to-point launch of %zu operations; at most %d",
                    ops.size(), kMaxP2pOps);
  P2pArgs a{};
  a.nops = static_cast<int>(ops.size());
  std::copy(ops.begin(), ops.end(), a.ops);
  // A large receive offers its buffer to the sender when the sender can write into it.
  for (int i = 0; i < a.nops; ++i) {
    P2pOp& op = a.ops[i];
    uint64_t w = 0;
    const bool offer = !op.is_send && p2p_rendezvous(op.bytes) &&
                       window_of(comm, op.buf, op.bytes, /*registered=*/true, &w);
    op.win = offer ? w : kNoWindow;
  }
  mark_copy_engine_sends(comm, st, &a);
  CCL_CUDA_CHECK(launch_p2p(comm->dev->handle, launch_scratch(comm, st), a, {stream, comm->pdl},
                            st->resident_blocks));
  return CCL_SUCCESS;
}

/// A communicator's sends and receives of one group (or one lone operation): the pairs with the
/// rank itself copied, the rest in batches agreed with every partner, packed into launches of
/// this rank's own (p2p_plan.hpp).
Status run_p2p(ccl_comm* comm, cudaStream_t stream, const std::vector<P2pOp>& ops) {
  std::lock_guard<std::mutex> lock(comm->op_mutex);
  DeviceScope device(comm->device);
  CommOp guard(comm);
  CCL_CHECK(guard.check());
  CollState* st = nullptr;
  CCL_CHECK(coll_state(comm, &st));
  if (!(comm->dev->handle.flags & CCL_DEVICE_FLAG_ALL_P2P))
    return CCL_FAIL(CCL_UNSUPPORTED,
                    "send/recv need every rank reachable over NVLink/PCIe peer mappings in this "
                    "build");
  // Too many ranks at once on one GPU (MPS, or one process) for every rank's 16 FIFO channel blocks
  // to be resident together: refused, before anything is enqueued, rather than left to stall (both
  // sides of an operation decide alike, by its size).
  if (!fifo_channels_fit(st->resident_blocks))
    for (const P2pOp& op : ops)
      if (op.peer != comm->rank && !p2p_ll(op.bytes, p2p_ll_capacity(comm->nranks)))
        return CCL_FAIL(CCL_INVALID_USAGE,
                        "ccl_%s of %zu bytes with rank %d: ranks share a GPU at once (MPS, or "
                        "one process) so that each launch keeps to %d blocks, fewer than the %d "
                        "FIFO channels operations above %zu bytes need (fewer ranks per GPU run "
                        "them)",
                        op.is_send ? "send" : "recv", op.bytes, op.peer, st->resident_blocks,
                        kPipeChannels, p2p_ll_capacity(comm->nranks));
  std::vector<P2pOp> rest;
  CCL_CHECK(copy_self_pairs(comm, st, ops, stream, &rest));
  if (rest.empty()) return CCL_SUCCESS;
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
    CCL_CHECK(launch_part(comm, st, stream, part));  // the later parts' partners wait on this one
  }
  return CCL_SUCCESS;
}

/// The first failure among several calls, with the message it left in this thread's last error
/// (later calls overwrite it).
struct FirstFailure {
  Status code;
  std::string message;
  void note(Status s) {
    if (code.ok() && !s.ok()) code = s, message = last_error();
  }
  /// The failure as this thread's own error (message included), or success.
  Status get() const { return code.ok() ? code : relay(code.code(), message.c_str()); }
};

/// Runs job(0) .. job(n - 1) in threads of their own and returns the first failure, its message
/// handed to this thread.
template <typename Job>
Status run_concurrently(size_t n, Job job) {
  std::vector<FirstFailure> results(n);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) threads.emplace_back([&, i] { results[i].note(job(i)); });
  for (auto& t : threads) t.join();
  for (const FirstFailure& r : results)
    if (!r.code.ok()) return r.get();
  return CCL_SUCCESS;
}

/// The first collective of a communicator allocates its scratch collectively; when one thread
/// drives several communicators (ccl_comm_init_all) they must do so concurrently, for their
/// collectives and their sends and receives alike. Communicators without a GPU have no state to
/// make (their calls fail, or do nothing at count 0).
Status prepare_states(const std::vector<Pending>& q) {
  std::vector<ccl_comm*> todo;
  for (const Pending& p : q)
    if (p.comm->heap && !p.comm->coll_state &&
        std::find(todo.begin(), todo.end(), p.comm) == todo.end())
      todo.push_back(p.comm);
  if (todo.size() <= 1) return CCL_SUCCESS;  // the call itself creates it
  return run_concurrently(todo.size(), [&](size_t i) -> Status {
    CCL_CUDA_CHECK(cudaSetDevice(todo[i]->device));
    std::lock_guard<std::mutex> lock(todo[i]->op_mutex);
    CollState* st = nullptr;
    return coll_state(todo[i], &st);
  });
}

/// The group's collectives, in order per communicator. Where they meet the other ranks' hosts
/// first (meets_on_host) and one thread drives several communicators, run one after another the
/// first would wait for a rank whose call this thread has not made yet: each communicator's
/// calls then run in a thread of their own. Otherwise in this thread (no thread's start-up cost
/// on every group). A failed call does not stop the ones after it, as outside a group.
Status run_collectives(const std::vector<Pending>& q) {
  std::vector<ccl_comm*> comms;
  for (const Pending& p : q)
    if (p.fn && std::find(comms.begin(), comms.end(), p.comm) == comms.end())
      comms.push_back(p.comm);
  bool meet = false;
  for (size_t i = 0; comms.size() > 1 && i < comms.size() && !meet; ++i)
    CCL_CHECK(meets_on_host(comms[i], &meet));
  auto run_for = [&](ccl_comm* c) {
    FirstFailure first;
    for (const Pending& p : q)
      if (p.fn && (c == nullptr || p.comm == c)) first.note(p.fn());
    return first.get();
  };
  if (!meet) return run_for(nullptr);
  return run_concurrently(comms.size(), [&](size_t i) { return run_for(comms[i]); });
}

}  // namespace

Status group_start() {
  ++g_depth;
  return CCL_SUCCESS;
}

Status group_end() {
  if (g_depth == 0)
    return CCL_FAIL(CCL_INVALID_USAGE, "ccl_group_end without a matching ccl_group_start");
  if (--g_depth > 0) return CCL_SUCCESS;
  std::vector<Pending> q;
  q.swap(g_pending);
  CCL_CHECK(prepare_states(q));
  FirstFailure first;
  first.note(run_collectives(q));
  // Point-to-point: each communicator's group as one or more launches, in the order the comms
  // first appeared.
  std::vector<ccl_comm*> comms;
  for (const Pending& p : q)
    if (!p.fn && std::find(comms.begin(), comms.end(), p.comm) == comms.end())
      comms.push_back(p.comm);
  for (ccl_comm* c : comms) {
    std::vector<P2pOp> ops;
    cudaStream_t stream = nullptr;
    bool mixed = false;
    for (const Pending& p : q)
      if (!p.fn && p.comm == c) {
        if (ops.empty()) stream = p.stream;
        mixed |= p.stream != stream;
        ops.push_back(p.op);
      }
    if (mixed) {
      first.note(CCL_FAIL(CCL_INVALID_USAGE,
                          "sends and receives of one communicator in a group must use one stream"));
      continue;
    }
    first.note(run_p2p(c, stream, ops));
  }
  return first.get();
}

bool in_group() {
  return g_depth > 0;
}

Status run_or_queue(ccl_comm* comm, cudaStream_t stream, std::function<Status()> fn) {
  if (g_depth == 0) return fn();
  g_pending.push_back({comm, stream, std::move(fn), {}});
  return CCL_SUCCESS;
}

Status p2p(ccl_comm* comm, const P2pOp& op, cudaStream_t stream) {
  if (g_depth == 0) return run_p2p(comm, stream, {op});
  g_pending.push_back({comm, stream, {}, op});
  return CCL_SUCCESS;
}

}  // namespace ccl::coll
