// SPDX-License-Identifier: Apache-2.0
// Implementation of gicl/device/rma.cuh, which includes it inside namespace gicl::dev where
// it stands (after the types it uses). Not part of the contract; not self-contained.
#pragma once

namespace detail {

/// The network path of put, put_nbi, put_signal and put_signal_nbi: the scope's leader posts the
/// request (a put with signal where `sig` is set), then the scope meets; `wait`: the leader
/// returns once it is complete at the target.
template <Scope S>
__device__ __forceinline__ void net_put_scoped(const DeviceComm& c, const ProxyRing& q, void* dst,
                                               const void* src, size_t bytes, uint64_t* sig,
                                               uint64_t value, bool add, int pe, bool wait,
                                               uint32_t op) {
  if (scope_leader<S>()) net_put(c, q, dst, src, bytes, sig, value, add, pe, wait, op);
  scope_sync<S>();
}

/// The network path of iput (kPut) and iget (kGet): one request per element, the scope's threads
/// taking elements in turn, each thread then waiting until its own requests are complete (iput:
/// `src` reusable and the data at `pe`; iget: `dst` filled). Both buffers in the heap. An element
/// small enough to travel inside its request (ProxyRingSet::inline_max) is read as it is posted:
/// nothing to wait for.
template <Scope S, typename T>
__device__ __forceinline__ void net_strided(const DeviceComm& c, const ProxyRing& q, ProxyOp kind,
                                            T* dst, const T* src, ptrdiff_t dst_stride,
                                            ptrdiff_t src_stride, size_t nelems, int pe,
                                            uint32_t op) {
  const bool inlined = kind == ProxyOp::kPut && sizeof(T) <= ring_set(c).inline_max;
  uint64_t end = 0;
  bool ok = true;
  for (size_t i = scope_rank<S>(); ok && i < nelems; i += scope_size<S>())
    ok = inlined ? net_put(c, q, dst + i * dst_stride, src + i * src_stride, sizeof(T), nullptr, 0,
                           false, pe, false, op)
                 : net_transfer(c, q, kind, dst + i * dst_stride, src + i * src_stride, sizeof(T),
                                pe, op, &end);
  if (ok && end != 0) proxy_wait_done(reporter(c), q, end, op, pe);
  scope_sync<S>();
}

/// A value's bytes as the low bytes of a 64-bit word (p and g over the network path), and back.
template <typename T>
__device__ __forceinline__ uint64_t value_bits(T v) {
  uint64_t w = 0;
  memcpy(&w, &v, sizeof(T));
  return w;
}
template <typename T>
__device__ __forceinline__ T bits_value(uint64_t w) {
  T v;
  memcpy(&v, &w, sizeof(T));
  return v;
}

/// Loads for scope_copy: a peer's memory (get) is read with ld.global.cg so that no stale copy
/// stays in L1; a local source (put) may be anywhere, stack and shared memory included.
template <bool kPeerSrc, typename T>
__device__ __forceinline__ T copy_load(const T* p) {
  if constexpr (kPeerSrc)
    return __ldcg(p);
  else
    return *p;
}

/// Copies `bytes` with all threads of scope S. Loads are issued eight at a time before the stores
/// so that each thread keeps several NVLink transactions in flight.
template <Scope S, bool kPeerSrc = false>
__device__ __forceinline__ void scope_copy(void* dst, const void* src, size_t bytes) {
  const int r = scope_rank<S>(), n = scope_size<S>();
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  size_t done = 0;
  if (((reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s)) & 15) == 0) {
    const size_t n16 = bytes / 16;
    int4* d4 = reinterpret_cast<int4*>(d);
    const int4* s4 = reinterpret_cast<const int4*>(s);
    size_t i = r;
    constexpr int kDepth = 8;
    for (; i + (kDepth - 1) * static_cast<size_t>(n) < n16; i += kDepth * static_cast<size_t>(n)) {
      int4 v[kDepth];
#pragma unroll
      for (int k = 0; k < kDepth; ++k)
        v[k] = copy_load<kPeerSrc>(s4 + i + k * static_cast<size_t>(n));
#pragma unroll
      for (int k = 0; k < kDepth; ++k) d4[i + k * static_cast<size_t>(n)] = v[k];
    }
    for (; i < n16; i += n) d4[i] = copy_load<kPeerSrc>(s4 + i);
    done = n16 * 16;
  } else if (((reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s)) & 3) == 0) {
    const size_t n4 = bytes / 4;
    for (size_t i = r; i < n4; i += n)
      reinterpret_cast<uint32_t*>(d)[i] =
          copy_load<kPeerSrc>(reinterpret_cast<const unsigned int*>(s) + i);
    done = n4 * 4;
  }
  for (size_t i = done + r; i < bytes; i += n) d[i] = s[i];
}

