// SPDX-License-Identifier: Apache-2.0
#include "net/endpoints/multi_endpoint.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "net/op_checks.hpp"

namespace gicl::net {
namespace {

/// A flush sent to every endpoint: the caller's cookie and peer, the parts not yet done, the
/// first failure.
struct FlushParts {
  uint64_t cookie;
  int peer;
  std::atomic<int> left;
  std::atomic<int> status{GICL_SUCCESS};
};
/// What an endpoint remembers of an operation it posted under its own id: the caller's cookie,
/// or the flush it is a part of.
struct Posted {
  uint64_t cookie = 0;
  FlushParts* flush = nullptr;
};

class MultiEndpointTransport;

/// One registration per endpoint; endpoint k's part is released on endpoint k's thread.
class MultiEndpointRegion final : public Region {
 public:
  MultiEndpointRegion(MultiEndpointTransport* owner, std::vector<std::unique_ptr<Region>> parts);
  ~MultiEndpointRegion() override;
  const Region& part(int k) const { return *parts_[k]; }

 private:
  MultiEndpointTransport* owner_;
  std::vector<std::unique_ptr<Region>> parts_;
};

class MultiEndpointTransport final : public Transport {
 public:
  MultiEndpointTransport(std::vector<std::unique_ptr<Transport>> endpoints, int nranks,
                         int max_inflight)
      : nranks_(nranks), max_inflight_(max_inflight) {
    // The endpoint threads start from the proxy's thread, which is pinned to one core: they take
    // the opening thread's cores instead, or they would share the proxy's.
    have_cpus_ = sched_getaffinity(0, sizeof(cpus_), &cpus_) == 0;
    for (auto& t : endpoints) {
      auto r = std::make_unique<Endpoint>();
      r->t = std::move(t);
      endpoints_.push_back(std::move(r));
    }
  }

  ~MultiEndpointTransport() override {
    for (auto& r : endpoints_) {
      {
        std::lock_guard<std::mutex> g(r->mu);  // a napping thread sees stop_ or the notify
        stop_ = true;
      }
      r->wake.notify_one();
    }
    for (auto& r : endpoints_)
      if (r->running) (void)pthread_join(r->thread, nullptr);
    for (auto& r : endpoints_)
      for (auto& [id, p] : r->posted)
        if (p.flush != nullptr && p.flush->left.fetch_sub(1) == 1) delete p.flush;
  }

  Backend backend() const override { return endpoints_[0]->t->backend(); }
  std::string provider() const override { return endpoints_[0]->t->provider(); }
  /// Endpoint 0's description, then each other endpoint's that differs (another rail's NIC).
  std::string describe() const override {
    std::string s = endpoints_[0]->t->describe();
    std::vector<std::string> seen{s};
    for (const auto& e : endpoints_) {
      std::string d = e->t->describe();
      if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;
      seen.push_back(d);
      s += " + " + d;
    }
    return s + ", " + std::to_string(endpoints_.size()) + " endpoints";
  }
  Caps caps() const override { return endpoints_[0]->t->caps(); }
  int endpoints() const override { return static_cast<int>(endpoints_.size()); }
  Transport& endpoint(int k) override { return *endpoints_[k]->t; }

  size_t address_bytes() const override {
    size_t n = 0;
    for (const auto& r : endpoints_) n += r->t->address_bytes();
    return n;
  }
  Status local_address(void* out) const override {
    auto* p = static_cast<uint8_t*>(out);
    for (const auto& r : endpoints_) {
      GICL_CHECK(r->t->local_address(p));
      p += r->t->address_bytes();
    }
    return GICL_SUCCESS;
  }
  Status connect(const void* all, size_t stride) override {
    const auto* p = static_cast<const uint8_t*>(all);
    for (const auto& r : endpoints_) {
      GICL_CHECK(r->t->connect(p, stride));
      p += r->t->address_bytes();
    }
    connected_ = true;
    return GICL_SUCCESS;
  }

