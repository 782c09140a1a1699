// SPDX-License-Identifier: Apache-2.0
// How the library's kernels (collectives, host stream operations) are launched: on the caller's
// stream, with programmatic dependent launch (PDL) where the communicator allows it. PDL lets the
// GPU schedule a kernel's blocks while the previous kernel in the stream drains, instead of after
// it has completed and flushed: on back-to-back small collectives (a CUDA graph of them) that gap
// is a large part of each call. Ordering is unchanged because every kernel launched here calls
// pdl_prologue() before it touches memory.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "common/kernel_launch.hpp"

namespace gicl {

/// First statement of every kernel launched through launch_kernel(). The wait returns once the
/// previous grid of the stream has completed and its writes are visible (at once for a launch
/// without PDL); the trigger then lets the next PDL kernel start launching. The next kernel waits
/// for this one's completion in its own prologue, so triggering this early gives it nothing but a
/// head start.
__device__ __forceinline__ void pdl_prologue() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Two ways to move parameter reads before pdl_prologue()'s wait. The compiler places a
// parameter read at its first use, after the wait, where each first read of a parameter line in
// a launch misses the constant cache, one miss after another on a small call's critical path.
// Which way is faster depends on the kernel (measured on one H200, one-rank calls in a graph):
// the LL kernel's 8-byte call costs 1.07 us with keep_in_registers, 1.15 with read_before_wait;
// the LL128 kernel's 32 KiB call 2.55 us with read_before_wait, 2.67-2.80 with
// keep_in_registers. The direct and pipe kernels use read_before_wait (0.1-0.3 us a call).
namespace detail {
template <typename T>
__device__ __forceinline__ uint64_t param_bits(T v) {
  if constexpr (sizeof(T) == 8) {
    uint64_t x;
    memcpy(&x, &v, 8);
    return x;
  } else {
    static_assert(sizeof(T) <= 4, "read_before_wait takes scalars and pointers");
    return static_cast<uint64_t>(v);
  }
}

template <typename T>
__device__ __forceinline__ void keep_one(T& v) {
  if constexpr (sizeof(T) == 8) {
    uint64_t x;
    memcpy(&x, &v, 8);
    asm volatile("" : "+l"(x));
    memcpy(&v, &x, 8);
  } else {
    static_assert(sizeof(T) <= 4, "keep_in_registers takes scalars and pointers");
    uint32_t x = static_cast<uint32_t>(v);
    asm volatile("" : "+r"(x));
    v = static_cast<T>(x);
  }
}
}  // namespace detail

/// The XOR of the given parameters' bits: several parameters as one read_before_wait argument.
template <typename... T>
__device__ __forceinline__ uint64_t param_xor(T... v) {
  return (detail::param_bits(v) ^ ...);
}

/// Reads the given parameters here: a volatile shared store of their XOR keeps the reads before
/// the wait (the compiler may move arithmetic across the wait, not memory operations). Pass every
/// parameter the kernel's short path uses.
template <typename... T>
__device__ __forceinline__ void read_before_wait(T... v) {
  __shared__ uint64_t sink;
  const uint64_t x = param_xor(v...);
  if (threadIdx.x == 0) *static_cast<volatile uint64_t*>(&sink) = x;
}

/// Makes the values a kernel computed from its parameters opaque results of this point, so that
/// the front end computes them, reading their parameters, before the wait (the back end may still
/// re-read a parameter after it, from a line now in the cache).
template <typename... T>
__device__ __forceinline__ void keep_in_registers(T&... v) {
  (detail::keep_one(v), ...);
}

/// kernel<<<grid, block, 0, l.stream>>>(args...), with the PDL attribute when l.pdl.
template <typename... Params, typename... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), int grid, int block, const Launch& l,
                          Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(grid));
  cfg.blockDim = dim3(static_cast<unsigned>(block));
  cfg.dynamicSmemBytes = 0;
  cfg.stream = l.stream;
  cfg.attrs = attr;
  cfg.numAttrs = l.pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace gicl
