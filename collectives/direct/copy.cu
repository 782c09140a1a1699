// SPDX-License-Identifier: Apache-2.0
// The local copy kernel (collectives/host/local_copy.cc: one-rank collectives, whose result is
// their input, and send/recv pairs with the rank itself). Below kCopyKernelBelow this kernel beats
// cudaMemcpyAsync on one H200: eagerly it enqueues faster (host-bound), and in a graph its
// programmatic (PDL) edge costs less than a memcpy node's; without PDL the node is ahead in a
// graph, and from 64 MiB the copy engine is faster either way. The list kernel copies a group's
// several pairs with the rank itself in one launch (collectives/schedule/copy_lists.hpp).
#include <algorithm>

#include "collectives/direct/direct.cuh"
#include "common/kernel_families.hpp"
#include "common/kernel_launch.cuh"

namespace gicl::coll {
namespace {

constexpr int kThreads = 512;
// Four blocks per SM on an H200 (132 SMs): more only adds blocks that find nothing left.
constexpr size_t kMaxCopyBlocks = 528;

__global__ void __launch_bounds__(kThreads)
    copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, size_t n16, int tail) {
  read_before_wait(dst, src, n16);
  pdl_prologue();
  const size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
  for (size_t i = blockIdx.x * static_cast<size_t>(kThreads) + threadIdx.x; i < n16; i += stride)
    dst[i] = __ldg(src + i);
  // The last bytes of a length that is not a multiple of 16.
  if (blockIdx.x == 0 && threadIdx.x < tail)
    reinterpret_cast<char*>(dst + n16)[threadIdx.x] =
        reinterpret_cast<const char*>(src + n16)[threadIdx.x];
}

/// A list's copies as one range of 16-byte words (copy_list_word).
struct CopyListArgs {
  int n;
  size_t end[kMaxCopyList];
  uint4* dst[kMaxCopyList];
  const uint4* src[kMaxCopyList];
  uint8_t tail[kMaxCopyList];
};

// Every thread strides over the list's words as copy_kernel over one copy's, so small and large
// copies alike spread over the whole grid. __grid_constant__: the arrays are indexed at run time,
// which would otherwise copy them into each thread's local memory.
__global__ void __launch_bounds__(kThreads)
    copy_list_kernel(const __grid_constant__ CopyListArgs a) {
  read_before_wait(a.n, a.end[0], a.dst[0], a.src[0]);
  pdl_prologue();
  const size_t words = a.end[a.n - 1];
  const size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
  int c = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(kThreads) + threadIdx.x; i < words;
       i += stride) {
    const size_t j = copy_list_word(a.end, &c, i);
    a.dst[c][j] = __ldg(a.src[c] + j);
  }
  for (int t = blockIdx.x; t < a.n; t += gridDim.x)
    if (threadIdx.x < a.tail[t]) {
      const size_t w = a.end[t] - copy_list_begin(a.end, t);
      reinterpret_cast<char*>(a.dst[t] + w)[threadIdx.x] =
          reinterpret_cast<const char*>(a.src[t] + w)[threadIdx.x];
    }
}

size_t copy_blocks(size_t n16) {
  return std::clamp<size_t>((n16 + kThreads - 1) / kThreads, 1, kMaxCopyBlocks);
}

const KernelFamily kCopyKernels("copy", [] { return load_kernels(copy_kernel, copy_list_kernel); });

}  // namespace

cudaError_t launch_copy_list(const CopySpec* copies, int n, const Launch& l) {
  if (n < 1 || n > kMaxCopyList) return cudaErrorInvalidValue;
  CopyListArgs a{};
  a.n = n;
  copy_list_layout(copies, n, a.end, a.tail);
  for (int c = 0; c < n; ++c) {
    a.dst[c] = reinterpret_cast<uint4*>(copies[c].dst);
    a.src[c] = reinterpret_cast<const uint4*>(copies[c].src);
  }
  return launch_kernel(copy_list_kernel, static_cast<int>(copy_blocks(a.end[n - 1])), kThreads, l,
                       a);
}

cudaError_t launch_copy(void* dst, const void* src, size_t bytes, const Launch& l) {
  const size_t n16 = bytes / 16;
  return launch_kernel(copy_kernel, static_cast<int>(copy_blocks(n16)), kThreads, l,
                       static_cast<uint4*>(dst), static_cast<const uint4*>(src), n16,
                       static_cast<int>(bytes % 16));
}

}  // namespace gicl::coll
