// SPDX-License-Identifier: Apache-2.0
// The staged network path's copier on a GPU: copies, signals and atomics in issue order on a
// non-blocking stream of its own (the copy engines move the bytes; a one-thread kernel applies
// each signal or atomic with a device atomic, so it composes with the GPU's own atomics on the
// word, and stores a fetching one's old value into pinned host memory through its unified
// address), and markers as events polled without blocking. Used by the proxy thread only.
#pragma once

#include <cuda_runtime_api.h>

#include <deque>
#include <memory>
#include <vector>

#include "proxy/copier.hpp"

namespace gicl::proxy {

class CudaCopier : public Copier {
 public:
  /// A copier for heap memory on `device`; the calling thread's current device is kept.
  static Status create(int device, std::unique_ptr<CudaCopier>* out);
  ~CudaCopier() override;
  CudaCopier(const CudaCopier&) = delete;
  CudaCopier& operator=(const CudaCopier&) = delete;

  Status to_host(void* dst, const void* src, size_t bytes) override;
  Status to_device(void* dst, const void* src, size_t bytes) override;
  Status update(void* word, ProxyAtomic op, uint32_t width, uint64_t value) override;
  Status fetch_update(void* word, ProxyAtomic op, uint32_t width, uint64_t value, uint64_t compare,
                      uint64_t* old) override;
  Status update_many(char* base, const WordUpdate* u, uint32_t n, uint64_t* old) override;
  Status mark(uint64_t token) override;
  Status poll(std::vector<uint64_t>* done) override;

 private:
  explicit CudaCopier(int device) : device_(device) {}

  struct Pending {
    cudaEvent_t event;
    uint64_t token;
  };
  int device_;
  cudaStream_t stream_ = nullptr;
  std::deque<Pending> pending_;
  std::vector<cudaEvent_t> free_events_;
};

}  // namespace gicl::proxy
