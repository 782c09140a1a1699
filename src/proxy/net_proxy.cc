// SPDX-License-Identifier: Apache-2.0
#include "proxy/net_proxy.hpp"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "common/log.hpp"
#include "proxy/proxy_ops.hpp"

namespace gicl::proxy {

NetProxy::NetProxy(NetProxyArgs args)
    : args_(std::move(args)), nranks_(static_cast<int>(args_.heap.keys.size())) {
  if (args_.delivery == nullptr) args_.delivery = make_direct_delivery(args_.transport, args_.heap);
  rings_.reserve(args_.rings.size());
  for (const RingView& v : args_.rings)
    rings_.push_back(Ring{v, RingReader(v.slots, v.size, v.tail, v.done),
                          std::vector<uint32_t>(nranks_, 0), 0, false, 0, 0});
}

Status NetProxy::start(NetProxyArgs args, std::unique_ptr<NetProxy>* out) {
  GICL_ARG_CHECK(args.transport != nullptr, "network proxy: no transport");
  GICL_ARG_CHECK(
      args.delivery != nullptr || (args.heap.region != nullptr &&
                                   args.heap.region->contains(args.heap.base, args.heap.bytes)),
      "network proxy: the heap [%p, +%zu) is not inside its registered region",
      static_cast<void*>(args.heap.base), args.heap.bytes);
  GICL_ARG_CHECK(args.rank >= 0 && args.rank < static_cast<int>(args.heap.keys.size()),
                 "network proxy: rank %d with %zu heap keys", args.rank, args.heap.keys.size());
  for (size_t i = 0; i < args.rings.size(); ++i) {
    const RingView& v = args.rings[i];
    GICL_ARG_CHECK(
        v.slots != nullptr && v.tail != nullptr && v.done != nullptr && v.failed != nullptr &&
            v.size >= kProxyMaxSlots && (v.size & (v.size - 1)) == 0 && v.results != nullptr &&
            v.results_size > 0 && (v.results_size & (v.results_size - 1)) == 0,
        "network proxy: ring %zu is incomplete or its size %u or its %u result slots are not a "
        "power of two",
        i, v.size, v.results_size);
  }
  std::unique_ptr<NetProxy> p(new NetProxy(std::move(args)));
  p->thread_ = std::thread([q = p.get()] { q->run(); });
  (void)pthread_setname_np(p->thread_.native_handle(), "gicl-proxy");  // for top -H, debuggers
  if (p->args_.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(p->args_.cpu, &set);
    // Placement is a performance choice: a refusal (a cgroup without that core) is logged.
    if (const int rc = pthread_setaffinity_np(p->thread_.native_handle(), sizeof(set), &set))
      GICL_WARN(kSubsysProxy, "network proxy: not pinned to core %d (error %d)", p->args_.cpu, rc);
  }
  *out = std::move(p);
  return GICL_SUCCESS;
}

NetProxy::~NetProxy() {
  stop_.store(true, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(nap_mutex_);
    nap_cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

gicl_result_t NetProxy::error(std::string* why) const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  if (why != nullptr) *why = error_;
  return error_code_;
}

NetProxyStats NetProxy::stats() const {
  return {issued_.load(std::memory_order_relaxed), completed_.load(std::memory_order_relaxed),
          sleeps_.load(std::memory_order_relaxed)};
}

void NetProxy::fail(gicl_result_t code, const std::string& why, bool logged) {
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (error_code_ != GICL_SUCCESS) return;
    error_code_ = code;
    error_ = why;
  }
  if (!logged) GICL_WARN(kSubsysProxy, "%s", why.c_str());
  failed_.store(true, std::memory_order_release);
  for (Ring& r : rings_) __atomic_store_n(r.view.failed, 1u, __ATOMIC_RELEASE);
}

void NetProxy::fail_posting(Status s, const ProxyRequest& q, uint32_t ring, uint64_t ticket) {
  const std::string why = last_error();
  if (why.rfind("network proxy:", 0) == 0) return fail(s.code(), why, true);  // names it already
  char head[160];
  std::snprintf(head, sizeof(head),
                "network proxy: %s to peer %u (ring %u, ticket %" PRIu64 "): ", op_name(q.op),
                q.peer, ring, ticket);
  fail(s.code(), head + why);
}

void NetProxy::run() {
  if (args_.device >= 0) {
    if (const cudaError_t rc = cudaSetDevice(args_.device); rc != cudaSuccess) {
      char msg[160];
      std::snprintf(msg, sizeof(msg), "network proxy: cudaSetDevice(%d): %s", args_.device,
                    cudaGetErrorString(rc));
      fail(GICL_UNHANDLED_CUDA_ERROR, msg);
      return;
    }
    // Never barred by another thread's capture (a stream captured in cudaStreamCaptureModeGlobal
    // bars every thread's event queries and launches otherwise): this thread's calls join no
    // graph.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    if (const cudaError_t rc = cudaThreadExchangeStreamCaptureMode(&mode); rc != cudaSuccess) {
      fail(GICL_UNHANDLED_CUDA_ERROR,
           std::string("network proxy: cudaThreadExchangeStreamCaptureMode: ") +
               cudaGetErrorString(rc));
      return;
    }
  }
  auto last_work = std::chrono::steady_clock::now();
  auto nap = std::chrono::microseconds(0);
  while (!stop_.load(std::memory_order_acquire) && !failed_.load(std::memory_order_acquire)) {
    bool work = false;
    for (uint32_t i = 0; i < rings_.size() && !failed_.load(std::memory_order_relaxed); ++i)
      work |= serve(rings_[i], i);
    work |= poll();
    const auto now = std::chrono::steady_clock::now();
    if (work) {
      last_work = now;
      nap = std::chrono::microseconds(0);
      continue;
    }
    if (now - last_work < kBusyFor) continue;
    const int64_t now_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    if (now_ns < busy_until_ns_.load(std::memory_order_relaxed)) {
      nap = std::chrono::microseconds(0);  // kicked: after the busy period, short sleeps again
      continue;
    }
    nap = nap.count() == 0 ? args_.first_sleep : std::min(args_.max_sleep, nap * 2);
    nap_for(nap, now_ns);
  }
}

