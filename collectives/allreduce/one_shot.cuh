// The one-shot allreduce launcher: every rank reads every peer's staged (or symmetric) input
// over NVLink and reduces it in rank order 0..n-1, so every rank computes bitwise the same result.
#pragma once

#include <cuda_runtime_api.h>

#include "ccl/ccl.h"
#include "collectives/common/coll_args.h"

namespace ccl::coll {

/// Launches one piece: `count` elements at `send` / `recv`. `zero_copy`: `send` is symmetric
/// and read in place by the peers (out of place only).
cudaError_t launch_one_shot(ccl_datatype_t dtype, ccl_redop_t op, const ccl_device_comm_t& c,
                            const CollScratch& s, const void* send, void* recv, size_t count,
                            bool zero_copy, int grid, cudaStream_t stream);

}  // namespace ccl::coll
