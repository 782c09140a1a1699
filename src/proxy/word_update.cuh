// SPDX-License-Identifier: Apache-2.0
// One update of a heap word by the staged network path's GPU side (the copier's kernels and the
// copy agent): a device atomic, so it composes with the GPU's own atomics on the word.
#pragma once

#include "gicl/device/detail/proxy_ring.h"

namespace gicl::proxy {

template <typename T>
__device__ __forceinline__ T apply_word(T* w, ProxyAtomic op, T v, T compare) {
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

/// A `width`-byte word (4 or 8) updated; its old value, zero-extended.
__device__ __forceinline__ unsigned long long apply_width(void* word, ProxyAtomic op,
                                                          uint32_t width, unsigned long long value,
                                                          unsigned long long compare) {
  if (width == 8) return apply_word(static_cast<unsigned long long*>(word), op, value, compare);
  return apply_word(static_cast<unsigned int*>(word), op, static_cast<unsigned int>(value),
                    static_cast<unsigned int>(compare));
}

}  // namespace gicl::proxy
