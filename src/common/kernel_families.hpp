// SPDX-License-Identifier: Apache-2.0
// Every kernel the library launches belongs to a family that registers a loader here, so that
// communicator init can load them all into the device's context before any of them runs.
// Why: under lazy module loading (CUDA's default) a kernel is loaded at its first launch, and
// that load waits for every kernel running in the context. A first launch that a running kernel
// of the same context waits for (a stream waiting for a signal this process sends next on
// another stream; ranks of one process on one GPU) would then stall until GICL_WAIT_TIMEOUT.
#pragma once

#include <cuda_runtime.h>

#include "common/status.hpp"

namespace gicl {

using KernelLoader = cudaError_t (*)();

/// Registers a family's loader; one static object in the file that defines the family's kernels.
struct KernelFamily {
  KernelFamily(const char* name, KernelLoader load);
};

/// Records a loaded kernel's local memory per thread (load_kernel_families reports the most);
/// only loaders call it, and they run under load_kernel_families's lock.
void note_kernel_local_bytes(size_t bytes);

/// Loads one kernel into the current context (an attribute query loads a lazily loaded kernel).
template <typename... Params>
cudaError_t load_kernel(void (*kernel)(Params...)) {
  cudaFuncAttributes attrs;
  const cudaError_t e = cudaFuncGetAttributes(&attrs, kernel);
  if (e == cudaSuccess) note_kernel_local_bytes(attrs.localSizeBytes);
  return e;
}

/// Loads each kernel in turn; the first error ends it.
template <typename... Kernels>
cudaError_t load_kernels(Kernels... kernels) {
  cudaError_t e = cudaSuccess;
  ((e == cudaSuccess ? (e = load_kernel(kernels)) : e), ...);
  return e;
}

/// Runs every registered loader on `device` (the current device), once per context of the
/// process: again after cudaDeviceReset (GICL_PRELOAD_KERNELS=0: never). The error names the
/// family whose kernels did not load.
Status load_kernel_families(int device);

}  // namespace gicl
