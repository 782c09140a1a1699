// SPDX-License-Identifier: Apache-2.0
#include "proxy/ring_memory.hpp"

#include <cuda_runtime_api.h>

#include <cstring>

#include "common/cuda.hpp"

namespace gicl::proxy {

Status RingMemory::create(int device, uint32_t slots, std::unique_ptr<RingMemory>* out) {
  if (slots < kProxyMaxSlots || (slots & (slots - 1)) != 0)
    return GICL_FAIL(GICL_INVALID_ARGUMENT, "ring slots: %u is not a power of two >= %u", slots,
                     kProxyMaxSlots);
  std::unique_ptr<RingMemory> m(new RingMemory(device));
  DeviceScope scope(device);
  RelaxedCapture relaxed;
  const size_t slot_bytes = size_t{slots} * sizeof(ProxySlot);
  const size_t result_bytes = size_t{slots} * sizeof(ProxyResult);
  const size_t bytes = slot_bytes + sizeof(Words) + result_bytes;
  GICL_CUDA_CHECK(cudaHostAlloc(&m->pinned_, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(m->pinned_, 0, bytes);
  void* dev_view = nullptr;
  GICL_CUDA_CHECK(cudaHostGetDevicePointer(&dev_view, m->pinned_, 0));
  // head, tail cache, result tickets, then one turn word per result slot.
  const size_t dev_bytes = (3 + size_t{slots}) * sizeof(unsigned long long);
  GICL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&m->dev_), dev_bytes));
  GICL_CHECK(zero_device(m->dev_, dev_bytes));
  auto* host_words = reinterpret_cast<Words*>(static_cast<char*>(m->pinned_) + slot_bytes);
  auto* dev_words = reinterpret_cast<Words*>(static_cast<char*>(dev_view) + slot_bytes);
  auto* host_results = reinterpret_cast<ProxyResult*>(host_words + 1);
  auto* dev_results = reinterpret_cast<ProxyResult*>(dev_words + 1);
  m->host_.reset(new Host{static_cast<ProxySlot*>(m->pinned_), host_words, host_results});
  m->ring_.slots = static_cast<ProxySlot*>(dev_view);
  m->ring_.head = m->dev_;
  m->ring_.tail_cache = m->dev_ + 1;
  m->ring_.tail = &dev_words->tail;
  m->ring_.done = &dev_words->done;
  m->ring_.failed = &dev_words->failed;
  m->ring_.size = slots;
  m->ring_.version = kProxyRingVersion;
  m->ring_.results = dev_results;
  m->ring_.result_next = m->dev_ + 2;
  m->ring_.result_turns = m->dev_ + 3;
  m->ring_.results_size = slots;
  *out = std::move(m);
  return GICL_SUCCESS;
}

RingMemory::~RingMemory() {
  DeviceScope scope(device_);
  // Teardown: nothing to report to; a failure here leaks at most this ring.
  if (dev_ != nullptr) (void)cudaFree(dev_);
  if (pinned_ != nullptr) (void)cudaFreeHost(pinned_);
}

}  // namespace gicl::proxy
