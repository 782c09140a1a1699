// SPDX-License-Identifier: Apache-2.0
#include "common/cuda.hpp"

#include <map>
#include <mutex>

#include "common/log.hpp"

namespace gicl {
namespace {

DriverApi g_api{};
cudaError_t g_load_error = cudaSuccess;
const char* g_missing = nullptr;

template <typename Fn>
bool load(const char* name, Fn* fn, unsigned version = 12000) {
  cudaDriverEntryPointQueryResult q{};
  void* p = nullptr;
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || p == nullptr) {
    if (e != cudaSuccess) g_load_error = e;
    g_missing = name;
    return false;
  }
  *fn = reinterpret_cast<Fn>(p);
  return true;
}

void load_all() {
  int n = 0;
  g_load_error = cudaGetDeviceCount(&n);
  if (g_load_error != cudaSuccess) return;
  bool ok = load("cuGetErrorString", &g_api.cuGetErrorString) &&
            load("cuDeviceGetAttribute", &g_api.cuDeviceGetAttribute) &&
            load("cuMemCreate", &g_api.cuMemCreate) && load("cuMemRelease", &g_api.cuMemRelease) &&
            load("cuMemMap", &g_api.cuMemMap) && load("cuMemUnmap", &g_api.cuMemUnmap) &&
            load("cuMemSetAccess", &g_api.cuMemSetAccess) &&
            load("cuMemAddressReserve", &g_api.cuMemAddressReserve) &&
            load("cuMemAddressFree", &g_api.cuMemAddressFree) &&
            load("cuMemExportToShareableHandle", &g_api.cuMemExportToShareableHandle) &&
            load("cuMemImportFromShareableHandle", &g_api.cuMemImportFromShareableHandle) &&
            load("cuMemGetAllocationGranularity", &g_api.cuMemGetAllocationGranularity) &&
            load("cuMemGetAddressRange", &g_api.cuMemGetAddressRange) &&
            load("cuCtxGetCurrent", &g_api.cuCtxGetCurrent) &&
            load("cuCtxGetId", &g_api.cuCtxGetId);
  if (ok) {
    // Optional: a driver without multicast leaves these null and NVLS is unavailable; one
    // without stream memory operations leaves the copy-engine proxy off.
    const char* missing = g_missing;
    const cudaError_t load_error = g_load_error;
    load("cuMulticastCreate", &g_api.cuMulticastCreate, 12010);
    load("cuMulticastAddDevice", &g_api.cuMulticastAddDevice, 12010);
    load("cuMulticastBindMem", &g_api.cuMulticastBindMem, 12010);
    load("cuMulticastUnbind", &g_api.cuMulticastUnbind, 12010);
    load("cuMulticastGetGranularity", &g_api.cuMulticastGetGranularity, 12010);
    load("cuStreamWriteValue64", &g_api.cuStreamWriteValue64);
    load("cuStreamWaitValue64", &g_api.cuStreamWaitValue64);
    load("cuMemGetHandleForAddressRange", &g_api.cuMemGetHandleForAddressRange, 11070);
    g_missing = missing;
    g_load_error = load_error;
  }
  if (!ok && g_load_error == cudaSuccess) g_load_error = cudaErrorSymbolNotFound;
}

std::once_flag g_once;

}  // namespace

Status driver_api(const DriverApi** api) {
  std::call_once(g_once, load_all);
  if (g_load_error != cudaSuccess)
    return GICL_FAIL(GICL_UNSUPPORTED, "no usable CUDA driver: %s%s%s",
                     cudaGetErrorString(g_load_error), g_missing ? ", missing " : "",
                     g_missing ? g_missing : "");
  *api = &g_api;
  return GICL_SUCCESS;
}

