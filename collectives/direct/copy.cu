// The local copy kernel (collectives/host/local_copy.cc: one-rank collectives, whose result is
// their input, and send/recv pairs with the rank itself). Below kCopyKernelBelow this kernel beats
// cudaMemcpyAsync on one H200: eagerly it enqueues faster (3.8-4.7 us against 5.1-5.2 a call,
// host-bound), and in a graph its programmatic (PDL) edge costs less than a memcpy node's (8 B
// 0.72-0.82 us against 0.98-1.02, 2 MiB 1.48 against 1.58); without PDL the node is ahead in a
// graph (0.87 against 0.95 us), and from 64 MiB the copy engine is faster either way
// (perf/results/2026-11-24_h200_one_rank.md).
#include <algorithm>

#include "collectives/direct/direct.cuh"
#include "common/kernel_launch.cuh"

namespace ccl::coll {
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

}  // namespace

cudaError_t launch_copy(void* dst, const void* src, size_t bytes, const Launch& l) {
  const size_t n16 = bytes / 16;
  const size_t blocks = std::clamp<size_t>((n16 + kThreads - 1) / kThreads, 1, kMaxCopyBlocks);
  return launch_kernel(copy_kernel, static_cast<int>(blocks), kThreads, l, static_cast<uint4*>(dst),
                       static_cast<const uint4*>(src), n16, static_cast<int>(bytes % 16));
}

}  // namespace ccl::coll
