// SPDX-License-Identifier: Apache-2.0
// Launchers of the small kernels behind the host stream operations (stream_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "common/kernel_launch.hpp"
#include "gicl/device_abi.h"

namespace gicl {

cudaError_t launch_signal(uint64_t* remote_sig, uint64_t value, int op, const Launch& l);
cudaError_t launch_wait_signal(gicl_device_comm_t c, const uint64_t* sig, int cmp, uint64_t value,
                               const Launch& l);
cudaError_t launch_barrier(gicl_device_comm_t c, const Launch& l);
cudaError_t launch_quiet(const Launch& l);

}  // namespace gicl