  Status register_memory(void* base, size_t bytes, MemKind kind,
                         std::unique_ptr<Region>* out) override {
    std::vector<std::unique_ptr<Region>> parts(endpoints_.size());
    for (size_t k = 0; k < endpoints_.size(); ++k) {
      Status s = on_endpoint(static_cast<int>(k), [&](Transport& t) {
        return t.register_memory(base, bytes, kind, &parts[k]);
      });
      if (!s.ok()) {
        release(parts);
        return s;
      }
      const RemoteKey &a = parts[0]->remote_key(), &b = parts[k]->remote_key();
      if (a.key != b.key || a.addr != b.addr) {
        release(parts);
        return GICL_FAIL(
            GICL_UNSUPPORTED,
            "net endpoints: %s gave endpoint %zu key 0x%llx at 0x%llx and endpoint 0 key 0x%llx "
            "at 0x%llx: its keys differ per endpoint, so GICL_NET_ENDPOINTS must be 1",
            provider().c_str(), k, static_cast<unsigned long long>(b.key),
            static_cast<unsigned long long>(b.addr), static_cast<unsigned long long>(a.key),
            static_cast<unsigned long long>(a.addr));
      }
    }
    *out = std::make_unique<MultiEndpointRegion>(this, std::move(parts));
    return GICL_SUCCESS;
  }

  /// Releases each endpoint's part on the thread that drives that endpoint.
  void release(std::vector<std::unique_ptr<Region>>& parts) {
    for (size_t k = 0; k < parts.size(); ++k) {
      if (!parts[k]) continue;
      (void)on_endpoint(static_cast<int>(k), [&](Transport&) {
        parts[k].reset();
        return Status(GICL_SUCCESS);
      });
    }
  }

  Status write(int peer, const Region& src, const void* src_ptr, const RemoteKey& dst,
               uint64_t dst_offset, size_t bytes, uint64_t cookie) override {
    GICL_CHECK(check_rma("write", peer, src, src_ptr, dst, dst_offset, bytes));
    const int k = pick(bytes);
    const Region& part = static_cast<const MultiEndpointRegion&>(src).part(k);
    return post(k, cookie, nullptr, [=, &part](Transport& t, uint64_t id) {
      return t.write(peer, part, src_ptr, dst, dst_offset, bytes, id);
    });
  }
  Status write_imm(int peer, const Region& src, const void* src_ptr, const RemoteKey& dst,
                   uint64_t dst_offset, size_t bytes, uint64_t imm, uint64_t cookie,
                   Completion when) override {
    GICL_CHECK(check_rma("write_imm", peer, src, src_ptr, dst, dst_offset, bytes));
    const int k = pick(bytes);
    const Region& part = static_cast<const MultiEndpointRegion&>(src).part(k);
    return post(k, cookie, nullptr, [=, &part](Transport& t, uint64_t id) {
      return t.write_imm(peer, part, src_ptr, dst, dst_offset, bytes, imm, id, when);
    });
  }
  Status read(int peer, const Region& dst, void* dst_ptr, const RemoteKey& src, uint64_t src_offset,
              size_t bytes, uint64_t cookie) override {
    GICL_CHECK(check_rma("read", peer, dst, dst_ptr, src, src_offset, bytes));
    const int k = pick(bytes);
    const Region& part = static_cast<const MultiEndpointRegion&>(dst).part(k);
    return post(k, cookie, nullptr, [=, &part](Transport& t, uint64_t id) {
      return t.read(peer, part, dst_ptr, src, src_offset, bytes, id);
    });
  }
  Status atomic(int peer, AtomicOp op, const RemoteKey& dst, uint64_t dst_offset, uint64_t operand,
                uint64_t compare, uint64_t cookie) override {
    return post(0, cookie, nullptr, [=](Transport& t, uint64_t id) {
      return t.atomic(peer, op, dst, dst_offset, operand, compare, id);
    });
  }
  /// A flush on every endpoint; its one kDone follows the last of them.
  Status flush(int peer, uint64_t cookie) override {
    GICL_CHECK(check_peer("flush", peer, nranks_));
    auto* f = new FlushParts{cookie, peer, {static_cast<int>(endpoints_.size())}};
    for (size_t k = 0; k < endpoints_.size(); ++k) {
      // Only the first part counts in inflight(): the caller posted one operation.
      GICL_CHECK(post(
          static_cast<int>(k), cookie, f,
          [=](Transport& t, uint64_t id) { return t.flush(peer, id); }, k == 0));
    }
    return GICL_SUCCESS;
  }

  Status poll(Event* events, int max, int* count) override {
    *count = 0;
    GICL_CHECK(start());
    GICL_CHECK(poll_endpoint0());
    GICL_CHECK(failure());
    std::lock_guard<std::mutex> g(events_mu_);
    while (*count < max && !events_.empty()) {
      events[(*count)++] = events_.front();
      events_.pop_front();
    }
    return GICL_SUCCESS;
  }
  int inflight() const override { return inflight_.load(std::memory_order_relaxed); }

