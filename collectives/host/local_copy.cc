// SPDX-License-Identifier: Apache-2.0
#include "collectives/host/local_copy.hpp"

#include <cstdint>

#include "collectives/direct/direct.cuh"
#include "common/cuda.hpp"
#include "core/comm.hpp"

namespace gicl::coll {
namespace {
// Where the copy engine catches up (one H100 and one H200, beside NCCL's copy in the same call):
// eagerly the kernel is ahead to 46 MiB and behind from 52; in a graph a memcpy node matches it
// at 32 MiB and is 2-6 % ahead from 36 to 60 (H100).
constexpr size_t kKernelBelow = size_t{48} << 20, kKernelInGraphBelow = size_t{32} << 20;
}  // namespace

Status local_copy(gicl_comm* comm, void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  const CopySpec c{reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), bytes};
  if (!copy_moves(c)) return GICL_SUCCESS;
  bool kernel = copy_aligned(c) && bytes < kKernelBelow;
  // In a graph only with PDL (its edge is what beats a memcpy node) and below the graph cutoff;
  // small calls ask nothing when PDL is on.
  if (kernel && (!comm->pdl || bytes >= kKernelInGraphBelow)) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    GICL_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
    kernel = capture == cudaStreamCaptureStatusNone;
  }
  if (kernel) {
    GICL_CUDA_CHECK(launch_copy(dst, src, bytes, {stream, comm->pdl}));
  } else {
    GICL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  }
  return GICL_SUCCESS;
}

Status local_copies(gicl_comm* comm, const std::vector<CopySpec>& copies, cudaStream_t stream) {
  // A list's total stays below the graph cutoff, where one kernel is ahead eagerly and captured.
  std::vector<CopySpec> list;
  for (const std::vector<int>& members : copy_lists(copies, kKernelInGraphBelow)) {
    if (members.size() == 1) {
      const CopySpec& c = copies[static_cast<size_t>(members[0])];
      GICL_CHECK(local_copy(comm, reinterpret_cast<void*>(c.dst),
                            reinterpret_cast<const void*>(c.src), c.bytes, stream));
      continue;
    }
    list.clear();
    for (int i : members) list.push_back(copies[static_cast<size_t>(i)]);
    GICL_CUDA_CHECK(
        launch_copy_list(list.data(), static_cast<int>(list.size()), {stream, comm->pdl}));
  }
  return GICL_SUCCESS;
}

}  // namespace gicl::coll
