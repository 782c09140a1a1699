// SPDX-License-Identifier: Apache-2.0
// Kernel side of the network proxy's request ring (detail/proxy_ring.h): post an operation from
// any thread, wait until the proxy has completed everything posted so far. Any number of threads
// of any number of blocks post into one ring at once.
#pragma once

#include "gicl/device/detail/proxy_ring.h"
#include "gicl/device/wait.cuh"

namespace gicl {

/// The device memory policy of proxy_post: tickets from one device-scope atomic, room from the
/// producers' shared cache of `tail` (device memory, cheap) before the proxy's copy (host memory,
/// a PCIe round trip), slots written with system-scope stores; and of the result slots (turns in
/// device memory, answers polled in host memory).
struct ProxyRingDeviceMem {
  dev::detail::Reporter r;
  uint32_t op;  // GICL_OP_* of the operation, for the report of a failed wait
  int peer;
  const volatile uint32_t* failed = nullptr;  // the ring's: ends turn() and answer() waits

  __device__ __forceinline__ uint64_t take(unsigned long long* head, uint32_t n) {
    return atomicAdd(head, static_cast<unsigned long long>(n));
  }
  __device__ __forceinline__ bool room(const ProxyRing& q, uint64_t first, uint32_t n) {
    const uint64_t need = first + n;
    if (need <= q.size) return true;
    const uint64_t floor = need - q.size;  // slots below it must have been consumed
    if (dev::detail::load_relaxed_sys(reinterpret_cast<const uint64_t*>(q.tail_cache)) >= floor)
      return true;
    dev::detail::Deadline deadline;
    for (uint32_t spin = 0;; ++spin) {
      const uint64_t tail = dev::detail::load_acquire_sys(tail_word(q));
      if (tail >= floor) {
        atomicMax(q.tail_cache, static_cast<unsigned long long>(tail));
        return true;
      }
      if ((spin & 255) != 255) {
        __nanosleep(128);  // a full ring drains at the proxy's pace; PCIe polls cost it
        continue;
      }
      if (*q.failed != 0)
        return dev::detail::report(r, GICL_DEVICE_ERROR_PROXY, op, peer, tail_word(q), floor, tail,
                                   GICL_CMP_AT_LEAST);
      if (deadline.expired(r, op, peer, tail_word(q), floor, tail, GICL_CMP_AT_LEAST)) return false;
    }
  }
  // The proxy's words are volatile in ProxyRing (host code reads them); these loads are atomic.
  static __device__ __forceinline__ const uint64_t* tail_word(const ProxyRing& q) {
    return const_cast<const uint64_t*>(q.tail);
  }
  __device__ __forceinline__ void store(uint64_t* word, uint64_t value) {
    dev::detail::store_relaxed_sys(word, value);
  }
  // Result slots (proxy_result_take / proxy_result_read): turns in device memory, answers in
  // host memory; both waits end at the deadline or when the proxy has failed.
  __device__ __forceinline__ bool turn(unsigned long long* word, uint64_t lap) {
    const uint64_t* w = reinterpret_cast<const uint64_t*>(word);
    return poll(w, lap, [&] { return dev::detail::load_acquire_sys(w) == lap; });
  }
  __device__ __forceinline__ bool answer(const ProxyResult* slot, uint64_t seq, uint64_t* value) {
    if (!poll(&slot->seq, seq, [&] { return dev::detail::load_acquire_sys(&slot->seq) == seq; }))
      return false;
    *value = dev::detail::load_relaxed_sys(&slot->value);  // ordered by the acquire of seq
    return true;
  }
  __device__ __forceinline__ void release(unsigned long long* word, uint64_t lap) {
    dev::detail::fence_system();  // the answer was read before the slot is handed on
    atomicExch(word, static_cast<unsigned long long>(lap));
  }
  template <typename Ready>
  __device__ __forceinline__ bool poll(const uint64_t* word, uint64_t want, Ready&& ready) {
    dev::detail::Deadline deadline;
    for (uint32_t spin = 0;; ++spin) {
      if (ready()) return true;
      if ((spin & 255) != 255) continue;
      const uint64_t seen = dev::detail::load_relaxed_sys(word);
      if (failed != nullptr && *failed != 0)
        return dev::detail::report(r, GICL_DEVICE_ERROR_PROXY, op, peer, word, want, seen,
                                   GICL_CMP_EQ);
      if (deadline.expired(r, op, peer, word, want, seen, GICL_CMP_EQ)) return false;
    }
  }
};

/// Posts one operation without a fence, for a request that carries everything the proxy needs (a
/// signal, an atomic, a value stored or fetched, an inline put's bytes): nothing of this rank's
/// memory is read on its behalf, and the operation is relaxed, as over NVLink. A system-scope
/// fence per post is the dominant cost of a small operation's hop (about 2 us of a signal's).
/// Returns the first ticket, or ~0 when the ring stayed full past GICL_WAIT_TIMEOUT or the proxy
/// failed (reported; the communicator is then in error).
__device__ __noinline__ inline uint64_t proxy_post_relaxed(dev::detail::Reporter r,
                                                           const ProxyRing& q, const uint64_t* w,
                                                           uint32_t n, uint32_t op, int peer) {
  ProxyRingDeviceMem m{r, op, peer};
  return proxy_post(q, w, n, m);
}

/// Posts one operation (payload words `w` from a proxy_encode_* function, `n` slots) after a
/// system-scope fence: the calling thread's earlier writes (a put's source) are visible
/// system-wide before any of the operation's words.
__device__ __noinline__ inline uint64_t proxy_submit(dev::detail::Reporter r, const ProxyRing& q,
                                                     const uint64_t* w, uint32_t n, uint32_t op,
                                                     int peer) {
  dev::detail::fence_system();
  return proxy_post_relaxed(r, q, w, n, op, peer);
}

/// Waits until the proxy has completed every operation whose first ticket is below `mark` (use
/// the ring's head as read after the caller's last post: quiet). False when the proxy failed or
/// the wait timed out (reported).
__device__ __noinline__ inline bool proxy_wait_done(dev::detail::Reporter r, const ProxyRing& q,
                                                    uint64_t mark, uint32_t op, int peer) {
  dev::detail::Deadline deadline;
  for (uint32_t spin = 0;; ++spin) {
    const uint64_t* done = const_cast<const uint64_t*>(q.done);
    const uint64_t seen = dev::detail::load_acquire_sys(done);
    if (seen >= mark) return true;
    if ((spin & 1023) != 1023) continue;
    if (*q.failed != 0)
      return dev::detail::report(r, GICL_DEVICE_ERROR_PROXY, op, peer, done, mark, seen,
                                 GICL_CMP_AT_LEAST);
    if (deadline.expired(r, op, peer, done, mark, seen, GICL_CMP_AT_LEAST)) return false;
  }
}

/// Every ticket taken so far: what a quiet issued now waits for.
__device__ __forceinline__ uint64_t proxy_head(const ProxyRing& q) {
  return atomicAdd(q.head, 0ull);
}

}  // namespace gicl