 private:
  struct Endpoint {
    std::unique_ptr<Transport> t;
    MultiEndpointTransport* owner = nullptr;
    int index = 0;
    pthread_t thread{};
    bool running = false;
    std::mutex mu;
    std::condition_variable wake;                        // a hand-over to a napping thread
    std::vector<std::function<void(Transport&)>> queue;  // guarded by mu
    // Touched by the thread that drives the endpoint only.
    uint64_t next_id = 1;
    std::unordered_map<uint64_t, Posted> posted;
    bool dead = false;
    std::atomic<int> outstanding{0};  // posted here, kDone not yet seen
  };
  using Op = std::function<Status(Transport&, uint64_t)>;

  /// What an endpoint's backend would refuse, refused here before the hand-over: an endpoint
  /// thread's error fails the whole transport.
  Status check_rma(const char* op, int peer, const Region& local, const void* p,
                   const RemoteKey& key, uint64_t off, size_t bytes) const {
    GICL_CHECK(check_peer(op, peer, nranks_));
    GICL_ARG_CHECK(connected_, "net %s: the transport is not connected yet", op);
    GICL_ARG_CHECK(dynamic_cast<const MultiEndpointRegion*>(&local) != nullptr,
                   "net %s to rank %d: the local region is not this transport's", op, peer);
    GICL_CHECK(check_local(op, "local buffer", local, p, bytes));
    GICL_CHECK(check_remote(op, peer, backend(), key, off, bytes));
    const size_t most = caps().max_write;
    GICL_ARG_CHECK(most == 0 || bytes <= most,
                   "net %s to rank %d: %zu bytes exceed %s's largest message (%zu bytes)", op, peer,
                   bytes, provider().c_str(), most);
    return GICL_SUCCESS;
  }

  static constexpr auto kBusyFor = std::chrono::microseconds(500);
  static constexpr auto kMaxNap = std::chrono::microseconds(200);

  /// Endpoint 0 while it has fewer than kSpillAt operations outstanding, else the endpoint with
  /// the fewest: a hand-over to another endpoint's thread costs latency that only a deep queue
  /// hides.
  int pick(size_t bytes) {
    if (bytes < kEndpointSpreadFrom ||
        endpoints_[0]->outstanding.load(std::memory_order_relaxed) < kSpillAt)
      return 0;
    int best = 0, least = endpoints_[0]->outstanding.load(std::memory_order_relaxed);
    for (size_t k = 1; k < endpoints_.size(); ++k) {
      const int o = endpoints_[k]->outstanding.load(std::memory_order_relaxed);
      if (o < least) best = static_cast<int>(k), least = o;
    }
    return best;
  }

  /// Runs `fn` on the thread that drives endpoint k (this one for endpoint 0, before the threads
  /// start, or where its thread failed to start) and waits for it.
  Status on_endpoint(int k, const std::function<Status(Transport&)>& fn) {
    Endpoint& r = *endpoints_[k];
    if (k == 0 || !started_.load(std::memory_order_acquire) || !r.running) return fn(*r.t);
    std::promise<std::pair<gicl_result_t, std::string>> done;
    auto answer = done.get_future();
    {
      std::lock_guard<std::mutex> g(r.mu);
      r.queue.push_back([&](Transport& t) {
        const Status s = fn(t);
        done.set_value({s.code(), s.ok() ? std::string() : std::string(last_error())});
      });
    }
    r.wake.notify_one();
    const auto [code, message] = answer.get();
    return code == GICL_SUCCESS ? Status(GICL_SUCCESS) : relay(code, message.c_str());
  }

  /// Posts an operation on endpoint k under a endpoint-local id, remembered with the caller's
  /// cookie (or the flush it belongs to) until its kDone.
  Status post(int k, uint64_t cookie, FlushParts* flush, Op op, bool counts = true) {
    GICL_CHECK(start());
    GICL_CHECK(failure());
    while (inflight_.load(std::memory_order_relaxed) >= max_inflight_) {
      GICL_CHECK(poll_endpoint0());
      GICL_CHECK(failure());
      std::this_thread::yield();
    }
    if (counts) inflight_.fetch_add(1, std::memory_order_relaxed);
    Endpoint& r = *endpoints_[k];
    r.outstanding.fetch_add(1, std::memory_order_relaxed);
    if (k == 0) {
      const Status s = post_here(r, 0, cookie, flush, op);
      if (!s.ok() && counts) inflight_.fetch_sub(1, std::memory_order_relaxed);
      return s;
    }
    {
      std::lock_guard<std::mutex> g(r.mu);
      r.queue.push_back([this, &r, k, cookie, flush, op = std::move(op)](Transport&) {
        if (stop_.load(std::memory_order_relaxed)) return;  // the transport is going away
        if (!post_here(r, k, cookie, flush, op).ok()) fail_endpoint(r, k, last_error());
      });
    }
    r.wake.notify_one();
    return GICL_SUCCESS;
  }

