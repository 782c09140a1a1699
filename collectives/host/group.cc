// SPDX-License-Identifier: Apache-2.0
#include "collectives/host/group.hpp"

#include <algorithm>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collectives/host/coll_state.hpp"
#include "collectives/host/p2p_issue.hpp"
#include "collectives/host/run.hpp"
#include "common/cuda.hpp"
#include "common/log.hpp"
#include "core/api_guard.hpp"
#include "core/comm.hpp"

namespace gicl::coll {
namespace {

struct Pending {
  gicl_comm* comm;
  cudaStream_t stream;
  std::function<Status()> fn;  // a collective; empty for a point-to-point op
  P2pOp op;
};

thread_local int g_depth = 0;
thread_local std::vector<Pending> g_pending;

/// A communicator's sends and receives of one group (or one lone operation).
Status run_p2p(gicl_comm* comm, cudaStream_t stream, const std::vector<P2pOp>& ops) {
  std::lock_guard<std::mutex> lock(comm->op_mutex);
  DeviceScope device(comm->device);
  CommOp guard(comm);
  GICL_CHECK(guard.check());
  CollState* st = nullptr;
  GICL_CHECK(coll_state(comm, &st));
  return issue_p2p(comm, st, stream, ops);
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
  return GICL_SUCCESS;
}

/// The first collective of a communicator allocates its scratch collectively; when one thread
/// drives several communicators (gicl_comm_init_all) they must do so concurrently, for their
/// collectives and their sends and receives alike. Communicators without a GPU have no state to
/// make (their calls fail, or do nothing at count 0).
Status prepare_states(const std::vector<Pending>& q) {
  std::vector<gicl_comm*> todo;
  for (const Pending& p : q)
    if (p.comm->heap && existing_coll_state(p.comm) == nullptr &&
        std::find(todo.begin(), todo.end(), p.comm) == todo.end())
      todo.push_back(p.comm);
  if (todo.size() <= 1) return GICL_SUCCESS;  // the call itself creates it
  return run_concurrently(todo.size(), [&](size_t i) -> Status {
    GICL_CUDA_CHECK(cudaSetDevice(todo[i]->device));
    log_set_device(todo[i]->device);
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
  std::vector<gicl_comm*> comms;
  for (const Pending& p : q)
    if (p.fn && std::find(comms.begin(), comms.end(), p.comm) == comms.end())
      comms.push_back(p.comm);
  bool meet = false;
  for (size_t i = 0; comms.size() > 1 && i < comms.size() && !meet; ++i)
    GICL_CHECK(meets_on_host(comms[i], &meet));
  auto run_for = [&](gicl_comm* c) {
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
  return GICL_SUCCESS;
}

Status group_end() {
  if (g_depth == 0)
    return GICL_FAIL(GICL_INVALID_USAGE, "gicl_group_end without a matching gicl_group_start");
  if (--g_depth > 0) return GICL_SUCCESS;
  std::vector<Pending> q;
  q.swap(g_pending);
  GICL_CHECK(prepare_states(q));
  FirstFailure first;
  first.note(run_collectives(q));
  // Point-to-point: each communicator's group as one or more launches, in the order the comms
  // first appeared.
  std::vector<gicl_comm*> comms;
  for (const Pending& p : q)
    if (!p.fn && std::find(comms.begin(), comms.end(), p.comm) == comms.end())
      comms.push_back(p.comm);
  for (gicl_comm* c : comms) {
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
      first.note(
          GICL_FAIL(GICL_INVALID_USAGE,
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

Status run_or_queue(gicl_comm* comm, cudaStream_t stream, std::function<Status()> fn) {
  if (g_depth == 0) return fn();
  g_pending.push_back({comm, stream, std::move(fn), {}});
  return GICL_SUCCESS;
}

Status p2p(gicl_comm* comm, const P2pOp& op, cudaStream_t stream) {
  if (g_depth == 0) return run_p2p(comm, stream, {op});
  g_pending.push_back({comm, stream, {}, op});
  return GICL_SUCCESS;
}

}  // namespace gicl::coll
