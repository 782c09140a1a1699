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

}  // namespace detail
