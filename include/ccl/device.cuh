/// @file device.cuh
/// The ccl device API: one-sided communication from inside user kernels.
///
/// Get a handle on the host with ccl_comm_get_device_comm (collective), pass it to kernels by
/// value, and call the functions below in namespace ccl::dev. Every data-moving operation takes
/// a scope template argument: Scope::kThread (one thread calls it, the default), Scope::kWarp or
/// Scope::kBlock (every thread of the warp or block calls it with the same arguments and shares
/// the work). Symmetric addresses are pointers returned by ccl_mem_alloc, as seen by this rank.
///
/// Memory model (docs/device-api.md has the full text and the measured cost of each call):
///  - put / p / iput: complete locally on return (the source may be reused); remotely visible
///    after quiet(), or to a reader that acquires a signal issued after them.
///  - put_signal: the signal is applied only after the payload is visible at the target; a
///    signal_wait_until / wait_until that sees the value makes the payload visible to the waiter.
///  - fence(): orders this thread's operations to each peer; quiet(): completes them all.
///  - sync(): all ranks have arrived (no completion implied); barrier() = quiet() + sync().
///  - Atomics are system-scope and relaxed; combine with fence/quiet or signals for ordering.
///  - Every wait is bounded by CCL_WAIT_TIMEOUT (all builds). On expiry it returns false and
///    ccl_comm_get_async_error reports rank, operation, address (heap offset), expected and last
///    seen value. Waits also return false promptly after ccl_comm_abort.
///  - Queue-pair overloads (ccl_qp_create) order operations per queue pair; different queue pairs
///    are unordered. Over NVLink every queue pair is the default one.
#pragma once

#include "ccl/device_abi.h"
#include "ccl/device/primitives.cuh"
#include "ccl/device/comm.cuh"
#include "ccl/device/rma.cuh"
#include "ccl/device/wait.cuh"
#include "ccl/device/signal.cuh"
#include "ccl/device/atomic.cuh"
#include "ccl/device/sync.cuh"

namespace ccl::dev {
/// Rank of this device communicator handle.
__device__ __forceinline__ int rank(const DeviceComm& c) { return c.rank; }
/// Number of ranks.
__device__ __forceinline__ int size(const DeviceComm& c) { return c.nranks; }
}  // namespace ccl::dev
