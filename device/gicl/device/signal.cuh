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
  if (const ProxyRing* q = detail::net_ring(c, pe)) {
    detail::net_put_scoped<S>(c, *q, dst, src, bytes, sig, value, op == SignalOp::kAdd, pe, true,
                              GICL_OP_PUT_SIGNAL);
    return;
  }
  void* p = detail::route(c, GICL_OP_PUT_SIGNAL, dst, bytes, pe);
  uint64_t* s = detail::route(c, GICL_OP_PUT_SIGNAL, sig, sizeof(uint64_t), pe);
  if (p == nullptr || s == nullptr) return;
  detail::scope_copy<S>(p, src, bytes);
  detail::scope_sync<S>();
  if (detail::scope_leader<S>()) detail::signal_remote(s, value, op);
  detail::scope_sync<S>();
}

/// Non-blocking put_signal: `src` reusable after quiet() over the proxy and IBGDA; over P2P the
/// same as put_signal.
template <Scope S = Scope::kThread>
__device__ __forceinline__ void put_signal_nbi(const DeviceComm& c, void* dst, const void* src,
                                               size_t bytes, uint64_t* sig, uint64_t value,
                                               SignalOp op, int pe) {
  if (const ProxyRing* q = detail::net_ring(c, pe)) {
    detail::net_put_scoped<S>(c, *q, dst, src, bytes, sig, value, op == SignalOp::kAdd, pe, false,
                              GICL_OP_PUT_SIGNAL);
    return;
  }
  put_signal<S>(c, dst, src, bytes, sig, value, op, pe);
}

/// Sets or adds to `sig` at `pe`. Relaxed, as NVSHMEM's signal_op: it is not ordered after
/// earlier puts; call fence() first, or use put_signal, when a payload must land before it.
__device__ __forceinline__ void signal(const DeviceComm& c, uint64_t* sig, uint64_t value,
                                       SignalOp op, int pe) {
  if (const ProxyRing* q = detail::net_ring(c, pe)) {
    detail::net_signal(c, *q, sig, value, op == SignalOp::kAdd, pe);
    return;
  }
  uint64_t* s = detail::route(c, GICL_OP_SIGNAL, sig, sizeof(uint64_t), pe);
  if (s != nullptr) detail::signal_update(s, value, op);
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
__device__ __forceinline__ void put_signal(const DeviceComm& c, Qp, void* dst, const void* src,
                                           size_t bytes, uint64_t* sig, uint64_t value, SignalOp op,
                                           int pe) {
  put_signal<S>(c, dst, src, bytes, sig, value, op, pe);
}
template <Scope S = Scope::kThread>
__device__ __forceinline__ void put_signal_nbi(const DeviceComm& c, Qp, void* dst, const void* src,
                                               size_t bytes, uint64_t* sig, uint64_t value,
                                               SignalOp op, int pe) {
  put_signal_nbi<S>(c, dst, src, bytes, sig, value, op, pe);
}
__device__ __forceinline__ void signal(const DeviceComm& c, Qp, uint64_t* sig, uint64_t value,
                                       SignalOp op, int pe) {
  signal(c, sig, value, op, pe);
}

}  // namespace gicl::dev
