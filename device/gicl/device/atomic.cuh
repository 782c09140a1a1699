// SPDX-License-Identifier: Apache-2.0
// Atomics on 32- and 64-bit symmetric integers at any rank (system scope over NVLink), fetching
// and non-fetching. T is int32_t, uint32_t, int64_t or uint64_t. To a rank on the network path
// every form goes through the proxy, which applies it at the target with the GPU's own atomics
// (or the NIC's, where the transport registers GPU memory). The non-fetching forms (set, add,
// inc, and, or, xor) are, like NVLink's relaxed atomics, unordered with other operations until
// quiet (or fence for the ones after) and complete at the target once quiet returns. A fetching
// form waits for its answer: a round trip through both proxies (detail/proxy_ring.h's result
// slots), unordered with the ring's other requests as well.
#pragma once

#include <type_traits>

#include "gicl/device/comm.cuh"
#include "gicl/device/detail/net.cuh"

namespace gicl::dev {
#include "gicl/device/detail/atomic.cuh"

// A fetching form to a network peer returns the proxy's answer; otherwise `q` is the word.
#define GICL_ATOMIC_TARGET(kind, value, compare)                                        \
  if (const ProxyRing* nq = detail::net_ring(c, pe))                                    \
    return detail::net_fetch_as<T>(c, *nq, dst, ProxyAtomic::kind, value, compare, pe); \
  T* q = detail::route(c, GICL_OP_ATOMIC, dst, sizeof(T), pe);                          \
  if (q == nullptr) return T {                                                          \
    }

/// Atomically adds `value` at `pe` and returns the old value.
template <detail::AtomicInt T>
__device__ __forceinline__ T atomic_fetch_add(const DeviceComm& c, T* dst, T value, int pe) {
  GICL_ATOMIC_TARGET(kAdd, value, T{});
  return static_cast<T>(atomicAdd_system(detail::hw(q), detail::bits(value)));
}
template <detail::AtomicInt T>
__device__ __forceinline__ T atomic_fetch_inc(const DeviceComm& c, T* dst, int pe) {
  return atomic_fetch_add(c, dst, T{1}, pe);
}
template <detail::AtomicInt T>
__device__ __forceinline__ T atomic_compare_swap(const DeviceComm& c, T* dst, T cond, T value,
                                                 int pe) {
  GICL_ATOMIC_TARGET(kCompareSwap, value, cond);
  return static_cast<T>(atomicCAS_system(detail::hw(q), detail::bits(cond), detail::bits(value)));
}
template <detail::AtomicInt T>
__device__ __forceinline__ T atomic_swap(const DeviceComm& c, T* dst, T value, int pe) {
  GICL_ATOMIC_TARGET(kSet, value, T{});
  return static_cast<T>(atomicExch_system(detail::hw(q), detail::bits(value)));
}
template <detail::AtomicInt T>
__device__ __forceinline__ T atomic_fetch_and(const DeviceComm& c, T* dst, T value, int pe) {
  GICL_ATOMIC_TARGET(kAnd, value, T{});
  return static_cast<T>(atomicAnd_system(detail::hw(q), detail::bits(value)));
}
template <detail::AtomicInt T>
__device__ __forceinline__ T atomic_fetch_or(const DeviceComm& c, T* dst, T value, int pe) {
  GICL_ATOMIC_TARGET(kOr, value, T{});
  return static_cast<T>(atomicOr_system(detail::hw(q), detail::bits(value)));
}
template <detail::AtomicInt T>
__device__ __forceinline__ T atomic_fetch_xor(const DeviceComm& c, T* dst, T value, int pe) {
  GICL_ATOMIC_TARGET(kXor, value, T{});
  return static_cast<T>(atomicXor_system(detail::hw(q), detail::bits(value)));
}
/// Atomic load at `pe` (relaxed, system scope).
template <detail::AtomicInt T>
__device__ __forceinline__ T atomic_fetch(const DeviceComm& c, const T* dst_const, int pe) {
  T* dst = const_cast<T*>(dst_const);
  GICL_ATOMIC_TARGET(kLoad, T{}, T{});
  if constexpr (sizeof(T) == 8)
    return static_cast<T>(detail::load_relaxed_sys(reinterpret_cast<const uint64_t*>(q)));
  else
    return static_cast<T>(detail::load_relaxed_sys(reinterpret_cast<const uint32_t*>(q)));
}
#undef GICL_ATOMIC_TARGET

/// Atomic store at `pe` (relaxed, system scope).
template <detail::AtomicInt T>
__device__ __forceinline__ void atomic_set(const DeviceComm& c, T* dst, T value, int pe) {
  if (detail::net_update(c, dst, ProxyAtomic::kSet, value, pe)) return;
  T* q = detail::route(c, GICL_OP_ATOMIC, dst, sizeof(T), pe);
  if (q == nullptr) return;
  if constexpr (sizeof(T) == 8)
    detail::store_relaxed_sys(reinterpret_cast<uint64_t*>(q), static_cast<uint64_t>(value));
  else
    detail::store_relaxed_sys(reinterpret_cast<uint32_t*>(q), static_cast<uint32_t>(value));
}

// Non-fetching forms: the hardware may skip returning the old value (a reduction).
template <detail::AtomicInt T>
__device__ __forceinline__ void atomic_add(const DeviceComm& c, T* dst, T value, int pe) {
  if (detail::net_update(c, dst, ProxyAtomic::kAdd, value, pe)) return;
  T* q = detail::route(c, GICL_OP_ATOMIC, dst, sizeof(T), pe);
  if (q == nullptr) return;
  if constexpr (sizeof(T) == 8)
    detail::add_relaxed_sys(reinterpret_cast<uint64_t*>(q), static_cast<uint64_t>(value));
  else
    detail::add_relaxed_sys(reinterpret_cast<uint32_t*>(q), static_cast<uint32_t>(value));
}
template <detail::AtomicInt T>
__device__ __forceinline__ void atomic_inc(const DeviceComm& c, T* dst, int pe) {
  atomic_add(c, dst, T{1}, pe);
}
template <detail::AtomicInt T>
__device__ __forceinline__ void atomic_and(const DeviceComm& c, T* dst, T value, int pe) {
  if (detail::net_update(c, dst, ProxyAtomic::kAnd, value, pe)) return;
  (void)atomic_fetch_and(c, dst, value, pe);
}
template <detail::AtomicInt T>
__device__ __forceinline__ void atomic_or(const DeviceComm& c, T* dst, T value, int pe) {
  if (detail::net_update(c, dst, ProxyAtomic::kOr, value, pe)) return;
  (void)atomic_fetch_or(c, dst, value, pe);
}
template <detail::AtomicInt T>
__device__ __forceinline__ void atomic_xor(const DeviceComm& c, T* dst, T value, int pe) {
  if (detail::net_update(c, dst, ProxyAtomic::kXor, value, pe)) return;
  (void)atomic_fetch_xor(c, dst, value, pe);
}

}  // namespace gicl::dev
