// SPDX-License-Identifier: Apache-2.0
// Address translation, rank checks and error reports on the device communicator handle.
#pragma once

#include <cstdio>
#include <type_traits>

#include "gicl/device/primitives.cuh"

namespace gicl::dev {

/// The device communicator handle (gicl_comm_get_device_comm). Trivially copyable: pass it to
/// kernels by value.
using DeviceComm = gicl_device_comm_t;
using DeviceTeam = gicl_device_team_t;
using Qp = gicl_qp_t;

#include "gicl/device/detail/comm.cuh"

/// Rank `pe`'s copy of the symmetric address `sym` as a pointer this thread can load and store,
/// or nullptr when `pe` is not load/store reachable. O(1): one multiply and two adds.
template <typename T>
__device__ __forceinline__ T* peer_ptr(const DeviceComm& c, T* sym, int pe) {
  using Byte = std::conditional_t<std::is_const_v<T>, const char, char>;
  int64_t slot_delta;
  if (c.flags & GICL_DEVICE_FLAG_ALL_P2P) {
    slot_delta = static_cast<int64_t>(pe) - c.own_slot;
  } else {
    if (c.paths[pe] == GICL_PATH_NETWORK) return nullptr;
    slot_delta = static_cast<int64_t>(c.slots[pe]) - c.own_slot;
  }
  return reinterpret_cast<T*>(reinterpret_cast<Byte*>(sym) +
                              slot_delta * static_cast<int64_t>(c.slot_bytes));
}

#include "gicl/device/detail/route.cuh"

}  // namespace gicl::dev
