// SPDX-License-Identifier: Apache-2.0
#include "common/cuda.hpp"
#include "common/kernel_families.hpp"
#include "proxy/cuda_copier.hpp"

namespace gicl::proxy {
namespace {

template <typename T>
__device__ T apply(T* w, ProxyAtomic op, T v, T compare) {
  switch (op) {
    case ProxyAtomic::kSet:
      return atomicExch(w, v);
    case ProxyAtomic::kAdd:
      return atomicAdd(w, v);
    case ProxyAtomic::kAnd:
      return atomicAnd(w, v);
    case ProxyAtomic::kOr:
      return atomicOr(w, v);
    case ProxyAtomic::kXor:
      return atomicXor(w, v);
    case ProxyAtomic::kCompareSwap:
      return atomicCAS(w, compare, v);
    case ProxyAtomic::kLoad:
      return atomicAdd(w, T{0});  // a read at the point of coherence, as the other atomics
  }
  return 0;
}

/// One update (a signal or an atomic) after the copies before it on the stream: those completed
/// before this kernel began, so a reader that sees the new value and then reads the payload
/// finds it. `old` (host memory, or null): where a fetching update's old value goes.
__global__ void apply_update(void* word, ProxyAtomic op, uint32_t width, unsigned long long value,
                             unsigned long long compare, unsigned long long* old) {
  __threadfence();
  unsigned long long was;
  if (width == 8)
    was = apply(static_cast<unsigned long long*>(word), op, value, compare);
  else
    was = apply(static_cast<unsigned int*>(word), op, static_cast<unsigned int>(value),
                static_cast<unsigned int>(compare));
  if (old != nullptr) {
    *reinterpret_cast<volatile unsigned long long*>(old) = was;
    __threadfence_system();  // in host memory before the stream's next event
  }
}

/// Several updates (a staged chunk of header-only operations) in order, read from host memory
/// through its unified address; one launch instead of one each.
__global__ void apply_many(char* base, const WordUpdate* u, uint32_t n, unsigned long long* old) {
  __threadfence();
  for (uint32_t i = 0; i < n; ++i) {
    const WordUpdate w = u[i];
    const auto op = static_cast<ProxyAtomic>(w.op);
    unsigned long long was;
    if (w.width == 8)
      was = apply(reinterpret_cast<unsigned long long*>(base + w.word), op,
                  static_cast<unsigned long long>(w.value),
                  static_cast<unsigned long long>(w.compare));
    else
      was = apply(reinterpret_cast<unsigned int*>(base + w.word), op,
                  static_cast<unsigned int>(w.value), static_cast<unsigned int>(w.compare));
    if (old != nullptr) reinterpret_cast<volatile unsigned long long*>(old)[i] = was;
  }
  if (old != nullptr) __threadfence_system();  // in host memory before the stream's next event
}

// Loaded at communicator init with every other kernel: a lazy load at the first signal would
// wait for the kernels that are waiting for that signal.
const KernelFamily kCopierKernels("network copier",
                                  [] { return load_kernels(apply_update, apply_many); });

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
  apply_update<<<1, 1, 0, stream_>>>(word, op, width, value, 0, nullptr);
  GICL_CUDA_CHECK(cudaGetLastError());
  return GICL_SUCCESS;
}

Status CudaCopier::update_many(char* base, const WordUpdate* u, uint32_t n, uint64_t* old) {
  apply_many<<<1, 1, 0, stream_>>>(base, u, n, reinterpret_cast<unsigned long long*>(old));
  GICL_CUDA_CHECK(cudaGetLastError());
  return GICL_SUCCESS;
}

Status CudaCopier::fetch_update(void* word, ProxyAtomic op, uint32_t width, uint64_t value,
                                uint64_t compare, uint64_t* old) {
  apply_update<<<1, 1, 0, stream_>>>(word, op, width, value, compare,
                                     reinterpret_cast<unsigned long long*>(old));
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
