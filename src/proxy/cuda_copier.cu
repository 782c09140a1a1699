// SPDX-License-Identifier: Apache-2.0
#include "common/cuda.hpp"
#include "common/kernel_families.hpp"
#include "proxy/cuda_copier.hpp"

namespace gicl::proxy {
namespace {

template <typename T>
__device__ void apply(T* w, ProxyAtomic op, T v) {
  switch (op) {
    case ProxyAtomic::kSet:
      atomicExch(w, v);
      break;
    case ProxyAtomic::kAdd:
      atomicAdd(w, v);
      break;
    case ProxyAtomic::kAnd:
      atomicAnd(w, v);
      break;
    case ProxyAtomic::kOr:
      atomicOr(w, v);
      break;
    case ProxyAtomic::kXor:
      atomicXor(w, v);
      break;
  }
}

/// One update (a signal or an atomic) after the copies before it on the stream: those completed
/// before this kernel began, so a reader that sees the new value and then reads the payload
/// finds it.
__global__ void apply_update(void* word, ProxyAtomic op, uint32_t width, unsigned long long value) {
  __threadfence();
  if (width == 8)
    apply(static_cast<unsigned long long*>(word), op, value);
  else
    apply(static_cast<unsigned int*>(word), op, static_cast<unsigned int>(value));
}

// Loaded at communicator init with every other kernel: a lazy load at the first signal would
// wait for the kernels that are waiting for that signal.
const KernelFamily kCopierKernels("network copier", [] { return load_kernels(apply_update); });

}  // namespace

Status CudaCopier::create(int device, std::unique_ptr<CudaCopier>* out) {
  std::unique_ptr<CudaCopier> c(new CudaCopier(device));
  DeviceScope scope(device);
  GICL_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream_, cudaStreamNonBlocking));
  *out = std::move(c);
  return GICL_SUCCESS;
}

CudaCopier::~CudaCopier() {
  DeviceScope scope(device_);
  // Teardown: wait for what was issued, then free; nothing to report a failure to.
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  for (const Pending& p : pending_) (void)cudaEventDestroy(p.event);
  for (cudaEvent_t e : free_events_) (void)cudaEventDestroy(e);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

Status CudaCopier::to_host(void* dst, const void* src, size_t bytes) {
  GICL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  return GICL_SUCCESS;
}

Status CudaCopier::to_device(void* dst, const void* src, size_t bytes) {
  GICL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  return GICL_SUCCESS;
}

Status CudaCopier::update(void* word, ProxyAtomic op, uint32_t width, uint64_t value) {
  apply_update<<<1, 1, 0, stream_>>>(word, op, width, value);
  GICL_CUDA_CHECK(cudaGetLastError());
  return GICL_SUCCESS;
}

Status CudaCopier::mark(uint64_t token) {
  cudaEvent_t e;
  if (!free_events_.empty()) {
    e = free_events_.back();
    free_events_.pop_back();
  } else {
    GICL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  pending_.push_back(Pending{e, token});
  GICL_CUDA_CHECK(cudaEventRecord(e, stream_));
  return GICL_SUCCESS;
}

Status CudaCopier::poll(std::vector<uint64_t>* done) {
  while (!pending_.empty()) {
    const cudaError_t rc = cudaEventQuery(pending_.front().event);
    if (rc == cudaErrorNotReady) break;
    GICL_CUDA_CHECK(rc);
    done->push_back(pending_.front().token);
    free_events_.push_back(pending_.front().event);
    pending_.pop_front();
  }
  return GICL_SUCCESS;
}

}  // namespace gicl::proxy
