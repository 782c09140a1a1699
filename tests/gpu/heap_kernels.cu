// SPDX-License-Identifier: Apache-2.0
#include "gpu/heap_kernels.cuh"

namespace gicl::test {
namespace {

__global__ void write_peers_kernel(PeerBuffers peers, int me, int64_t n, uint32_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int r = 0; r < peers.nranks; ++r) {
    int* dst = peers.ptr[r];
    if (dst == nullptr) continue;
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += stride)
      dst[me * n + i] = pattern(seed, me, r, i);
  }
}

__global__ void count_kernel(const int* local, int nranks, int me, int64_t n, uint32_t seed,
                             unsigned long long* count) {
  const int64_t total = nranks * n;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += stride)
    bad += local[k] != pattern(seed, static_cast<int>(k / n), me, k % n);
  if (bad) atomicAdd(count, bad);
}

}  // namespace

cudaError_t write_peers(const PeerBuffers& peers, int me, int64_t n, uint32_t seed,
                        cudaStream_t s) {
  write_peers_kernel<<<132, 256, 0, s>>>(peers, me, n, seed);
  return cudaGetLastError();
}

cudaError_t count_mismatches(const int* local, int nranks, int me, int64_t n, uint32_t seed,
                             unsigned long long* d_count, cudaStream_t s) {
  cudaError_t e = cudaMemsetAsync(d_count, 0, sizeof(*d_count), s);
  if (e != cudaSuccess) return e;
  count_kernel<<<132, 256, 0, s>>>(local, nranks, me, n, seed, d_count);
  return cudaGetLastError();
}

}  // namespace gicl::test
