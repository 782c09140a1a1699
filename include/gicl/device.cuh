// SPDX-License-Identifier: Apache-2.0
/// @file device.cuh
/// The gicl device API: one-sided communication from inside user kernels.
///
/// Get a handle on the host with gicl_comm_get_device_comm (collective), pass it to kernels by
/// value, and call the functions below in namespace gicl::dev. Every data-moving operation takes
/// a scope template argument: Scope::kThread (one thread calls it, the default), Scope::kWarp or
/// Scope::kBlock (every thread of the warp or block calls it with the same arguments and shares
/// the work). Symmetric addresses are pointers returned by gicl_mem_alloc, as seen by this rank.
///
/// Memory model (docs/device-api.md has the full text and the measured cost of each call):
///  - put / p / iput: complete locally on return (the source may be reused); remotely visible
///    after quiet(), or to a reader that acquires a signal issued after them.
///  - put_signal: the signal is applied only after the payload is visible at the target; a
///    signal_wait_until / wait_until that sees the value makes the payload visible to the waiter.
///  - fence(): orders this thread's operations to each peer; quiet(): completes them all.
///  - sync(): all ranks have arrived (no completion implied); barrier() = quiet() + sync().
///  - Atomics are system-scope and relaxed; combine with fence/quiet or signals for ordering.
///  - Every wait is bounded by GICL_WAIT_TIMEOUT (all builds). On expiry it returns false and
///    gicl_comm_get_async_error reports rank, operation, address (heap offset), expected and last
///    seen value. Waits also return false promptly after gicl_comm_abort.
///  - Queue-pair overloads (gicl_qp_create) order operations per queue pair; different queue pairs
///    are unordered. Over NVLink every queue pair is the default one.
#pragma once

#include "gicl/device/atomic.cuh"
#include "gicl/device/coll.cuh"
#include "gicl/device/comm.cuh"
#include "gicl/device/primitives.cuh"
#include "gicl/device/rma.cuh"
#include "gicl/device/signal.cuh"
#include "gicl/device/sync.cuh"
#include "gicl/device/wait.cuh"
#include "gicl/device_abi.h"
#include "gicl/gicl.h"
#include "gicl/launch.cuh"

namespace gicl::dev {

/// Rank of this device communicator handle.
__device__ __forceinline__ int rank(const DeviceComm& c) {
  return c.rank;
}
/// Number of ranks.
__device__ __forceinline__ int size(const DeviceComm& c) {
  return c.nranks;
}
}  // namespace gicl::dev
