// SPDX-License-Identifier: Apache-2.0
// Host stand-ins for a request ring and its GPU producers, for the tests and the network
// benchmarks that run without a GPU (header only, not part of the library): the ring's memory in
// ordinary host memory, and proxy_post's memory policy with host atomics and a deadline.
#pragma once

#include <chrono>
#include <thread>
#include <vector>

#include "gicl/device/detail/proxy_ring.h"
#include "proxy/net_proxy.hpp"
#include "proxy/ring_reader.hpp"

namespace gicl::proxy {

/// Pinned-memory stand-in: a zeroed ring with its counters, as the communicator allocates it.
struct HostRing {
  explicit HostRing(uint32_t size) : slots(size), results(size), turns(size) {
    ring.slots = slots.data();
    ring.head = &head;
    ring.tail_cache = &tail_cache;
    ring.tail = &tail;
    ring.done = &done;
    ring.failed = &failed;
    ring.size = size;
    ring.version = kProxyRingVersion;
    ring.results = results.data();
    ring.result_next = &result_next;
    ring.result_turns = turns.data();
    ring.results_size = size;
  }
  HostRing(const HostRing&) = delete;  // the ring points into its own members
  HostRing& operator=(const HostRing&) = delete;
  RingReader reader() { return RingReader(slots.data(), ring.size, &tail, &done); }
  RingView view() {
    return RingView{slots.data(), ring.size, &tail, &done, &failed, results.data(), ring.size};
  }
  /// What quiet does: every ticket taken so far completed, or false at the deadline.
  bool quiet(std::chrono::milliseconds patience = std::chrono::milliseconds(30000)) {
    const uint64_t mark = __atomic_load_n(&head, __ATOMIC_ACQUIRE);
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < mark) {
      if (__atomic_load_n(&failed, __ATOMIC_ACQUIRE) != 0 ||
          std::chrono::steady_clock::now() > deadline)
        return false;
      std::this_thread::yield();
    }
    return true;
  }

  std::vector<ProxySlot> slots;
  unsigned long long head = 0;
  unsigned long long tail_cache = 0;
  uint64_t tail = 0;
  uint64_t done = 0;
  uint32_t failed = 0;
  std::vector<ProxyResult> results;
  unsigned long long result_next = 0;
  std::vector<unsigned long long> turns;
  ProxyRing ring{};
};

/// The host producers' memory policy: what the device policy does with atomics and system-scope
/// loads, with std::this_thread::yield instead of __nanosleep and a deadline.
struct HostMem {
  std::chrono::milliseconds patience{5000};
  uint64_t take(unsigned long long* head, uint32_t n) {
    return __atomic_fetch_add(head, n, __ATOMIC_RELAXED);
  }
  bool room(const ProxyRing& q, uint64_t first, uint32_t n) {
    const uint64_t need = first + n;  // every slot below need - size consumed
    if (need <= q.size) return true;
    const auto deadline = std::chrono::steady_clock::now() + patience;
    for (;;) {
      const uint64_t seen = __atomic_load_n(q.tail_cache, __ATOMIC_RELAXED);
      if (need - q.size <= seen) return true;
      const uint64_t tail = __atomic_load_n(const_cast<uint64_t*>(q.tail), __ATOMIC_ACQUIRE);
      if (need - q.size <= tail) {
        unsigned long long cur = seen;
        while (cur < tail && !__atomic_compare_exchange_n(q.tail_cache, &cur, tail, true,
                                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        }
        return true;
      }
      if (__atomic_load_n(const_cast<uint32_t*>(q.failed), __ATOMIC_ACQUIRE) != 0 ||
          std::chrono::steady_clock::now() > deadline)
        return false;
      std::this_thread::yield();
    }
  }
  void store(uint64_t* word, uint64_t value) { __atomic_store_n(word, value, __ATOMIC_RELEASE); }
  // proxy_result_take / proxy_result_read.
  bool turn(unsigned long long* word, uint64_t lap) {
    return wait([&] { return __atomic_load_n(word, __ATOMIC_ACQUIRE) == lap; });
  }
  bool answer(const ProxyResult* slot, uint64_t seq, uint64_t* value) {
    if (!wait([&] { return __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) == seq; })) return false;
    *value = __atomic_load_n(&slot->value, __ATOMIC_RELAXED);
    return true;
  }
  void release(unsigned long long* word, uint64_t lap) {
    __atomic_store_n(word, lap, __ATOMIC_RELEASE);
  }
  template <typename Pred>
  bool wait(Pred&& ready) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (!ready()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }
};

/// Posts one operation from a host thread; ~0 when no room came before the deadline.
inline uint64_t host_put(HostRing& r, HostMem& m, ProxyOp op, uint32_t peer, uint64_t dst,
                         uint64_t src, uint64_t bytes) {
  uint64_t w[2 * kProxyMaxSlots];
  return proxy_post(r.ring, w, proxy_encode_transfer(w, op, peer, dst, src, bytes), m);
}
inline uint64_t host_signal(HostRing& r, HostMem& m, bool add, uint32_t peer, uint64_t signal,
                            uint64_t value) {
  uint64_t w[2 * kProxyMaxSlots];
  const uint32_t n =
      proxy_encode_signal(w, add ? ProxyOp::kSignalAdd : ProxyOp::kSignalSet, peer, signal, value);
  return proxy_post(r.ring, w, n, m);
}
inline uint64_t host_atomic(HostRing& r, HostMem& m, ProxyAtomic kind, uint32_t width,
                            uint32_t peer, uint64_t word, uint64_t value) {
  uint64_t w[2 * kProxyMaxSlots];
  const uint32_t n = proxy_encode_atomic(w, peer, kind, width, word, value);
  return proxy_post(r.ring, w, n, m);
}
inline uint64_t host_put_signal(HostRing& r, HostMem& m, bool add, uint32_t peer, uint64_t dst,
                                uint64_t src, uint64_t bytes, uint64_t signal, uint64_t value) {
  uint64_t w[2 * kProxyMaxSlots];
  const uint32_t n = proxy_encode_put_signal(w, add, peer, dst, src, bytes, signal, value);
  return proxy_post(r.ring, w, n, m);
}
inline uint64_t host_fifo(HostRing& r, HostMem& m, ProxyOp op, uint32_t peer, uint32_t index,
                          uint64_t bytes) {
  uint64_t w[2];
  return proxy_post(r.ring, w, proxy_encode_fifo(w, op, peer, index, bytes), m);
}
/// A fetching atomic from a host thread: its answer (the word's old value) in `*old`; false when
/// it was not posted or answered before the deadline.
inline bool host_fetch(HostRing& r, HostMem& m, ProxyAtomic kind, uint32_t width, uint32_t peer,
                       uint64_t word, uint64_t value, uint64_t compare, uint64_t* old) {
  const uint64_t i = proxy_result_take(r.ring, m);
  if (i == ~0ull) return false;
  uint64_t w[2 * kProxyMaxSlots];
  const uint32_t n = proxy_encode_fetch(w, peer, kind, width, word, value, compare, i);
  if (proxy_post(r.ring, w, n, m) == ~0ull) {
    m.release(r.ring.result_turns + (i & (r.ring.results_size - 1)), i / r.ring.results_size + 1);
    return false;
  }
  return proxy_result_read(r.ring, m, i, old);
}
inline uint64_t host_fence(HostRing& r, HostMem& m, uint32_t peer) {
  const uint64_t w[2] = {proxy_word0(ProxyOp::kFence, false, peer, 0), 0};
  return proxy_post(r.ring, w, 1, m);
}

}  // namespace gicl::proxy
