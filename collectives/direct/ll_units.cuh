// The 8-byte units the LL protocols carry: loads and stores of any alignment and length (a rank
// block need not be a multiple of 8 bytes), and where rank block j of a buffer starts. Shared by
// the LL (ll.cu) and LL128 (ll128.cu) kernels.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ccl::coll {

/// Whether the unit at byte `off` of `p` is one aligned 8-byte word within `bytes`.
__device__ __forceinline__ bool whole_word(const char* p, size_t off, size_t bytes) {
  return off + 8 <= bytes && (reinterpret_cast<uintptr_t>(p + off) & 7) == 0;
}

/// 8 bytes of `p` from byte `off` (zero past `bytes`), any alignment.
__device__ __forceinline__ uint64_t load_unit(const char* p, size_t off, size_t bytes) {
  if (whole_word(p, off, bytes)) return *reinterpret_cast<const uint64_t*>(p + off);
  uint64_t v = 0;
  for (int k = 0; k < 8 && off + k < bytes; ++k)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[off + k])) << (8 * k);
  return v;
}

__device__ __forceinline__ void store_unit(char* p, size_t off, size_t bytes, uint64_t v) {
  if (whole_word(p, off, bytes)) {
    *reinterpret_cast<uint64_t*>(p + off) = v;
    return;
  }
  for (int k = 0; k < 8 && off + k < bytes; ++k) p[off + k] = static_cast<char>(v >> (8 * k));
}

/// Where one block of units goes or comes from: rank blocks of `bb` bytes.
__device__ __forceinline__ const char* blk(const char* p, int j, size_t bb) {
  return p + static_cast<size_t>(j) * bb;
}

}  // namespace ccl::coll
