// SPDX-License-Identifier: Apache-2.0
// Implementation of gicl/device/atomic.cuh, which includes it inside namespace gicl::dev where
// it stands (after the types it uses). Not part of the contract; not self-contained.
#pragma once

namespace detail {

template <typename T>
concept AtomicInt = std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t> ||
    std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>;

// The hardware operand type of T (two's complement makes signed add/and/or/xor/cas/exch equal).
template <typename T>
using HwInt = std::conditional_t<sizeof(T) == 8, unsigned long long, unsigned int>;

template <typename T>
__device__ __forceinline__ HwInt<T>* hw(T* p) {
  return reinterpret_cast<HwInt<T>*>(p);
}
template <typename T>
__device__ __forceinline__ HwInt<T> bits(T v) {
  return static_cast<HwInt<T>>(v);
}

/// A fetching update of `dst` at network peer `pe` through the proxy: the old value, or T{} when
/// it failed (reported).
template <typename T>
__device__ __forceinline__ T net_fetch_as(const DeviceComm& c, const ProxyRing& q, T* dst,
                                          ProxyAtomic kind, T value, T compare, int pe) {
  using U = std::make_unsigned_t<T>;
  uint64_t old = 0;
  if (!net_fetch(c, q, dst, kind, sizeof(T), static_cast<uint64_t>(static_cast<U>(value)),
                 static_cast<uint64_t>(static_cast<U>(compare)), pe, GICL_OP_ATOMIC, &old))
    return T{};
  return static_cast<T>(static_cast<U>(old));
}

/// A non-fetching update of `dst` at `pe` through the proxy when `pe` is on the network path
/// (true: handled there, reported on failure); false for any other peer.
template <typename T>
__device__ __forceinline__ bool net_update(const DeviceComm& c, T* dst, ProxyAtomic kind, T value,
                                           int pe) {
  const ProxyRing* q = net_ring(c, pe);
  if (q == nullptr) return false;
  net_atomic(c, *q, dst, kind, sizeof(T),
             static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(value)), pe);
  return true;
}

}  // namespace detail