void NetProxy::nap_for(std::chrono::microseconds nap, int64_t now_ns) {
  std::unique_lock<std::mutex> lock(nap_mutex_);
  sleeping_.store(true);
  if (busy_until_ns_.load() <= now_ns && !stop_.load(std::memory_order_acquire)) {
    sleeps_.fetch_add(1, std::memory_order_relaxed);
    nap_cv_.wait_for(lock, nap);
  }
  sleeping_.store(false, std::memory_order_relaxed);
}

void NetProxy::kick() {
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  busy_until_ns_.store(now_ns + std::chrono::nanoseconds(kBusyFor).count());
  if (!sleeping_.load()) return;
  std::lock_guard<std::mutex> lock(nap_mutex_);
  nap_cv_.notify_one();
}

bool NetProxy::fence_clear(const Ring& r) const {
  return r.fence_peer == kProxyAllPeers ? r.outstanding_all == 0 : r.outstanding[r.fence_peer] == 0;
}

/// Reads and issues up to kBatch operations of ring `index`; true when it did anything.
bool NetProxy::serve(Ring& r, uint32_t index) {
  bool work = false;
  for (int n = 0; n < kBatch; ++n) {
    if (r.fenced) {
      if (!fence_clear(r)) break;
      r.fenced = false;
      r.reader.complete(r.fence_ticket);
      completed_.fetch_add(1, std::memory_order_relaxed);
      work = true;
    }
    ProxyRequest q{};
    uint64_t ticket = 0;
    bool bad_op = false;
    if (!r.reader.next(&q, &ticket, &bad_op)) {
      r.reader.publish_tail(true);  // producers wait for room only as long as the proxy reads
      break;
    }
    work = true;
    if (bad_op) {
      char msg[160];
      std::snprintf(msg, sizeof(msg),
                    "network proxy: ring %u, ticket %" PRIu64 ": unknown operation code", index,
                    ticket);
      fail(GICL_INTERNAL_ERROR, msg);
      return true;
    }
    if (const Status s = issue(index, ticket, q); !s.ok()) {
      fail_posting(s, q, index, ticket);
      return true;
    }
  }
  return work;
}

Status NetProxy::check_request(const ProxyRequest& q, uint32_t ring, uint64_t ticket) const {
  const char* what = op_name(q.op);
  if (q.op == ProxyOp::kFence && q.peer == kProxyAllPeers) return GICL_SUCCESS;
  if (q.peer >= static_cast<uint32_t>(nranks_))
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "network proxy: ring %u, ticket %" PRIu64 ": %s to peer %u of %d ranks", ring,
                     ticket, what, q.peer, nranks_);
  const uint64_t peer_bytes = args_.heap.keys[q.peer].bytes;
  const uint32_t inline_max = args_.delivery->inline_max();
  if (q.inlined && (q.op == ProxyOp::kGet || q.bytes == 0 || q.bytes > inline_max))
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "network proxy: ring %u, ticket %" PRIu64 ": %s of %" PRIu64
                     " B to peer %u with its bytes in the request: this path carries at most %u",
                     ring, ticket, what, q.bytes, q.peer, inline_max);
  if (has_transfer(q.op)) {
    const bool get = q.op == ProxyOp::kGet;
    const uint64_t local = get ? q.dst : q.src, remote = get ? q.src : q.dst;
    if ((!q.inlined && !fits(local, q.bytes, args_.heap.bytes)) ||
        !fits(remote, q.bytes, peer_bytes))
      return GICL_FAIL(GICL_INVALID_ARGUMENT,
                       "network proxy: ring %u, ticket %" PRIu64 ": %s of %" PRIu64
                       " B to peer %u: local offset %" PRIu64 " or peer offset %" PRIu64
                       " outside the heap (%zu B here, %" PRIu64 " B at the peer)",
                       ring, ticket, what, q.bytes, q.peer, local, remote, args_.heap.bytes,
                       peer_bytes);
  }
  const bool fetch = q.op == ProxyOp::kFetch;
  if ((q.op == ProxyOp::kAtomic || fetch) &&
      ((q.bytes != 4 && q.bytes != 8) ||
       static_cast<uint32_t>(q.atomic) >= (fetch ? kProxyFetchCount : kProxyAtomicCount) ||
       q.signal % q.bytes != 0 || !fits(q.signal, q.bytes, peer_bytes)))
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "network proxy: ring %u, ticket %" PRIu64 ": %s %s of %" PRIu64
                     " B to peer %u: word offset %" PRIu64
                     " is not an aligned word inside the peer's heap (%" PRIu64 " B)",
                     ring, ticket, what, atomic_name(q.atomic), q.bytes, q.peer, q.signal,
                     peer_bytes);
  if (has_signal(q.op) && (q.signal % 8 != 0 || !fits(q.signal, 8, peer_bytes)))
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "network proxy: ring %u, ticket %" PRIu64
                     ": %s to peer %u: signal offset %" PRIu64
                     " is not an aligned word inside the peer's heap (%" PRIu64 " B)",
                     ring, ticket, what, q.peer, q.signal, peer_bytes);
  return GICL_SUCCESS;
}

