// SPDX-License-Identifier: Apache-2.0
// The copies of the staged network path between the heap (GPU memory) and pinned staging
// buffers, and the signal and atomic updates applied to the heap at the target: issued in order on
// one queue, with completion markers the proxy polls. CudaCopier (proxy/cuda_copier.hpp) runs them
// on a stream of the proxy's own; tests use host memory in place of GPU memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.hpp"
#include "gicl/device/detail/proxy_ring.h"

namespace gicl::proxy {

/// One word update of update_many: the heap offset of a `width`-byte word, the update, its
/// operands.
struct WordUpdate {
  uint64_t word;
  uint64_t value;
  uint64_t compare;  // kCompareSwap's
  uint32_t op;       // ProxyAtomic
  uint32_t width;
};
static_assert(sizeof(WordUpdate) == 32, "WordUpdate is read by a kernel from host memory");

class Copier {
 public:
  virtual ~Copier() = default;
  /// Heap (device) to staging (host).
  virtual Status to_host(void* dst, const void* src, size_t bytes) = 0;
  /// Staging (host) to heap (device).
  virtual Status to_device(void* dst, const void* src, size_t bytes) = 0;
  /// An update of a `width`-byte word in the heap (4 or 8, aligned): a signal (set or add, 8
  /// bytes) or a non-fetching atomic; atomic with respect to the GPU's own atomics on the word,
  /// after everything issued before it.
  virtual Status update(void* word, ProxyAtomic op, uint32_t width, uint64_t value) = 0;
  /// update() that also returns the word's old value (zero-extended) into `*old`, host memory
  /// the copier writes in issue order (a staging slot; readable once a later marker completes).
  /// Every ProxyAtomic: kSet swaps, kCompareSwap stores `value` where the word equals `compare`,
  /// kLoad only reads.
  virtual Status fetch_update(void* word, ProxyAtomic op, uint32_t width, uint64_t value,
                              uint64_t compare, uint64_t* old) = 0;
  /// update() of `n` words of the heap at `base`, in order, as one step after everything issued
  /// before it: `u` is in pinned host memory that stays unchanged until a later marker completes.
  /// With `old` (host memory, n words), fetch_update()'s: each word's old value there.
  virtual Status update_many(char* base, const WordUpdate* u, uint32_t n, uint64_t* old) = 0;
  /// A marker: `token` is returned by poll() once everything issued before it has completed.
  virtual Status mark(uint64_t token) = 0;
  /// Appends the tokens whose markers completed, in issue order.
  virtual Status poll(std::vector<uint64_t>* done) = 0;
  /// Where its GPU work stands, for the report of a step that never completed ("" where it has
  /// nothing to say).
  virtual std::string state() const { return ""; }
};

}  // namespace gicl::proxy
