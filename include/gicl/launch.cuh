// SPDX-License-Identifier: Apache-2.0
/// @file launch.cuh
/// Host helpers for launching kernels that use the device API (included by gicl/device.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

#include "gicl/gicl.h"

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

}  // namespace gicl::dev