uint32_t NetProxy::new_op(uint32_t ring, uint64_t ticket, const ProxyRequest& q) {
  uint32_t cookie;
  if (!free_ops_.empty()) {
    cookie = free_ops_.back();
    free_ops_.pop_back();
  } else {
    cookie = static_cast<uint32_t>(ops_.size());
    ops_.emplace_back();
  }
  ops_[cookie] = Op{ring, ticket, q};
  Ring& r = rings_[ring];
  ++r.outstanding[q.peer];
  ++r.outstanding_all;
  return cookie;
}

Status NetProxy::issue(uint32_t ring, uint64_t ticket, const ProxyRequest& q) {
  Ring& r = rings_[ring];
  GICL_CHECK(check_request(q, ring, ticket));
  switch (q.op) {
    case ProxyOp::kNop:
      r.reader.complete(ticket);
      completed_.fetch_add(1, std::memory_order_relaxed);
      return GICL_SUCCESS;
    case ProxyOp::kFence:
      r.fenced = true;
      r.fence_peer = q.peer;
      r.fence_ticket = ticket;
      return GICL_SUCCESS;  // serve() completes it once clear
    default: {
      Delivery& d = *args_.delivery;
      const uint64_t before = d.issued();
      const Status s = d.start(new_op(ring, ticket, q), q);
      issued_.fetch_add(d.issued() - before, std::memory_order_relaxed);
      finish_completed();  // an empty put completes at once
      return s;
    }
  }
}

void NetProxy::finish_completed() {
  for (uint32_t cookie : args_.delivery->completed()) {
    Op& o = ops_[cookie];
    Ring& r = rings_[o.ring];
    if (o.req.op == ProxyOp::kFetch) {
      // The value first; the seq's release store publishes it to the waiting producer.
      ProxyResult& slot = r.view.results[o.req.result & (r.view.results_size - 1)];
      __atomic_store_n(&slot.value, args_.delivery->answer(cookie), __ATOMIC_RELAXED);
      __atomic_store_n(&slot.seq, o.req.result + 1, __ATOMIC_RELEASE);
    }
    --r.outstanding[o.req.peer];
    --r.outstanding_all;
    r.reader.complete(o.ticket);
    completed_.fetch_add(1, std::memory_order_relaxed);
    free_ops_.push_back(cookie);
  }
  args_.delivery->completed().clear();
}

/// Progresses the delivery and the transport and handles what completed; true when anything did.
/// The delivery goes first: what the rings just gave is staged and posted before the transport's
/// poll, which on socket providers is a system call or more (2.6 us of a signal's hop on 1 x H200
/// over tcp;ofi_rxm when the poll went first). What the events start waits for the next turn,
/// which follows the rings' next read.
bool NetProxy::poll() {
  Delivery& d = *args_.delivery;
  const uint64_t before = d.issued();
  bool work = false;
  Status s = d.progress(&work);
  net::Event ev[64];
  int n = 0;
  if (s.ok()) {
    if (const Status t = args_.transport->poll(ev, 64, &n); !t.ok()) {
      fail(t.code(), last_error(), true);
      return true;
    }
  }
  for (int i = 0; i < n && s.ok(); ++i) s = d.on_event(ev[i]);
  work |= n > 0;
  issued_.fetch_add(d.issued() - before, std::memory_order_relaxed);
  if (!s.ok()) {
    const uint32_t cookie = d.failed_op();
    if (cookie == Delivery::kNoOp) {
      fail(s.code(), std::string("network proxy: ") + last_error());
    } else {
      char head[96];
      std::snprintf(head, sizeof(head),
                    "network proxy (ring %u, ticket %" PRIu64 "): ", ops_[cookie].ring,
                    ops_[cookie].ticket);
      fail(s.code(), head + std::string(last_error()));
    }
    return true;
  }
  finish_completed();
  return work;
}

}  // namespace gicl::proxy