  Status post_here(Endpoint& r, int k, uint64_t cookie, FlushParts* flush, const Op& op) {
    if (r.dead) return GICL_FAIL(GICL_REMOTE_ERROR, "net endpoint %d failed earlier", k);
    const uint64_t id = r.next_id++;
    r.posted[id] = Posted{cookie, flush};
    const Status s = op(*r.t, id);
    if (!s.ok()) {
      r.posted.erase(id);
      r.outstanding.fetch_sub(1, std::memory_order_relaxed);
    }
    return s;
  }

  /// Turns endpoint events into the caller's: its cookies back, one kDone per flush.
  void deliver(Endpoint& r, const Event* ev, int n) {
    std::lock_guard<std::mutex> g(events_mu_);
    for (int i = 0; i < n; ++i) {
      Event e = ev[i];
      if (e.kind == EventKind::kDone) {
        auto it = r.posted.find(e.cookie);
        if (it == r.posted.end()) continue;  // not ours: nothing posted it on this endpoint
        const Posted p = it->second;
        r.posted.erase(it);
        r.outstanding.fetch_sub(1, std::memory_order_relaxed);
        if (p.flush != nullptr) {
          if (e.status != GICL_SUCCESS) p.flush->status.store(e.status);
          if (p.flush->left.fetch_sub(1) != 1) continue;
          e.status = static_cast<gicl_result_t>(p.flush->status.load());
          e.peer = p.flush->peer;
          delete p.flush;
        }
        e.cookie = p.cookie;
        inflight_.fetch_sub(1, std::memory_order_relaxed);
      }
      events_.push_back(e);
    }
  }

  Status poll_endpoint0() {
    Endpoint& r = *endpoints_[0];
    Event ev[64];
    int n = 0;
    GICL_CHECK(r.t->poll(ev, 64, &n));
    if (n > 0) deliver(r, ev, n);
    return GICL_SUCCESS;
  }

  void fail_endpoint(Endpoint& r, int k, const char* why) {
    r.dead = true;
    std::lock_guard<std::mutex> g(events_mu_);
    if (failed_code_ != GICL_SUCCESS) return;
    failed_code_ = GICL_REMOTE_ERROR;
    failed_ = "net endpoint " + std::to_string(k) + ": " + why;
    failed_flag_.store(true, std::memory_order_release);
  }

  Status failure() {
    if (!failed_flag_.load(std::memory_order_acquire)) return GICL_SUCCESS;
    std::lock_guard<std::mutex> g(events_mu_);
    return relay(failed_code_, failed_.c_str());
  }

  /// The threads of endpoints 1..K-1: what the proxy handed over, then progress, until destroyed.
  /// They start on the first operation, from the proxy's thread, which is pinned to one core: they
  /// are born with the opening thread's cores less that one. A thread born on the pinned core and
  /// widened afterwards stays there beside the busy proxy and loses the core for a whole time
  /// slice: hand-overs of 0.8-0.9 ms on 2 ranks, which make a 1 MiB allreduce over 4 endpoints
  /// 2.4 x slower.
  Status start() {
    if (started_.load(std::memory_order_relaxed)) return GICL_SUCCESS;
    cpu_set_t mask = cpus_, mine;
    CPU_ZERO(&mine);
    if (have_cpus_ && CPU_COUNT(&cpus_) > 1 && sched_getaffinity(0, sizeof(mine), &mine) == 0 &&
        CPU_COUNT(&mine) == 1)
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &mine)) CPU_CLR(c, &mask);
    pthread_attr_t attr;
    if (const int rc = pthread_attr_init(&attr))
      return GICL_FAIL(GICL_SYSTEM_ERROR, "net endpoints: pthread_attr_init: %s",
                       std::strerror(rc));
    int rc = have_cpus_ ? pthread_attr_setaffinity_np(&attr, sizeof(mask), &mask) : 0;
    const char* what = "pthread_attr_setaffinity_np";
    for (size_t k = 1; rc == 0 && k < endpoints_.size(); ++k) {
      Endpoint& r = *endpoints_[k];
      r.owner = this;
      r.index = static_cast<int>(k);
      what = "pthread_create";
      rc = pthread_create(&r.thread, &attr, &MultiEndpointTransport::thread_main, &r);
      r.running = rc == 0;
      if (r.running) {
        // Named here, not by the thread itself, so that it has its name when the start returns
        // (top, gdb, tests); optional.
        char name[32];  // at most 15 characters take (pthread_setname_np)
        std::snprintf(name, sizeof(name), "gicl-ep%zu", k);
        (void)pthread_setname_np(r.thread, name);
      }
    }
    (void)pthread_attr_destroy(&attr);
    if (rc != 0) {
      // The transport is failed for good; the threads that did start are joined by the
      // destructor, and an endpoint without a thread is served by the caller (on_endpoint).
      std::lock_guard<std::mutex> g(events_mu_);
      failed_code_ = GICL_SYSTEM_ERROR;
      failed_ = std::string("net endpoints: ") + what + ": " + std::strerror(rc);
      failed_flag_.store(true, std::memory_order_release);
    }
    started_.store(true, std::memory_order_release);
    return failure();
  }

