// SPDX-License-Identifier: Apache-2.0
// CUDA helpers for host code: checked runtime calls and the driver entry points that VMM needs.
// libgicl links the static CUDA runtime and finds the driver at run time, so it loads (and
// bootstraps) on machines with no GPU driver at all.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include "common/log.hpp"
#include "common/status.hpp"

namespace gicl {

/// Driver functions resolved through cudaGetDriverEntryPointByVersion.
struct DriverApi {
  PFN_cuGetErrorString_v6000 cuGetErrorString;
  PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute;
  PFN_cuMemCreate_v10020 cuMemCreate;
  PFN_cuMemRelease_v10020 cuMemRelease;
  PFN_cuMemMap_v10020 cuMemMap;
  PFN_cuMemUnmap_v10020 cuMemUnmap;
  PFN_cuMemSetAccess_v10020 cuMemSetAccess;
  PFN_cuMemAddressReserve_v10020 cuMemAddressReserve;
  PFN_cuMemAddressFree_v10020 cuMemAddressFree;
  PFN_cuMemExportToShareableHandle_v10020 cuMemExportToShareableHandle;
  PFN_cuMemImportFromShareableHandle_v10020 cuMemImportFromShareableHandle;
  PFN_cuMemGetAllocationGranularity_v10020 cuMemGetAllocationGranularity;
  PFN_cuMemGetAddressRange_v3020 cuMemGetAddressRange;
  PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent;  // with cuCtxGetId: context_id
  PFN_cuCtxGetId_v12000 cuCtxGetId;
  // NVLink multicast (NVLS); null where the driver lacks it. Only the NVLS path behind
  // GICL_NVLS_ENABLE=1 calls them.
  PFN_cuMulticastCreate_v12010 cuMulticastCreate;
  PFN_cuMulticastAddDevice_v12010 cuMulticastAddDevice;
  PFN_cuMulticastBindMem_v12010 cuMulticastBindMem;
  PFN_cuMulticastUnbind_v12010 cuMulticastUnbind;
  PFN_cuMulticastGetGranularity_v12010 cuMulticastGetGranularity;
  // Stream memory operations; null where the driver lacks them. The copy-engine proxy needs the
  // write, the staged network path's copy agent the wait.
  PFN_cuStreamWriteValue64_v11070 cuStreamWriteValue64;
  PFN_cuStreamWaitValue64_v11070 cuStreamWaitValue64;
  // A DMA-BUF file descriptor for device memory; null where the driver lacks it. The verbs
  // backend registers GPU memory with the NIC through it (ibv_reg_dmabuf_mr).
  PFN_cuMemGetHandleForAddressRange_v11070 cuMemGetHandleForAddressRange;
};

/// The driver API, or GICL_UNSUPPORTED when no usable driver is installed.
Status driver_api(const DriverApi** api);

/// The id of `device`'s primary context, unique for the process's lifetime (a context made again
/// after cudaDeviceReset gets a new one): what is loaded or made per context is kept under it.
/// Makes the device current for the calling thread.
Status context_id(int device, uint64_t* id);

/// Number of visible CUDA devices; 0 (not an error) when there is no driver or device.
int cuda_device_count();

/// Makes `device` current for a scope and restores the caller's device after: a communicator's
/// work runs on its own device whatever thread calls (abort, destroy, group ends driving
/// several communicators).
class DeviceScope {
 public:
  // Always set, even when cudaGetDevice already names `device`: a thread that has made no
  // runtime call yet reports device 0 with no context current, and the driver calls made in
  // the scope (cuMemGetAddressRange...) would fail. cudaSetDevice makes the primary context
  // current (CUDA 12 and later).
  explicit DeviceScope(int device) : log_saved_(log_set_device(device)) {
    if (cudaGetDevice(&saved_) != cudaSuccess) saved_ = -1;
    if (device >= 0) cudaSetDevice(device);
    if (device == saved_) saved_ = -1;  // nothing to restore
  }
  ~DeviceScope() {
    if (saved_ >= 0) cudaSetDevice(saved_);
    log_set_device(log_saved_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int log_saved_;
  int saved_ = -1;
};

/// Lets set-up work (allocations, zeroing) run while a stream of this thread is being captured
/// into a CUDA graph: relaxes the thread's capture mode for the scope, as NCCL does for its
/// lazy set-up. Stream work inside must go to a private stream (zero_device), never the legacy
/// stream, which would join the capture.
class RelaxedCapture {
 public:
  RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

/// Lets the current device load/store `peer_device`'s memory (already enabled is fine).
Status enable_peer_access(int peer_device);

/// Zeroes device memory of the current device and waits for it, on the device's set-up stream
/// (private, non-blocking, kept for the process): safe while another stream is being captured.
Status zero_device(void* p, size_t bytes);
/// Copies host memory to device memory the same way.
Status upload_device(void* dst, const void* src, size_t bytes);
/// Copies device memory to host memory the same way.
Status download_device(void* dst, const void* src, size_t bytes);

Status cuda_fail(cudaError_t err, const char* expr, const char* file, int line);
Status cu_fail(CUresult err, const char* expr, const char* file, int line);
/// Teardown, where nothing can be returned: a failed call is logged at WARN instead.
void cuda_warn(cudaError_t err, const char* expr, const char* file, int line);
void cu_warn(CUresult err, const char* expr, const char* file, int line);

}  // namespace gicl

#define GICL_CUDA_CHECK(expr)                                              \
  do {                                                                     \
    cudaError_t gicl_cuda_err_ = (expr);                                   \
    if (gicl_cuda_err_ != cudaSuccess)                                     \
      return ::gicl::cuda_fail(gicl_cuda_err_, #expr, __FILE__, __LINE__); \
  } while (0)

#define GICL_CU_CHECK(expr)                                            \
  do {                                                                 \
    CUresult gicl_cu_err_ = (expr);                                    \
    if (gicl_cu_err_ != CUDA_SUCCESS)                                  \
      return ::gicl::cu_fail(gicl_cu_err_, #expr, __FILE__, __LINE__); \
  } while (0)

/// For destructors and other teardown: a failure is logged (WARN), not returned.
#define GICL_CUDA_WARN(expr)                                        \
  do {                                                              \
    cudaError_t gicl_cuda_err_ = (expr);                            \
    if (gicl_cuda_err_ != cudaSuccess)                              \
      ::gicl::cuda_warn(gicl_cuda_err_, #expr, __FILE__, __LINE__); \
  } while (0)

#define GICL_CU_WARN(expr)                                                                      \
  do {                                                                                          \
    CUresult gicl_cu_err_ = (expr);                                                             \
    if (gicl_cu_err_ != CUDA_SUCCESS) ::gicl::cu_warn(gicl_cu_err_, #expr, __FILE__, __LINE__); \
  } while (0)