/// put and put_nbi: through ring `q` (a network peer's, of the call's queue pair) or, where q is
/// null, with the scope's stores over P2P; `wait`: put's completion at the target.
template <Scope S>
__device__ __forceinline__ void put_via(const DeviceComm& c, const ProxyRing* q, void* dst,
                                        const void* src, size_t bytes, int pe, bool wait) {
  if (q != nullptr) {
    net_put_scoped<S>(c, *q, dst, src, bytes, nullptr, 0, false, pe, wait, GICL_OP_PUT);
    return;
  }
  void* p = route(c, GICL_OP_PUT, dst, bytes, pe);
  if (p != nullptr) scope_copy<S>(p, src, bytes);
}

/// get and get_nbi, as put_via: the scope's leader posts the request to ring `q`.
template <Scope S>
__device__ __forceinline__ void get_via(const DeviceComm& c, const ProxyRing* q, void* dst,
                                        const void* src, size_t bytes, int pe, bool wait) {
  if (q != nullptr) {
    if (scope_leader<S>()) net_get(c, *q, dst, src, bytes, pe, wait, GICL_OP_GET);
    scope_sync<S>();
    return;
  }
  const void* p = route(c, GICL_OP_GET, src, bytes, pe);
  if (p != nullptr) scope_copy<S, true>(dst, p, bytes);
}

/// p, as put_via.
template <typename T>
__device__ __forceinline__ void p_via(const DeviceComm& c, const ProxyRing* q, T* dst, T value,
                                      int pe) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "p() moves 1, 2, 4 or 8 bytes; use put()");
  if (q != nullptr) {
    net_store(c, *q, dst, value_bits(value), sizeof(T), pe);
    return;
  }
  T* d = route(c, GICL_OP_P, dst, sizeof(T), pe);
  if (d != nullptr) *d = value;  // a plain store: write-combined on the link, visible after quiet()
}

/// g, as put_via: over the network a fetching load of the aligned word holding the value.
template <typename T>
__device__ __forceinline__ T g_via(const DeviceComm& c, const ProxyRing* q, const T* src, int pe) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "g() moves 1, 2, 4 or 8 bytes; use get()");
  if (q != nullptr) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(src);
    const uint32_t width = sizeof(T) == 8 ? 8 : 4;
    uint64_t word = 0;
    if (a % sizeof(T) != 0) {
      report(reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT, GICL_OP_G, pe, src, sizeof(T), 0, 0);
      return T{};
    }
    if (!net_fetch(c, *q, reinterpret_cast<const void*>(a & ~uintptr_t{width - 1}),
                   ProxyAtomic::kLoad, width, 0, 0, pe, GICL_OP_G, &word))
      return T{};
    return bits_value<T>(word >> (8 * (a & (width - 1))));
  }
  const T* p = route(c, GICL_OP_G, src, sizeof(T), pe);
  return p != nullptr ? __ldcg(p) : T{};  // L2 and the link only: never a stale L1 copy
}

}  // namespace detail
