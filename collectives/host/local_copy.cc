#include "collectives/host/local_copy.hpp"

#include <cstdint>

#include "collectives/direct/direct.cuh"
#include "common/cuda.hpp"
#include "core/comm.hpp"

namespace ccl::coll {
namespace {
constexpr size_t kCopyKernelBelow = size_t{64} << 20;
}  // namespace

Status local_copy(ccl_comm* comm, void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (dst == src || bytes == 0) return CCL_SUCCESS;
  const bool aligned =
      (reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % 16 == 0;
  bool kernel = aligned && bytes < kCopyKernelBelow;
  if (kernel && !comm->pdl) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    CCL_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
    kernel = capture == cudaStreamCaptureStatusNone;
  }
  if (kernel) {
    CCL_CUDA_CHECK(launch_copy(dst, src, bytes, {stream, comm->pdl}));
  } else {
    CCL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  }
  return CCL_SUCCESS;
}

}  // namespace ccl::coll
