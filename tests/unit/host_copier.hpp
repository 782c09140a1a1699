// SPDX-License-Identifier: Apache-2.0
// Host memory standing in for GPU memory in the staged network path's tests: copies happen at
// once, signals are host atomics, and every marker is complete when polled.
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
  Status signal(uint64_t* word, bool add, uint64_t value) override {
    if (add)
      __atomic_fetch_add(word, value, __ATOMIC_RELEASE);
    else
      __atomic_store_n(word, value, __ATOMIC_RELEASE);
    return GICL_SUCCESS;
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
  std::vector<uint64_t> marks_;
};

}  // namespace gicl::proxy
