// SPDX-License-Identifier: Apache-2.0
// Implementation of gicl/device/comm.cuh, which includes it inside namespace gicl::dev where
// it stands (after the types it uses). Not part of the contract; not self-contained.
#pragma once

namespace detail {

/// peer_ptr for an operation: validates under GICL_DEVICE_CHECKS and reports a peer no transport
/// reaches (the proxy and IBGDA transports will take that branch instead).
template <typename T>
__device__ __forceinline__ T* route(const DeviceComm& c, uint32_t op, T* sym, size_t bytes,
                                    int pe) {
  if (checks_on(c) && !check_args(reporter(c), op, sym, bytes, pe)) return nullptr;
  T* p = peer_ptr(c, sym, pe);
  if (p == nullptr) report(reporter(c), GICL_DEVICE_ERROR_NO_TRANSPORT, op, pe, sym, bytes, 0, 0);
  return p;
}

}  // namespace detail
