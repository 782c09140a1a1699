// SPDX-License-Identifier: Apache-2.0
// The memory of one request ring (gicl/device/detail/proxy_ring.h): the slots, the proxy's
// words (tail, done, failed) and the fetching operations' answers in pinned host memory mapped
// into the GPU, the producers' words (head, tail cache, result tickets and turns) in device
// memory. Slots sit where the proxy reads them at local-memory cost
// and the GPU writes them with posted PCIe stores; tickets are taken with device-memory atomics,
// which would cross PCIe as host-memory atomics.
#pragma once

#include <cstdint>
#include <memory>

#include "common/status.hpp"
#include "gicl/device/detail/proxy_ring.h"

namespace gicl::proxy {

class RingMemory {
 public:
  /// A zeroed ring of `slots` (a power of two >= kProxyMaxSlots) for kernels on `device`.
  static Status create(int device, uint32_t slots, std::unique_ptr<RingMemory>* out);
  ~RingMemory();
  RingMemory(const RingMemory&) = delete;
  RingMemory& operator=(const RingMemory&) = delete;

  /// What kernels take (device pointers).
  const ProxyRing& ring() const { return ring_; }
  /// The proxy's view (host pointers).
  const ProxySlot* slots() const { return host_->slots; }
  uint64_t* tail() { return &host_->words->tail; }
  uint64_t* done() { return &host_->words->done; }
  uint32_t* failed_word() { return &host_->words->failed; }
  ProxyResult* results() { return host_->results; }
  /// Tells the producers the proxy failed: their waits end and report GICL_DEVICE_ERROR_PROXY.
  void mark_failed() { __atomic_store_n(&host_->words->failed, 1u, __ATOMIC_RELEASE); }

 private:
  struct Words {  // the proxy's words, one cache line each: producers poll them over PCIe
    alignas(64) uint64_t tail;
    alignas(64) uint64_t done;
    alignas(64) uint32_t failed;
  };
  struct Host {
    ProxySlot* slots;
    Words* words;
    ProxyResult* results;  // ring().results_size answers, after the words
  };

  RingMemory(int device) : device_(device) {}

  int device_;
  void* pinned_ = nullptr;             // slots, then Words, then the answers
  unsigned long long* dev_ = nullptr;  // head, tail cache, result tickets, result turns
  std::unique_ptr<Host> host_;
  ProxyRing ring_{};
};

}  // namespace gicl::proxy
