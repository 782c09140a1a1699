// SPDX-License-Identifier: Apache-2.0
// The network proxy of one GPU: a host thread that reads the request rings kernels post into
// (gicl/device/detail/proxy_ring.h), issues each operation to the transport, progresses the
// transport (which is also what lands peers' data here: manual progress), and completes
// operations back into the rings' `done` words that quiet waits for.
//
// How an operation moves is its delivery's (proxy/delivery.hpp): RMA between registered heaps,
// or chunks through staging buffers applied by the target's proxy. Either completes it only once
// its effect is in the target's heap, and a put's signal only after its payload. The proxy
// itself keeps the rings' order rules:
// - fence: later operations of the same ring to that peer (every peer for kProxyAllPeers) are
//   issued only after every earlier one of the ring to it has completed. The ring is read in
//   order, so a fence holds the whole ring until then.
// Operations complete in any order; a ring's `done` moves past each one completed with all
// before it. A fetching operation's answer is written into its ring's result slot (value, then
// seq) when it completes.
//
// A failed operation, a refused post or a bad request fails the proxy: it records the first
// error (naming the peer), sets every ring's `failed` word, so producers and quiet stop waiting
// and report GICL_DEVICE_ERROR_PROXY, and stops.
//
// Idle, the thread polls busily for kBusyFor after the last work, then sleeps between polls,
// doubling from 1 us to kMaxSleep: a request posted after a long pause waits up to that long,
// unless the host said it was coming (kick: a launch that will post was enqueued), which ends a
// sleep at once and keeps the thread busy for kBusyFor.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.hpp"
#include "gicl/device/detail/proxy_ring.h"
#include "net/transport.hpp"
#include "proxy/delivery.hpp"
#include "proxy/ring_reader.hpp"

namespace gicl::proxy {

/// One request ring as the proxy sees it (host pointers into its pinned memory).
struct RingView {
  const ProxySlot* slots = nullptr;
  uint32_t size = 0;
  uint64_t* tail = nullptr;
  uint64_t* done = nullptr;
  uint32_t* failed = nullptr;
  ProxyResult* results = nullptr;  // the fetching operations' answers
  uint32_t results_size = 0;
};

/// The longest idle sleep between polls (NetProxy::kMaxSleep).
inline constexpr std::chrono::microseconds kProxyMaxSleep{200};

struct NetProxyArgs {
  int rank = 0;
  net::Transport* transport = nullptr;  // connected; from start on, driven by the proxy alone
  HeapView heap;                        // bounds every request
  std::unique_ptr<Delivery> delivery;   // null: direct RMA on heap.region
  std::vector<RingView> rings;
  int cpu = -1;     // core to pin the thread to (the GPU's NUMA node); -1: not pinned
  int device = -1;  // CUDA device the thread makes current (the staged path's copies); -1: none
  // Idle sleeps: the first, then doubling up to the longest (tests make them long).
  std::chrono::microseconds first_sleep{1};
  std::chrono::microseconds max_sleep = kProxyMaxSleep;
};

struct NetProxyStats {
  uint64_t issued = 0;     // transport operations posted
  uint64_t completed = 0;  // ring operations completed
  uint64_t sleeps = 0;     // idle sleeps
};

class NetProxy {
 public:
  static constexpr auto kBusyFor = std::chrono::microseconds(500);
  static constexpr auto kMaxSleep = kProxyMaxSleep;
  static constexpr int kBatch = 64;  // operations read from one ring before the next is served

  static Status start(NetProxyArgs args, std::unique_ptr<NetProxy>* out);
  /// Stops the thread. Operations in flight are abandoned with the transport.
  ~NetProxy();
  NetProxy(const NetProxy&) = delete;
  NetProxy& operator=(const NetProxy&) = delete;

  /// A launch that will post requests was enqueued: ends an idle sleep now and polls busily for
  /// kBusyFor. Any thread; a few atomic operations, and a wake-up only while the proxy sleeps.
  void kick();

  /// GICL_SUCCESS while healthy; else the first failure's code, its message in `why`.
  gicl_result_t error(std::string* why) const;
  NetProxyStats stats() const;

 private:
  struct Op {
    uint32_t ring = 0;
    uint64_t ticket = 0;
    ProxyRequest req{};
  };
  struct Ring {
    RingView view;
    RingReader reader;
    std::vector<uint32_t> outstanding;  // [peer]: this ring's operations in flight to it
    uint64_t outstanding_all = 0;
    bool fenced = false;  // a fence waits: reading stops until it is satisfied
    uint32_t fence_peer = 0;
    uint64_t fence_ticket = 0;
  };

  explicit NetProxy(NetProxyArgs args);
  void run();
  bool serve(Ring& r, uint32_t index);
  bool fence_clear(const Ring& r) const;
  Status issue(uint32_t ring, uint64_t ticket, const ProxyRequest& q);
  void finish_completed();
  Status check_request(const ProxyRequest& q, uint32_t ring, uint64_t ticket) const;
  bool poll();
  /// Sleeps for at most `nap` unless a kick or stop comes; not at all when a kick came after
  /// the loop's check at `now_ns` (nanoseconds of the steady clock).
  void nap_for(std::chrono::microseconds nap, int64_t now_ns);

  uint32_t new_op(uint32_t ring, uint64_t ticket, const ProxyRequest& q);
  /// Records the first failure (`logged`: GICL_FAIL already logged it) and tells every ring.
  void fail(gicl_result_t code, const std::string& why, bool logged = false);
  /// fail() for a post the transport (or the checks) refused: the message names the operation.
  void fail_posting(Status s, const ProxyRequest& q, uint32_t ring, uint64_t ticket);

  NetProxyArgs args_;
  int nranks_;
  std::vector<Ring> rings_;
  std::vector<Op> ops_;  // by cookie
  std::vector<uint32_t> free_ops_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  // kick(): the steady clock's nanoseconds until which the thread stays busy, and the sleep a
  // kick ends. A kicker stores busy_until_ns_ and then reads sleeping_; the thread stores
  // sleeping_ and then reads busy_until_ns_ (both sequentially consistent), so one of them sees
  // the other: no kick is lost in a sleep that begins as it comes.
  std::atomic<int64_t> busy_until_ns_{0};
  std::atomic<bool> sleeping_{false};
  std::mutex nap_mutex_;
  std::condition_variable nap_cv_;
  std::atomic<bool> failed_{false};
  mutable std::mutex error_mutex_;
  gicl_result_t error_code_ = GICL_SUCCESS;
  std::string error_;
  std::atomic<uint64_t> issued_{0}, completed_{0}, sleeps_{0};
};

}  // namespace gicl::proxy
