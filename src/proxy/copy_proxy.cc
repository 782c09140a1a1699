// SPDX-License-Identifier: Apache-2.0
#include "proxy/copy_proxy.hpp"

#include <pthread.h>

#include <cstdio>
#include <cstring>

#include "common/cuda.hpp"
#include "common/log.hpp"
#include "topology/peer_info.hpp"

namespace gicl {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Status CopyProxy::start(int device, bool mps, std::unique_ptr<CopyProxy>* out) {
  if (cuda_work_queues(mps) < 2)
    return GICL_FAIL(GICL_UNSUPPORTED,
                     "CUDA_DEVICE_MAX_CONNECTIONS=1 gives this process one hardware queue, behind "
                     "which the proxy's copies would wait for the kernel waiting for them");
  const DriverApi* api = nullptr;
  GICL_CHECK(driver_api(&api));
  if (api->cuStreamWriteValue64 == nullptr)
    return GICL_FAIL(GICL_UNSUPPORTED,
                     "the copy-engine proxy needs cuStreamWriteValue64, which this driver lacks");
  std::unique_ptr<CopyProxy> p(new CopyProxy(device, api));
  DeviceScope scope(device);
  // Set-up, not part of a capture the calling thread may have in progress.
  RelaxedCapture relaxed;
  GICL_CHECK(p->init());
  p->thread_ = std::thread([q = p.get()] { q->run(); });
  (void)pthread_setname_np(p->thread_.native_handle(), "gicl-copy-proxy");  // for top -H
  *out = std::move(p);
  return GICL_SUCCESS;
}

Status CopyProxy::init() {
  const size_t ring_bytes = kSlots * sizeof(CopyRequest);
  GICL_CUDA_CHECK(cudaHostAlloc(&host_, ring_bytes + sizeof(uint64_t), cudaHostAllocMapped));
  std::memset(host_, 0, ring_bytes + sizeof(uint64_t));
  void* dev_host = nullptr;
  GICL_CUDA_CHECK(cudaHostGetDevicePointer(&dev_host, host_, 0));
  GICL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  GICL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&counts_), 2 * sizeof(uint64_t)));
  // On the proxy's own stream: the legacy stream would join a capture in progress.
  GICL_CUDA_CHECK(cudaMemsetAsync(counts_, 0, 2 * sizeof(uint64_t), stream_));
  GICL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  queue_.ring = static_cast<CopyRequest*>(dev_host);
  queue_.posted = counts_;
  queue_.done = counts_ + 1;
  failed_ = reinterpret_cast<uint32_t*>(static_cast<char*>(host_) + ring_bytes);
  queue_.failed =
      reinterpret_cast<const volatile uint32_t*>(static_cast<char*>(dev_host) + ring_bytes);
  queue_.slots = kSlots;
  return GICL_SUCCESS;
}

void CopyProxy::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  thread_.join();
}

void CopyProxy::fail(const char* why) {
  stop();
  mark_failed(why);
}

CopyProxy::~CopyProxy() {
  stop();
  DeviceScope scope(device_);
  if (stream_) {
    GICL_CUDA_WARN(cudaStreamSynchronize(stream_));
    GICL_CUDA_WARN(cudaStreamDestroy(stream_));
  }
  if (counts_) GICL_CUDA_WARN(cudaFree(counts_));
  if (host_) GICL_CUDA_WARN(cudaFreeHost(host_));
}

void CopyProxy::stay_busy() {
  busy_until_ns_.store(now_ns() + std::chrono::nanoseconds(kBusyFor).count(),
                       std::memory_order_relaxed);
}

void CopyProxy::kick() {
  stay_busy();
  std::lock_guard<std::mutex> lock(mutex_);
  wake_.notify_one();
}

bool CopyProxy::issue(const CopyRequest& r, uint64_t seq) {
  const cudaError_t e =
      cudaMemcpyAsync(reinterpret_cast<void*>(r.dst), reinterpret_cast<const void*>(r.src), r.bytes,
                      cudaMemcpyDefault, stream_);
  CUresult cu = CUDA_SUCCESS;
  // Stream-ordered after the copy, with the memory barrier a default write carries.
  if (e == cudaSuccess)
    cu = api_->cuStreamWriteValue64(stream_, reinterpret_cast<CUdeviceptr>(counts_ + 1), seq,
                                    CU_STREAM_WRITE_VALUE_DEFAULT);
  if (e == cudaSuccess && cu == CUDA_SUCCESS) {
    issued_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  char what[160];
  std::snprintf(what, sizeof(what), "copy %llu of %llu bytes (%p -> %p): %s (error %d)",
                static_cast<unsigned long long>(seq), static_cast<unsigned long long>(r.bytes),
                reinterpret_cast<void*>(r.src), reinterpret_cast<void*>(r.dst),
                e != cudaSuccess ? cudaGetErrorString(e) : "cuStreamWriteValue64 failed",
                e != cudaSuccess ? static_cast<int>(e) : static_cast<int>(cu));
  mark_failed(what);
  return false;
}

void CopyProxy::mark_failed(const char* what) {
  GICL_WARN(kSubsysProxy,
            "copy-engine proxy on GPU %d: %s; the kernels that wait for its copies fail", device_,
            what);
  __atomic_store_n(failed_, 1u, __ATOMIC_RELEASE);
}

void CopyProxy::run() {
  if (const cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) {
    mark_failed(cudaGetErrorString(e));
    return;
  }
  log_set_device(device_);
  // Never barred by another thread's capture: this thread's calls join no graph.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (const cudaError_t e = cudaThreadExchangeStreamCaptureMode(&mode); e != cudaSuccess) {
    mark_failed(cudaGetErrorString(e));
    return;
  }
  const CopyRequest* ring = static_cast<const CopyRequest*>(host_);
  for (uint64_t next = 1; !stop_.load(std::memory_order_relaxed);) {
    CopyRequest r;
    const CopyTake take = copy_take(ring, kSlots, next, &r);
    if (take == CopyTake::kOverrun) {
      mark_failed("a request was overwritten before it was taken");
      return;
    }
    if (take == CopyTake::kReady) {
      if (!issue(r, next)) return;
      ++next;
      stay_busy();
      continue;
    }
    if (now_ns() < busy_until_ns_.load(std::memory_order_relaxed)) {
      std::this_thread::yield();
      continue;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait_for(lock, kIdlePoll);
  }
}

}  // namespace gicl