  static void* thread_main(void* arg) {
    auto* r = static_cast<Endpoint*>(arg);
    r->owner->drive(r->index);
    return nullptr;
  }

  /// Endpoint k's thread. Idle (nothing posted here outstanding, nothing handed over, no event)
  /// for kBusyFor, it naps between polls, doubling from 1 us to kMaxNap, and a hand-over wakes it:
  /// as the proxy thread does, so that an idle communicator does not spin a core per endpoint.
  void drive(int k) {
    Endpoint& r = *endpoints_[k];
    std::vector<std::function<void(Transport&)>> work;
    Event ev[64];
    auto last_work = std::chrono::steady_clock::now();
    auto nap = std::chrono::microseconds(0);
    while (!stop_.load(std::memory_order_relaxed)) {
      {
        std::lock_guard<std::mutex> g(r.mu);
        work.swap(r.queue);
      }
      for (auto& fn : work) fn(*r.t);
      int n = 0;
      if (!r.dead) {
        if (r.t->poll(ev, 64, &n).ok()) {
          if (n > 0) deliver(r, ev, n);
        } else {
          fail_endpoint(r, k, last_error());
        }
      }
      const auto now = std::chrono::steady_clock::now();
      const bool busy = !work.empty() || n > 0 || r.outstanding.load(std::memory_order_relaxed) > 0;
      work.clear();
      if (busy) {
        last_work = now;
        nap = std::chrono::microseconds(0);
        continue;
      }
      if (now - last_work < kBusyFor) {
        std::this_thread::yield();
        continue;
      }
      nap = std::min(kMaxNap, std::max(std::chrono::microseconds(1), nap * 2));
      std::unique_lock<std::mutex> g(r.mu);
      r.wake.wait_for(g, nap, [&] { return !r.queue.empty() || stop_.load(); });
    }
    // Answer what is still queued (a region released while the transport goes away).
    std::lock_guard<std::mutex> g(r.mu);
    for (auto& fn : r.queue) fn(*r.t);
    r.queue.clear();
  }

  const int nranks_;
  const int max_inflight_;
  bool connected_ = false;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::atomic<bool> started_{false};
  cpu_set_t cpus_{};
  bool have_cpus_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<int> inflight_{0};
  std::mutex events_mu_;
  std::deque<Event> events_;  // guarded by events_mu_
  gicl_result_t failed_code_ = GICL_SUCCESS;
  std::string failed_;
  std::atomic<bool> failed_flag_{false};
};

MultiEndpointRegion::MultiEndpointRegion(MultiEndpointTransport* owner,
                                         std::vector<std::unique_ptr<Region>> parts)
    : owner_(owner), parts_(std::move(parts)) {
  base_ = parts_[0]->base();
  bytes_ = parts_[0]->bytes();
  kind_ = parts_[0]->kind();
  key_ = parts_[0]->remote_key();
}

MultiEndpointRegion::~MultiEndpointRegion() {
  owner_->release(parts_);
}

}  // namespace

Status open_multi_endpoint(std::vector<std::unique_ptr<Transport>> endpoints, int nranks,
                           int max_inflight, std::unique_ptr<Transport>* out) {
  GICL_ARG_CHECK(endpoints.size() >= 2, "net endpoints: %zu endpoints (at least 2)",
                 endpoints.size());
  GICL_ARG_CHECK(max_inflight > 0, "net endpoints: max_inflight %d", max_inflight);
  GICL_ARG_CHECK(nranks > 0, "net endpoints: %d ranks", nranks);
  *out = std::make_unique<MultiEndpointTransport>(std::move(endpoints), nranks, max_inflight);
  return GICL_SUCCESS;
}

}  // namespace gicl::net
