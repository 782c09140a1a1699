// SPDX-License-Identifier: Apache-2.0
// Where and how a library kernel is enqueued (host side; the kernels' half is kernel_launch.cuh).
#pragma once

#include <cuda_runtime_api.h>

namespace gicl {

struct Launch {
  cudaStream_t stream;
  bool pdl;  // programmatic dependent launch (gicl_comm::pdl): see kernel_launch.cuh
};

}  // namespace gicl
