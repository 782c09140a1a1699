// SPDX-License-Identifier: Apache-2.0
// Host memory standing in for GPU memory in the staged network path, for the tests and the
// network benchmarks that run without a GPU (header only, not part of the library): copies happen
// at once, signals and atomics are host atomics, and every marker is complete when polled.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "proxy/copier.hpp"

namespace gicl::proxy {

class HostCopier : public Copier {
 public:
  Status to_host(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    ++to_host_calls;
    return GICL_SUCCESS;
  }
  Status to_device(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return GICL_SUCCESS;
  }
  Status update(void* word, ProxyAtomic op, uint32_t width, uint64_t value) override {
    uint64_t old;
    return fetch_update(word, op, width, value, 0, &old);
  }
  Status fetch_update(void* word, ProxyAtomic op, uint32_t width, uint64_t value, uint64_t compare,
                      uint64_t* old) override {
    if (width == 8) {
      *old = apply(static_cast<uint64_t*>(word), op, value, compare);
    } else {
      *old = apply(static_cast<uint32_t*>(word), op, static_cast<uint32_t>(value),
                   static_cast<uint32_t>(compare));
    }
    return GICL_SUCCESS;
  }
  Status update_many(char* base, const WordUpdate* u, uint32_t n, uint64_t* old) override {
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t was = 0;
      GICL_CHECK(fetch_update(base + u[i].word, static_cast<ProxyAtomic>(u[i].op), u[i].width,
                              u[i].value, u[i].compare, &was));
      if (old != nullptr) old[i] = was;
    }
    return GICL_SUCCESS;
  }
  Status mark(uint64_t token) override {
    marks_.push_back(token);
    return GICL_SUCCESS;
  }
  Status poll(std::vector<uint64_t>* done) override {
    if (hold_marks) return GICL_SUCCESS;
    done->insert(done->end(), marks_.begin(), marks_.end());
    marks_.clear();
    return GICL_SUCCESS;
  }

  std::string state() const override {
    return hold_marks ? "host copier: " + std::to_string(marks_.size()) + " markers held" : "";
  }

  size_t to_host_calls = 0;  // copies out of the heap so far (a put's staging copies, gets)
  bool hold_marks = false;   // a GPU that runs none of the copier's work: no marker completes

 private:
  template <typename T>
  static T apply(T* w, ProxyAtomic op, T v, T compare) {
    switch (op) {
      case ProxyAtomic::kSet:
        return __atomic_exchange_n(w, v, __ATOMIC_ACQ_REL);
      case ProxyAtomic::kAdd:
        return __atomic_fetch_add(w, v, __ATOMIC_ACQ_REL);
      case ProxyAtomic::kAnd:
        return __atomic_fetch_and(w, v, __ATOMIC_ACQ_REL);
      case ProxyAtomic::kOr:
        return __atomic_fetch_or(w, v, __ATOMIC_ACQ_REL);
      case ProxyAtomic::kXor:
        return __atomic_fetch_xor(w, v, __ATOMIC_ACQ_REL);
      case ProxyAtomic::kCompareSwap:
        __atomic_compare_exchange_n(w, &compare, v, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        return compare;  // the old value, whether it was swapped or not
      case ProxyAtomic::kLoad:
        return __atomic_load_n(w, __ATOMIC_ACQUIRE);
    }
    return 0;
  }

  std::vector<uint64_t> marks_;
};

}  // namespace gicl::proxy
