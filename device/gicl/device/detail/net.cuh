// SPDX-License-Identifier: Apache-2.0
// The device API's network path (internal): operations to a rank on the network path become
// requests in the communicator's proxy ring (detail/proxy_ring.h). Their heap addresses travel as
// offsets in the symmetric heap, the source of a put and the destination of a get included: the
// proxy reads and writes this rank's side there. A fetching operation's answer comes back through
// the ring's result slots. Not part of the contract; included by rma.cuh and atomic.cuh.
#pragma once

#include "gicl/device/detail/proxy_ring.cuh"

namespace gicl::dev::detail {

__device__ __forceinline__ const ProxyRingSet& ring_set(const DeviceComm& c) {
  return *static_cast<const ProxyRingSet*>(c.net);
}

/// The request ring of queue pair `qp_id` (the default's: 0) when `pe` is on the network path
/// and the communicator opened one; nullptr otherwise (one compare when the communicator has
/// none).
__device__ __forceinline__ const ProxyRing* net_ring(const DeviceComm& c, int pe,
                                                     uint32_t qp_id = GICL_QP_DEFAULT_ID) {
  if (c.net == nullptr || pe < 0 || pe >= c.nranks || c.paths[pe] != GICL_PATH_NETWORK)
    return nullptr;
  const ProxyRingSet& s = ring_set(c);
  return &s.rings[proxy_qp_ring(qp_id, s.count)];
}

/// The ring of barrier arrivals to network peers (detail/proxy_ring.h, ProxyRingSet).
__device__ __forceinline__ const ProxyRing& arrival_ring(const DeviceComm& c) {
  const ProxyRingSet& s = ring_set(c);
  return s.rings[proxy_arrival_ring(s.count)];
}

/// Offset of [p, p + bytes) in this rank's heap slot, or ~0 when it is not inside it.
__device__ __forceinline__ uint64_t own_offset(const DeviceComm& c, const void* p, size_t bytes) {
  const char* own = c.heap_base + static_cast<uint64_t>(c.own_slot) * c.slot_bytes;
  const char* q = static_cast<const char*>(p);
  if (q < own || q >= own + c.slot_bytes || bytes > c.slot_bytes - static_cast<uint64_t>(q - own))
    return ~0ull;
  return static_cast<uint64_t>(q - own);
}

/// The `bytes` (at most 8) at `src`, little-endian, from L2: what the proxy's copier would have
/// read there, never a stale L1 copy of another block's store.
__device__ __forceinline__ uint64_t inline_data(const void* src, uint32_t bytes) {
  const auto* b = static_cast<const unsigned char*>(src);
  if (bytes == 8 && reinterpret_cast<uintptr_t>(src) % 8 == 0)
    return static_cast<uint64_t>(__ldcg(reinterpret_cast<const unsigned long long*>(src)));
  uint64_t v = 0;
  for (uint32_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(__ldcg(b + i)) << (8 * i);
  return v;
}

/// Posts a put of `bytes` (1 to the ring set's inline_max) whose bytes travel in the request,
/// with a signal when `sig` is set (`d`, `g`: checked heap offsets). No fence first: no later
/// read of this rank's memory belongs to it. Complete locally once posted.
__device__ __noinline__ inline bool net_put_inline(const DeviceComm& c, const ProxyRing& q,
                                                   uint64_t d, uint64_t data, uint32_t bytes,
                                                   uint64_t* sig, uint64_t g, uint64_t value,
                                                   bool add, int pe, uint32_t op) {
  uint64_t w[2 * kProxyMaxSlots];
  const auto peer = static_cast<uint32_t>(pe);
  const uint32_t n = sig != nullptr
                         ? proxy_encode_inline_signal(w, add, peer, d, data, bytes, g, value)
                         : proxy_encode_inline(w, ProxyOp::kPut, peer, d, data, bytes);
  return proxy_post_relaxed(reporter(c), q, w, n, op, pe) != ~0ull;
}

/// Posts a put to network peer `pe`, with a signal when `sig` is set; `wait`: returns once it is
/// complete at the target, except a put small enough to travel inline (ProxyRingSet::inline_max),
/// whose source is read before it returns. False when it failed (reported to the communicator).
__device__ __noinline__ inline bool net_put(const DeviceComm& c, const ProxyRing& q, void* dst,
                                            const void* src, size_t bytes, uint64_t* sig,
                                            uint64_t value, bool add, int pe, bool wait,
                                            uint32_t op) {
  const uint64_t d = own_offset(c, dst, bytes), s = own_offset(c, src, bytes);
  const uint64_t g = sig != nullptr ? own_offset(c, sig, sizeof(uint64_t)) : 0;
  if (d == ~0ull || s == ~0ull || g == ~0ull) {
    const void* bad = d == ~0ull ? dst : s == ~0ull ? src : static_cast<const void*>(sig);
    return report(reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT, op, pe, bad, bytes, 0, 0);
  }
  if (bytes > 0 && bytes <= ring_set(c).inline_max) {
    const auto n = static_cast<uint32_t>(bytes);
    return net_put_inline(c, q, d, inline_data(src, n), n, sig, g, value, add, pe, op);
  }
  uint64_t w[2 * kProxyMaxSlots];
  const uint32_t n =
      sig != nullptr
          ? proxy_encode_put_signal(w, add, static_cast<uint32_t>(pe), d, s, bytes, g, value)
          : proxy_encode_transfer(w, ProxyOp::kPut, static_cast<uint32_t>(pe), d, s, bytes);
  const uint64_t t = proxy_submit(reporter(c), q, w, n, op, pe);
  if (t == ~0ull) return false;
  return !wait || proxy_wait_done(reporter(c), q, t + n, op, pe);
}

/// Posts a transfer without waiting: kPut of `bytes` from this rank's `src` to symmetric `dst` at
/// network peer `pe`, or kGet from symmetric `src` there into this rank's `dst` (every address in
/// the heap). `*end`: one past its last ticket, what proxy_wait_done waits for. False when it
/// failed (reported).
__device__ __noinline__ inline bool net_transfer(const DeviceComm& c, const ProxyRing& q,
                                                 ProxyOp kind, void* dst, const void* src,
                                                 size_t bytes, int pe, uint32_t op, uint64_t* end) {
  const uint64_t d = own_offset(c, dst, bytes), s = own_offset(c, src, bytes);
  if (d == ~0ull || s == ~0ull)
    return report(reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT, op, pe, d == ~0ull ? dst : src,
                  bytes, 0, 0);
  uint64_t w[2 * kProxyMaxSlots];
  const uint32_t n = proxy_encode_transfer(w, kind, static_cast<uint32_t>(pe), d, s, bytes);
  const uint64_t t = proxy_submit(reporter(c), q, w, n, op, pe);
  if (t == ~0ull) return false;
  *end = t + n;
  return true;
}

/// A get from network peer `pe` (net_transfer's kGet); `wait`: returns once `dst` holds the bytes.
__device__ __noinline__ inline bool net_get(const DeviceComm& c, const ProxyRing& q, void* dst,
                                            const void* src, size_t bytes, int pe, bool wait,
                                            uint32_t op) {
  uint64_t end = 0;
  if (!net_transfer(c, q, ProxyOp::kGet, dst, src, bytes, pe, op, &end)) return false;
  return !wait || proxy_wait_done(reporter(c), q, end, op, pe);
}

/// A fetching update (`kind`, operands `value` and `compare`) of the `width`-byte word `word` at
/// network peer `pe`: takes a result slot, posts, and waits for the answer, the word's old value
/// (zero-extended) in `*old`. A round trip through both proxies. False when it failed (reported).
__device__ __noinline__ inline bool net_fetch(const DeviceComm& c, const ProxyRing& q,
                                              const void* word, ProxyAtomic kind, uint32_t width,
                                              uint64_t value, uint64_t compare, int pe, uint32_t op,
                                              uint64_t* old) {
  const uint64_t g = own_offset(c, word, width);
  if (g == ~0ull || g % width != 0)
    return report(reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT, op, pe, word, width, 0, 0);
  ProxyRingDeviceMem m{reporter(c), op, pe, q.failed};
  const uint64_t i = proxy_result_take(q, m);
  if (i == ~0ull) return false;
  uint64_t w[2 * kProxyMaxSlots];
  const uint32_t n =
      proxy_encode_fetch(w, static_cast<uint32_t>(pe), kind, width, g, value, compare, i);
  if (proxy_post_relaxed(reporter(c), q, w, n, op, pe) == ~0ull) {
    m.release(q.result_turns + (i & (q.results_size - 1)), i / q.results_size + 1);
    return false;
  }
  return proxy_result_read(q, m, i, old);
}

/// Stores `bytes` (1 to 8) of `value` at `dst` of network peer `pe` (p()): a 4- or 8-byte value
/// as an atomic set (visible after quiet; the proxy batches those); a 1- or 2-byte one as an
/// inline put on the staged path (visible after quiet), else by compare-swap on the aligned
/// 32-bit word holding it, complete on return. False when it failed (reported).
__device__ __noinline__ inline bool net_store(const DeviceComm& c, const ProxyRing& q, void* dst,
                                              uint64_t value, uint32_t bytes, int pe) {
  if (bytes == 4 || bytes == 8) {
    const uint64_t g = own_offset(c, dst, bytes);
    if (g == ~0ull || g % bytes != 0)
      return report(reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT, GICL_OP_P, pe, dst, bytes, 0, 0);
    uint64_t w[2 * kProxyMaxSlots];
    const uint32_t n =
        proxy_encode_atomic(w, static_cast<uint32_t>(pe), ProxyAtomic::kSet, bytes, g, value);
    return proxy_post_relaxed(reporter(c), q, w, n, GICL_OP_P, pe) != ~0ull;
  }
  const uintptr_t a = reinterpret_cast<uintptr_t>(dst);
  if (a % bytes != 0)
    return report(reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT, GICL_OP_P, pe, dst, bytes, 0, 0);
  if (bytes <= ring_set(c).inline_max) {  // the staged path: the bytes alone, no read first
    const uint64_t g = own_offset(c, dst, bytes);
    if (g == ~0ull)
      return report(reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT, GICL_OP_P, pe, dst, bytes, 0, 0);
    return net_put_inline(c, q, g, value & ((uint64_t{1} << (8 * bytes)) - 1), bytes, nullptr, 0, 0,
                          false, pe, GICL_OP_P);
  }
  void* word = reinterpret_cast<void*>(a & ~uintptr_t{3});
  const uint32_t shift = static_cast<uint32_t>(a & 3) * 8;
  const uint64_t mask = ((uint64_t{1} << (8 * bytes)) - 1) << shift;
  uint64_t seen = 0;
  if (!net_fetch(c, q, word, ProxyAtomic::kLoad, 4, 0, 0, pe, GICL_OP_P, &seen)) return false;
  for (;;) {
    const uint64_t next = (seen & ~mask) | ((value << shift) & mask);
    uint64_t was = 0;
    if (!net_fetch(c, q, word, ProxyAtomic::kCompareSwap, 4, next, seen, pe, GICL_OP_P, &was))
      return false;
    if (was == seen) return true;
    seen = was;  // another writer changed the word's other bytes: again with what it holds
  }
}

/// Posts a signal update to network peer `pe`. Relaxed, as over NVLink: the request carries
/// everything the proxy needs, and nothing orders this thread's earlier stores before it.
__device__ __noinline__ inline bool net_signal(const DeviceComm& c, const ProxyRing& q,
                                               uint64_t* sig, uint64_t value, bool add, int pe) {
  const uint64_t g = own_offset(c, sig, sizeof(uint64_t));
  if (g == ~0ull)
    return report(reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT, GICL_OP_SIGNAL, pe, sig, 8, 0, 0);
  uint64_t w[2 * kProxyMaxSlots];
  const uint32_t n = proxy_encode_signal(w, add ? ProxyOp::kSignalAdd : ProxyOp::kSignalSet,
                                         static_cast<uint32_t>(pe), g, value);
  return proxy_post_relaxed(reporter(c), q, w, n, GICL_OP_SIGNAL, pe) != ~0ull;
}

/// Posts a non-fetching atomic update (`kind`) of the `width`-byte word `dst` at network peer
/// `pe`; it completes at the target like a signal, unordered with the ring's other requests.
__device__ __noinline__ inline bool net_atomic(const DeviceComm& c, const ProxyRing& q, void* dst,
                                               ProxyAtomic kind, uint32_t width, uint64_t value,
                                               int pe) {
  const uint64_t g = own_offset(c, dst, width);
  if (g == ~0ull || g % width != 0)
    return report(reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT, GICL_OP_ATOMIC, pe, dst, width, 0,
                  0);
  uint64_t w[2 * kProxyMaxSlots];
  const uint32_t n = proxy_encode_atomic(w, static_cast<uint32_t>(pe), kind, width, g, value);
  return proxy_post_relaxed(reporter(c), q, w, n, GICL_OP_ATOMIC, pe) != ~0ull;
}

/// Posts a host FIFO operation to network peer `pe` (the pipe collectives' messages on the staged
/// path: kFifoSend of `bytes` in slot `index`, or kFifoCredit for lane `index`).
__device__ __noinline__ inline bool net_fifo(const DeviceComm& c, ProxyOp op, int pe,
                                             uint32_t index, uint64_t bytes) {
  const ProxyRing& q = ring_set(c).rings[0];
  uint64_t w[2];
  const uint32_t n = proxy_encode_fifo(w, op, static_cast<uint32_t>(pe), index, bytes);
  return proxy_submit(reporter(c), q, w, n, GICL_OP_COLLECTIVE, pe) != ~0ull;
}

/// Counts one barrier arrival of this rank at network peer `to`, through the arrivals' ring: on
/// the staged path a credit on kProxyArrivalLane that `to`'s proxy adds to its host word for this
/// rank (ProxyRingSet::arrivals), on the direct path a signal add into `to`'s sync_in[c.rank].
__device__ __noinline__ inline bool net_arrive(const DeviceComm& c, int to) {
  const ProxyRing& q = arrival_ring(c);
  if (ring_set(c).arrivals == nullptr) {
    // A barrier orders this thread's earlier stores before its arrival.
    fence_system();
    return net_signal(c, q, c.sync_in + c.rank, 1, true, to);
  }
  uint64_t w[2];
  const uint32_t n =
      proxy_encode_fifo(w, ProxyOp::kFifoCredit, static_cast<uint32_t>(to), kProxyArrivalLane, 0);
  return proxy_submit(reporter(c), q, w, n, GICL_OP_SYNC, to) != ~0ull;
}

/// The word counting rank `from`'s barrier arrivals here: where net_arrive counts them for a
/// network peer on the staged path (host memory), c.sync_in[from] otherwise. Paths are alike on
/// both sides of a pair (topology/peer_info.hpp), so the sender counts where this rank waits.
__device__ __forceinline__ const uint64_t* arrival_word(const DeviceComm& c, int from) {
  if (net_ring(c, from) != nullptr && ring_set(c).arrivals != nullptr)
    return ring_set(c).arrivals + from;
  return c.sync_in + from;
}

/// Orders ring `q`'s later operations to `pe` (every peer for GICL_RANK_ALL) after its earlier
/// ones.
__device__ __noinline__ inline bool net_fence(const DeviceComm& c, const ProxyRing& q, int pe) {
  const uint32_t peer = pe < 0 ? kProxyAllPeers : static_cast<uint32_t>(pe);
  const uint64_t w[2] = {proxy_word0(ProxyOp::kFence, false, peer, 0), 0};
  return proxy_submit(reporter(c), q, w, 1, GICL_OP_FENCE, pe) != ~0ull;
}

/// Waits until every request posted to ring `q` so far is complete at its target. A ring nobody
/// has posted to is done without a look at the proxy's `done` word (a PCIe round trip).
__device__ __noinline__ inline bool net_quiet_ring(const DeviceComm& c, const ProxyRing& q) {
  const uint64_t mark = proxy_head(q);
  return mark == 0 || proxy_wait_done(reporter(c), q, mark, GICL_OP_QUIET, -1);
}

/// net_quiet_ring over the communicator's rings but the arrivals': an arrival is counted where
/// it lands and nothing waits for its completion, so a barrier's quiet does not wait for the
/// previous barrier's arrivals.
__device__ __noinline__ inline bool net_quiet(const DeviceComm& c) {
  const ProxyRingSet& s = ring_set(c);
  for (uint32_t i = 0; i < s.count; ++i)
    if (i != proxy_arrival_ring(s.count) && !net_quiet_ring(c, s.rings[i])) return false;
  return true;
}

}  // namespace gicl::dev::detail
