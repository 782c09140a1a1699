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

#include <cstdio>

namespace gicl::dev {

/// Launches a kernel whose blocks wait for each other (device-wide barriers, persistent kernels):
/// refuses, with GICL_INVALID_ARGUMENT and nothing launched, a grid that cannot be co-resident on
/// the current device; otherwise launches it cooperatively (as nvshmemx_collective_launch). Inline
/// on purpose: `func` belongs to the caller's CUDA runtime.
inline gicl_result_t launch_collective(const void* func, dim3 grid, dim3 block, void** args,
                                       size_t shared_bytes, cudaStream_t stream) {
  char msg[256];
  if (func == nullptr) return gicl_set_last_error(GICL_INVALID_ARGUMENT, "func must not be NULL");
  const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
  const unsigned threads = block.x * block.y * block.z;
  int device = 0, sms = 0, per_sm = 0, coop = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, func, static_cast<int>(threads),
                                                    shared_bytes) != cudaSuccess) {
    std::snprintf(msg, sizeof(msg), "launch_collective: CUDA query failed: %s",
                  cudaGetErrorString(cudaGetLastError()));
    return gicl_set_last_error(GICL_UNHANDLED_CUDA_ERROR, msg);
  }
  if (!coop)
    return gicl_set_last_error(GICL_UNSUPPORTED, "the device cannot launch cooperative kernels");
  if (blocks == 0 || threads == 0 || blocks > 1ull * per_sm * sms) {
    std::snprintf(msg, sizeof(msg),
                  "launch_collective: grid of %llu blocks cannot be co-resident: at most %d per SM "
                  "x %d SMs with block=%u threads and shared_bytes=%zu",
                  blocks, per_sm, sms, threads, shared_bytes);
    return gicl_set_last_error(GICL_INVALID_ARGUMENT, msg);
  }
  const cudaError_t e = cudaLaunchCooperativeKernel(func, grid, block, args, shared_bytes, stream);
  if (e != cudaSuccess) {
    std::snprintf(msg, sizeof(msg), "cudaLaunchCooperativeKernel: %s", cudaGetErrorString(e));
    return gicl_set_last_error(GICL_UNHANDLED_CUDA_ERROR, msg);
  }
  return GICL_SUCCESS;
}

/// Rank of this device communicator handle.
__device__ __forceinline__ int rank(const DeviceComm& c) {
  return c.rank;
}
/// Number of ranks.
__device__ __forceinline__ int size(const DeviceComm& c) {
  return c.nranks;
}
}  // namespace gicl::dev
