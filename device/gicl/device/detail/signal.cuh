// SPDX-License-Identifier: Apache-2.0
// Implementation of gicl/device/signal.cuh, which includes it inside namespace gicl::dev where
// it stands (after the types it uses). Not part of the contract; not self-contained.
#pragma once

namespace detail {

/// Updates a signal word at the peer, relaxed: no ordering with earlier stores by itself.
__device__ __forceinline__ void signal_update(uint64_t* remote_sig, uint64_t value, SignalOp op) {
  if (op == SignalOp::kAdd)
    add_relaxed_sys(remote_sig, value);
  else
    store_relaxed_sys(remote_sig, value);
}
/// Payload before signal: the fence makes every store of the calling scope (ordered to this
/// thread by scope_sync: a barrier followed by a fence is cumulative) visible at the peer before
/// the signal word changes. One system-scope fence per signal: it is the dominant cost.
__device__ __forceinline__ void signal_remote(uint64_t* remote_sig, uint64_t value, SignalOp op) {
  fence_system();
  signal_update(remote_sig, value, op);
}

/// put_signal and put_signal_nbi: through ring `q` (a network peer's, of the call's queue pair)
/// or, where q is null, the scope's stores then the signal over P2P; `wait`: put_signal's
/// completion at the target.
template <Scope S>
__device__ __forceinline__ void put_signal_via(const DeviceComm& c, const ProxyRing* q, void* dst,
                                               const void* src, size_t bytes, uint64_t* sig,
                                               uint64_t value, SignalOp op, int pe, bool wait) {
  if (q != nullptr) {
    net_put_scoped<S>(c, *q, dst, src, bytes, sig, value, op == SignalOp::kAdd, pe, wait,
                      GICL_OP_PUT_SIGNAL);
    return;
  }
  void* p = route(c, GICL_OP_PUT_SIGNAL, dst, bytes, pe);
  uint64_t* s = route(c, GICL_OP_PUT_SIGNAL, sig, sizeof(uint64_t), pe);
  if (p == nullptr || s == nullptr) return;
  scope_copy<S>(p, src, bytes);
  scope_sync<S>();
  if (scope_leader<S>()) signal_remote(s, value, op);
  scope_sync<S>();
}

/// signal, as put_signal_via.
__device__ __forceinline__ void signal_via(const DeviceComm& c, const ProxyRing* q, uint64_t* sig,
                                           uint64_t value, SignalOp op, int pe) {
  if (q != nullptr) {
    net_signal(c, *q, sig, value, op == SignalOp::kAdd, pe);
    return;
  }
  uint64_t* s = route(c, GICL_OP_SIGNAL, sig, sizeof(uint64_t), pe);
  if (s != nullptr) signal_update(s, value, op);
}

}  // namespace detail
