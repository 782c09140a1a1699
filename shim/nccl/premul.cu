// SPDX-License-Identifier: Apache-2.0
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstring>

#include "shim/nccl/premul.hpp"

namespace gicl::nccl {
namespace {

template <typename T>
__device__ __forceinline__ T times(T x, T s) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(x * s);
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return x * s;
  } else {  // half, bfloat16, fp8: the exact product in float, rounded once to the type
    return T(static_cast<float>(x) * static_cast<float>(s));
  }
}

template <typename T>
__global__ void premul_kernel(const T* in, T* out, size_t n, const T* device_scalar,
                              T host_scalar) {
  const T s = device_scalar != nullptr ? *device_scalar : host_scalar;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = times(in[i], s);
}

template <typename T>
cudaError_t launch(const PreMulSum& op, const void* in, void* out, size_t n, cudaStream_t stream) {
  T host;
  std::memcpy(&host, &op.host_bits, sizeof(T));
  constexpr unsigned kThreads = 256;
  const size_t blocks = (n + kThreads - 1) / kThreads;
  premul_kernel<T><<<static_cast<unsigned>(blocks < 1024 ? blocks : 1024), kThreads, 0, stream>>>(
      static_cast<const T*>(in), static_cast<T*>(out), n, static_cast<const T*>(op.device_scalar),
      host);
  return cudaGetLastError();
}

/// Where the calling thread's stream capture mode is global, cudaMalloc would end another
/// thread's capture: relaxed for the allocation.
struct RelaxedCapture {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  RelaxedCapture() { (void)cudaThreadExchangeStreamCaptureMode(&mode); }
  ~RelaxedCapture() { (void)cudaThreadExchangeStreamCaptureMode(&mode); }
};

}  // namespace

cudaError_t premul(const PreMulSum& op, const void* in, void* out, size_t count,
                   cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  switch (op.type) {
    case ncclInt8:
      return launch<int8_t>(op, in, out, count, stream);
    case ncclUint8:
      return launch<uint8_t>(op, in, out, count, stream);
    case ncclInt32:
      return launch<int32_t>(op, in, out, count, stream);
    case ncclUint32:
      return launch<uint32_t>(op, in, out, count, stream);
    case ncclInt64:
      return launch<int64_t>(op, in, out, count, stream);
    case ncclUint64:
      return launch<uint64_t>(op, in, out, count, stream);
    case ncclFloat16:
      return launch<__half>(op, in, out, count, stream);
    case ncclFloat32:
      return launch<float>(op, in, out, count, stream);
    case ncclFloat64:
      return launch<double>(op, in, out, count, stream);
    case ncclBfloat16:
      return launch<__nv_bfloat16>(op, in, out, count, stream);
    case ncclFloat8e4m3:
      return launch<__nv_fp8_e4m3>(op, in, out, count, stream);
    case ncclFloat8e5m2:
      return launch<__nv_fp8_e5m2>(op, in, out, count, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

PremulScratch::~PremulScratch() {
  int prev = -1;
  const bool switch_device = device_ >= 0 && cudaGetDevice(&prev) == cudaSuccess && prev != device_;
  if (switch_device) (void)cudaSetDevice(device_);
  for (auto& [stream, list] : bufs_)
    for (Buf& b : list) (void)cudaFree(b.p);
  for (void* p : outgrown_) (void)cudaFree(p);
  if (switch_device) (void)cudaSetDevice(prev);
}

cudaError_t PremulScratch::get(cudaStream_t stream, size_t bytes, bool in_group, void** out) {
  std::vector<Buf>& list = bufs_[stream];
  const size_t k = in_group ? used_in_group_[stream]++ : 0;
  if (k >= list.size()) list.resize(k + 1);
  Buf& b = list[k];
  if (b.bytes < bytes) {
    void* p = nullptr;
    RelaxedCapture relaxed;
    if (const cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess) return e;
    if (b.p != nullptr) outgrown_.push_back(b.p);
    b = Buf{p, bytes};
  }
  *out = b.p;
  return cudaSuccess;
}

}  // namespace gicl::nccl
