// SPDX-License-Identifier: Apache-2.0
// Host memory standing in for GPU memory in the staged network path's tests: copies happen at
// once, signals and atomics are host atomics, and every marker is complete when polled.
#pragma once

#include <cstring>
#include <vector>

#include "proxy/copier.hpp"

namespace gicl::proxy {

class HostCopier : public Copier {
 public:
  Status to_host(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return GICL_SUCCESS;
  }
  Status to_device(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return GICL_SUCCESS;
  }
  Status update(void* word, ProxyAtomic op, uint32_t width, uint64_t value) override {
    if (width == 8) return apply(static_cast<uint64_t*>(word), op, value);
    return apply(static_cast<uint32_t*>(word), op, static_cast<uint32_t>(value));
  }
  Status mark(uint64_t token) override {
    marks_.push_back(token);
    return GICL_SUCCESS;
  }
  Status poll(std::vector<uint64_t>* done) override {
    done->insert(done->end(), marks_.begin(), marks_.end());
    marks_.clear();
    return GICL_SUCCESS;
  }

 private:
  template <typename T>
  static Status apply(T* w, ProxyAtomic op, T v) {
    switch (op) {
      case ProxyAtomic::kSet:
        __atomic_store_n(w, v, __ATOMIC_RELEASE);
        break;
      case ProxyAtomic::kAdd:
        __atomic_fetch_add(w, v, __ATOMIC_RELEASE);
        break;
      case ProxyAtomic::kAnd:
        __atomic_fetch_and(w, v, __ATOMIC_RELEASE);
        break;
      case ProxyAtomic::kOr:
        __atomic_fetch_or(w, v, __ATOMIC_RELEASE);
        break;
      case ProxyAtomic::kXor:
        __atomic_fetch_xor(w, v, __ATOMIC_RELEASE);
        break;
    }
    return GICL_SUCCESS;
  }

  std::vector<uint64_t> marks_;
};

}  // namespace gicl::proxy
