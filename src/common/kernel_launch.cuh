// How the library's kernels (collectives, host stream operations) are launched: on the caller's
// stream, with programmatic dependent launch (PDL) where the communicator allows it. PDL lets the
// GPU schedule a kernel's blocks while the previous kernel in the stream drains, instead of after
// it has completed and flushed: on back-to-back small collectives (a CUDA graph of them) that gap
// is a large part of each call. Ordering is unchanged because every kernel launched here calls
// pdl_prologue() before it touches memory.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "common/kernel_launch.hpp"

namespace ccl {

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

}  // namespace ccl
