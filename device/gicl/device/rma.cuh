// SPDX-License-Identifier: Apache-2.0
// One-sided data movement: put / get (bytes and typed), scalar p / g, strided iput / iget, their
// non-blocking forms and queue-pair overloads. Over P2P the data path is SM loads and stores,
// 16 bytes wide when both addresses allow it, spread over the scope's threads.
#pragma once

#include <type_traits>

#include "gicl/device/comm.cuh"
#include "gicl/device/detail/net.cuh"

namespace gicl::dev {
#include "gicl/device/detail/rma.cuh"

/// Copies `bytes` from local `src` to rank `pe`'s copy of the symmetric `dst`. On return `src`
/// may be reused; the data is visible at `pe` after quiet() (or a signal that follows it).
/// All threads of scope S call it with the same arguments.
/// To a rank on the network path `src` must lie in the symmetric heap, and put returns once the
/// data is in place at `pe`.
template <Scope S = Scope::kThread>
__device__ __forceinline__ void put(const DeviceComm& c, void* dst, const void* src, size_t bytes,
                                    int pe) {
  detail::put_via<S>(c, detail::net_ring(c, pe), dst, src, bytes, pe, true);
}

/// Non-blocking put: same guarantees as put over P2P (the stores are issued on return); over the
/// proxy and IBGDA `src` may be reused only after quiet().
template <Scope S = Scope::kThread>
__device__ __forceinline__ void put_nbi(const DeviceComm& c, void* dst, const void* src,
                                        size_t bytes, int pe) {
  detail::put_via<S>(c, detail::net_ring(c, pe), dst, src, bytes, pe, false);
}

/// put_nbi that adds 1 to the local counter `*local_done` once `src` may be reused (a local
/// completion counter: a pipeline reuses its staging buffer when the counter moves).
template <Scope S = Scope::kThread>
__device__ __forceinline__ void put_nbi(const DeviceComm& c, void* dst, const void* src,
                                        size_t bytes, int pe, unsigned long long* local_done) {
  put<S>(c, dst, src, bytes, pe);
  detail::scope_sync<S>();
  if (detail::scope_leader<S>()) atomicAdd(local_done, 1ull);
}

/// Copies `bytes` from rank `pe`'s copy of symmetric `src` into local `dst`; complete on return.
/// From a rank on the network path `dst` must lie in the symmetric heap (the proxy writes it).
template <Scope S = Scope::kThread>
__device__ __forceinline__ void get(const DeviceComm& c, void* dst, const void* src, size_t bytes,
                                    int pe) {
  detail::get_via<S>(c, detail::net_ring(c, pe), dst, src, bytes, pe, true);
}

/// Non-blocking get: `dst` is complete after quiet() (over P2P already on return).
template <Scope S = Scope::kThread>
__device__ __forceinline__ void get_nbi(const DeviceComm& c, void* dst, const void* src,
                                        size_t bytes, int pe) {
  detail::get_via<S>(c, detail::net_ring(c, pe), dst, src, bytes, pe, false);
}

/// Typed forms: `count` elements of T.
template <Scope S = Scope::kThread, typename T>
requires(!std::is_void_v<T>) __device__ __forceinline__
    void put(const DeviceComm& c, T* dst, const T* src, size_t count, int pe) {
  put<S>(c, static_cast<void*>(dst), static_cast<const void*>(src), count * sizeof(T), pe);
}
template <Scope S = Scope::kThread, typename T>
requires(!std::is_void_v<T>) __device__ __forceinline__
    void get(const DeviceComm& c, T* dst, const T* src, size_t count, int pe) {
  get<S>(c, static_cast<void*>(dst), static_cast<const void*>(src), count * sizeof(T), pe);
}

/// Stores one value (1, 2, 4 or 8 bytes) into rank `pe`'s copy of `dst`. To a rank on the network
/// path the value travels in the request (no source buffer): 4 and 8 bytes as an atomic set,
/// 1 and 2 bytes by compare-swap on the 32-bit word holding them (a round trip each).
template <typename T>
__device__ __forceinline__ void p(const DeviceComm& c, T* dst, T value, int pe) {
  detail::p_via(c, detail::net_ring(c, pe), dst, value, pe);
}

/// Loads one value (1, 2, 4 or 8 bytes) from rank `pe`'s copy of `src`. From a rank on the
/// network path: a fetching load of the aligned word holding it, a round trip.
template <typename T>
__device__ __forceinline__ T g(const DeviceComm& c, const T* src, int pe) {
  return detail::g_via(c, detail::net_ring(c, pe), src, pe);
}

/// Strided put: element i of `src` (stride sst) goes to element i of `dst` (stride dst_stride).
template <Scope S = Scope::kThread, typename T>
__device__ __forceinline__ void iput(const DeviceComm& c, T* dst, const T* src,
                                     ptrdiff_t dst_stride, ptrdiff_t src_stride, size_t nelems,
                                     int pe) {
  if (const ProxyRing* nq = detail::net_ring(c, pe)) {
    detail::net_strided<S>(c, *nq, ProxyOp::kPut, dst, src, dst_stride, src_stride, nelems, pe,
                           GICL_OP_IPUT);
    return;
  }
  const size_t span = nelems ? ((nelems - 1) * static_cast<size_t>(dst_stride) + 1) * sizeof(T) : 0;
  T* q = detail::route(c, GICL_OP_IPUT, dst, span, pe);
  if (q == nullptr) return;
  for (size_t i = detail::scope_rank<S>(); i < nelems; i += detail::scope_size<S>())
    q[i * dst_stride] = src[i * src_stride];
}

/// Strided get.
template <Scope S = Scope::kThread, typename T>
__device__ __forceinline__ void iget(const DeviceComm& c, T* dst, const T* src,
                                     ptrdiff_t dst_stride, ptrdiff_t src_stride, size_t nelems,
                                     int pe) {
  if (const ProxyRing* nq = detail::net_ring(c, pe)) {
    detail::net_strided<S>(c, *nq, ProxyOp::kGet, dst, src, dst_stride, src_stride, nelems, pe,
                           GICL_OP_IGET);
    return;
  }
  const size_t span = nelems ? ((nelems - 1) * static_cast<size_t>(src_stride) + 1) * sizeof(T) : 0;
  const T* q = detail::route(c, GICL_OP_IGET, src, span, pe);
  if (q == nullptr) return;
  for (size_t i = detail::scope_rank<S>(); i < nelems; i += detail::scope_size<S>())
    dst[i * dst_stride] = __ldcg(q + i * src_stride);
}

// ---- queue-pair overloads: same rules per queue pair. Over P2P every queue pair is the default;
// to a rank on the network path each queue pair's requests go through its own ring
// (detail/proxy_ring.h, ProxyRingSet), unordered with the other queue pairs'.

template <Scope S = Scope::kThread>
__device__ __forceinline__ void put(const DeviceComm& c, Qp qp, void* dst, const void* src,
                                    size_t bytes, int pe) {
  detail::put_via<S>(c, detail::net_ring(c, pe, qp.id), dst, src, bytes, pe, true);
}
template <Scope S = Scope::kThread>
__device__ __forceinline__ void put_nbi(const DeviceComm& c, Qp qp, void* dst, const void* src,
                                        size_t bytes, int pe) {
  detail::put_via<S>(c, detail::net_ring(c, pe, qp.id), dst, src, bytes, pe, false);
}
template <Scope S = Scope::kThread>
__device__ __forceinline__ void get(const DeviceComm& c, Qp qp, void* dst, const void* src,
                                    size_t bytes, int pe) {
  detail::get_via<S>(c, detail::net_ring(c, pe, qp.id), dst, src, bytes, pe, true);
}
template <Scope S = Scope::kThread>
__device__ __forceinline__ void get_nbi(const DeviceComm& c, Qp qp, void* dst, const void* src,
                                        size_t bytes, int pe) {
  detail::get_via<S>(c, detail::net_ring(c, pe, qp.id), dst, src, bytes, pe, false);
}
template <typename T>
__device__ __forceinline__ void p(const DeviceComm& c, Qp qp, T* dst, T value, int pe) {
  detail::p_via(c, detail::net_ring(c, pe, qp.id), dst, value, pe);
}
template <typename T>
__device__ __forceinline__ T g(const DeviceComm& c, Qp qp, const T* src, int pe) {
  return detail::g_via(c, detail::net_ring(c, pe, qp.id), src, pe);
}

}  // namespace gicl::dev
