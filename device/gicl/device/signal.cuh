// SPDX-License-Identifier: Apache-2.0
// Signals: put_signal (payload, then signal), signal, waits and tests on signals and on any
// symmetric integer, read / reset.
#pragma once

#include "gicl/device/rma.cuh"
#include "gicl/device/wait.cuh"

namespace gicl::dev {

/// How a signal is updated (GICL_SIGNAL_*).
enum class SignalOp : uint32_t { kSet = GICL_SIGNAL_SET, kAdd = GICL_SIGNAL_ADD };

#include "gicl/device/detail/signal.cuh"

/// put, then set/add `sig` (a symmetric uint64) at `pe` once the payload is visible there.
template <Scope S = Scope::kThread>
__device__ __forceinline__ void put_signal(const DeviceComm& c, void* dst, const void* src,
                                           size_t bytes, uint64_t* sig, uint64_t value, SignalOp op,
                                           int pe) {
  detail::put_signal_via<S>(c, detail::net_ring(c, pe), dst, src, bytes, sig, value, op, pe, true);
}

/// Non-blocking put_signal: `src` reusable after quiet() over the proxy and IBGDA; over P2P the
/// same as put_signal.
template <Scope S = Scope::kThread>
__device__ __forceinline__ void put_signal_nbi(const DeviceComm& c, void* dst, const void* src,
                                               size_t bytes, uint64_t* sig, uint64_t value,
                                               SignalOp op, int pe) {
  detail::put_signal_via<S>(c, detail::net_ring(c, pe), dst, src, bytes, sig, value, op, pe, false);
}

/// Sets or adds to `sig` at `pe`. Relaxed, as NVSHMEM's signal_op: it is not ordered after
/// earlier puts; call fence() first, or use put_signal, when a payload must land before it.
__device__ __forceinline__ void signal(const DeviceComm& c, uint64_t* sig, uint64_t value,
                                       SignalOp op, int pe) {
  detail::signal_via(c, detail::net_ring(c, pe), sig, value, op, pe);
}

/// Waits until the local `sig` satisfies cmp (acquire: the payload of the put_signal that set it
/// is visible afterwards). Returns false on timeout or abort (the report is in
/// gicl_comm_get_async_error); `seen` receives the last value read.
__device__ __forceinline__ bool signal_wait_until(const DeviceComm& c, const uint64_t* sig, Cmp cmp,
                                                  uint64_t value, uint64_t* seen = nullptr) {
  return detail::wait(detail::reporter(c), GICL_OP_SIGNAL_WAIT, sig, cmp, value, -1, seen);
}

/// Non-blocking: true when the local `sig` satisfies cmp now (acquire on success).
__device__ __forceinline__ bool signal_test(const uint64_t* sig, Cmp cmp, uint64_t value) {
  return compare(detail::load_acquire(sig), cmp, value);
}

/// The local value of `sig` (acquire).
__device__ __forceinline__ uint64_t read_signal(const uint64_t* sig) {
  return detail::load_acquire(sig);
}

/// Sets the local `sig` to 0 (relaxed: order it with a later signal or barrier if peers care).
__device__ __forceinline__ void reset_signal(uint64_t* sig) {
  detail::store_relaxed_sys(sig, 0);
}

/// Waits until the local symmetric integer `*ivar` satisfies cmp (int32/uint32/int64/uint64).
template <typename T>
__device__ __forceinline__ bool wait_until(const DeviceComm& c, const T* ivar, Cmp cmp, T value,
                                           T* seen = nullptr) {
  return detail::wait(detail::reporter(c), GICL_OP_WAIT_UNTIL, ivar, cmp, value, -1, seen);
}

/// Non-blocking test of a local symmetric integer.
template <typename T>
__device__ __forceinline__ bool test(const T* ivar, Cmp cmp, T value) {
  return compare(detail::load_acquire(ivar), cmp, value);
}

// ---- queue-pair overloads
template <Scope S = Scope::kThread>
__device__ __forceinline__ void put_signal(const DeviceComm& c, Qp qp, void* dst, const void* src,
                                           size_t bytes, uint64_t* sig, uint64_t value, SignalOp op,
                                           int pe) {
  detail::put_signal_via<S>(c, detail::net_ring(c, pe, qp.id), dst, src, bytes, sig, value, op, pe,
                            true);
}
template <Scope S = Scope::kThread>
__device__ __forceinline__ void put_signal_nbi(const DeviceComm& c, Qp qp, void* dst, const void* src,
                                               size_t bytes, uint64_t* sig, uint64_t value,
                                               SignalOp op, int pe) {
  detail::put_signal_via<S>(c, detail::net_ring(c, pe, qp.id), dst, src, bytes, sig, value, op, pe,
                            false);
}
__device__ __forceinline__ void signal(const DeviceComm& c, Qp qp, uint64_t* sig, uint64_t value,
                                       SignalOp op, int pe) {
  detail::signal_via(c, detail::net_ring(c, pe, qp.id), sig, value, op, pe);
}

}  // namespace gicl::dev
