// A copy within this rank's GPU, enqueued the fastest way measured: what a one-rank collective
// and a send/recv pair with the rank itself reduce to.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/status.hpp"

struct ccl_comm;

namespace ccl::coll {

/// `bytes` from `src` to `dst` on `stream` (nothing when they are the same address): a kernel
/// below 64 MiB with both 16-byte aligned (eagerly it enqueues faster than the copy engine and
/// copies 32 MiB faster, and in a graph its PDL edge beats a memcpy node), else
/// cudaMemcpyAsync, which also takes a graph without PDL (collectives/direct/copy.cu and
/// docs/collectives.md "One rank" have the numbers).
Status local_copy(ccl_comm* comm, void* dst, const void* src, size_t bytes, cudaStream_t stream);

}  // namespace ccl::coll
