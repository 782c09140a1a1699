// A copy within this rank's GPU, enqueued the fastest way measured: what a one-rank collective
// and a send/recv pair with the rank itself reduce to.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/status.hpp"

struct ccl_comm;

namespace ccl::coll {

/// `bytes` from `src` to `dst` on `stream` (nothing when they are the same address): a kernel
/// with both 16-byte aligned below 48 MiB eagerly (it enqueues faster than the copy engine and
/// copies up to 46 MiB faster) and below 32 MiB in a graph with PDL (its edge beats a memcpy
/// node), else cudaMemcpyAsync (docs/collectives.md "One rank" has the numbers).
Status local_copy(ccl_comm* comm, void* dst, const void* src, size_t bytes, cudaStream_t stream);

}  // namespace ccl::coll