Status context_id(int device, uint64_t* id) {
  GICL_CUDA_CHECK(cudaSetDevice(device));  // makes the primary context current (CUDA 12+)
  const DriverApi* api = nullptr;
  GICL_CHECK(driver_api(&api));
  CUcontext ctx = nullptr;
  unsigned long long value = 0;
  GICL_CU_CHECK(api->cuCtxGetCurrent(&ctx));
  GICL_CU_CHECK(api->cuCtxGetId(ctx, &value));
  *id = value;
  return GICL_SUCCESS;
}

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error for later calls
    return 0;
  }
  return n;
}

Status enable_peer_access(int peer_device) {
  const cudaError_t e = cudaDeviceEnablePeerAccess(peer_device, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();
    return GICL_SUCCESS;
  }
  GICL_CUDA_CHECK(e);
  return GICL_SUCCESS;
}

namespace {
// One set-up stream per context, made at the first set-up of the process and kept. A fresh stream
// per copy would make a first launch each time; first launches from several threads at once can
// land behind another stream's kernel that waits for this thread (reproduced without gicl;
// docs/design/sharing-a-gpu.md), and ranks' first calls run set-up at once.
// Keyed by context: after cudaDeviceReset the old stream is gone with its context.
std::mutex g_setup_mutex;
std::map<uint64_t, cudaStream_t> g_setup_streams;

/// Runs one memset or copy on the current device's set-up stream (non-blocking, never captured)
/// and waits for it; other threads' set-up on the stream may be waited for too.
template <typename Issue>
Status on_setup_stream(Issue issue) {
  int device = -1;
  GICL_CUDA_CHECK(cudaGetDevice(&device));
  uint64_t ctx = 0;
  GICL_CHECK(context_id(device, &ctx));
  cudaStream_t s = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_setup_mutex);
    cudaStream_t& kept = g_setup_streams[ctx];
    if (kept == nullptr) GICL_CUDA_CHECK(cudaStreamCreateWithFlags(&kept, cudaStreamNonBlocking));
    s = kept;
  }
  GICL_CUDA_CHECK(issue(s));
  GICL_CUDA_CHECK(cudaStreamSynchronize(s));
  return GICL_SUCCESS;
}
}  // namespace

Status zero_device(void* p, size_t bytes) {
  return on_setup_stream([&](cudaStream_t s) { return cudaMemsetAsync(p, 0, bytes, s); });
}

Status upload_device(void* dst, const void* src, size_t bytes) {
  return on_setup_stream(
      [&](cudaStream_t s) { return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s); });
}

Status download_device(void* dst, const void* src, size_t bytes) {
  return on_setup_stream(
      [&](cudaStream_t s) { return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s); });
}

Status cuda_fail(cudaError_t err, const char* expr, const char* file, int line) {
  cudaGetLastError();
  return fail(GICL_UNHANDLED_CUDA_ERROR, file, line, "%s failed: %s (%s)", expr,
              cudaGetErrorName(err), cudaGetErrorString(err));
}

Status cu_fail(CUresult err, const char* expr, const char* file, int line) {
  const char* text = "unknown";
  if (g_api.cuGetErrorString) g_api.cuGetErrorString(err, &text);
  return fail(GICL_UNHANDLED_CUDA_ERROR, file, line, "%s failed: CUresult %d (%s)", expr,
              static_cast<int>(err), text);
}

void cuda_warn(cudaError_t err, const char* expr, const char* file, int line) {
  cudaGetLastError();
  if (log_enabled(LogLevel::kWarn, kSubsysInit))
    log_message(LogLevel::kWarn, kSubsysInit, file, line, "%s failed: %s (%s)", expr,
                cudaGetErrorName(err), cudaGetErrorString(err));
}

void cu_warn(CUresult err, const char* expr, const char* file, int line) {
  const char* text = "unknown";
  if (g_api.cuGetErrorString) g_api.cuGetErrorString(err, &text);
  if (log_enabled(LogLevel::kWarn, kSubsysInit))
    log_message(LogLevel::kWarn, kSubsysInit, file, line, "%s failed: CUresult %d (%s)", expr,
                static_cast<int>(err), text);
}

}  // namespace gicl
