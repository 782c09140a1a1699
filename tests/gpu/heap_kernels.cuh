// SPDX-License-Identifier: Apache-2.0
// Kernels the heap tests run: every rank stores a pattern into each peer's copy of a symmetric
// buffer through the peer mapping, and checks what its own copy received.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace gicl::test {

inline constexpr int kMaxPeers = 16;

struct PeerBuffers {
  int* ptr[kMaxPeers];  // where this process stores into rank r's copy (null: skip)
  int nranks;
};

/// Value rank `src` stores at index i of its block in rank `dst`'s buffer.
__host__ __device__ inline int pattern(uint32_t seed, int src, int dst, int64_t i) {
  uint32_t x = seed ^ (static_cast<uint32_t>(src) * 0x9e3779b9u) ^
               (static_cast<uint32_t>(dst) * 0x85ebca6bu) ^ static_cast<uint32_t>(i * 0xc2b2ae35u);
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  return static_cast<int>(x & 0x7fffffff);
}

/// Stores block `me` (n ints) of every peer's buffer.
cudaError_t write_peers(const PeerBuffers& peers, int me, int64_t n, uint32_t seed, cudaStream_t s);
/// Counts elements of the local buffer (nranks blocks of n ints) that differ from the pattern.
cudaError_t count_mismatches(const int* local, int nranks, int me, int64_t n, uint32_t seed,
                             unsigned long long* d_count, cudaStream_t s);

}  // namespace gicl::test
