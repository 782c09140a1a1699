// Launchers of the small kernels behind the host stream operations (stream_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "ccl/device_abi.h"
#include "common/kernel_launch.hpp"

namespace ccl {

cudaError_t launch_signal(uint64_t* remote_sig, uint64_t value, int op, const Launch& l);
cudaError_t launch_wait_signal(ccl_device_comm_t c, const uint64_t* sig, int cmp, uint64_t value,
                               const Launch& l);
cudaError_t launch_barrier(ccl_device_comm_t c, const Launch& l);
cudaError_t launch_quiet(const Launch& l);

}  // namespace ccl
