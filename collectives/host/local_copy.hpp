// SPDX-License-Identifier: Apache-2.0
// A copy within this rank's GPU, enqueued the fastest way measured: what a one-rank collective
// and a send/recv pair with the rank itself reduce to.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "collectives/schedule/copy_lists.hpp"

#include "common/status.hpp"

struct gicl_comm;

namespace gicl::coll {

/// `bytes` from `src` to `dst` on `stream` (nothing when they are the same address): a kernel
/// with both 16-byte aligned below 48 MiB eagerly (it enqueues faster than the copy engine and
/// copies up to 46 MiB faster) and below 32 MiB in a graph with PDL (its edge beats a memcpy
/// node), else cudaMemcpyAsync (docs/collectives.md "One rank" has the numbers).
Status local_copy(gicl_comm* comm, void* dst, const void* src, size_t bytes, cudaStream_t stream);

/// Several copies on `stream`, in as few launches as copy_lists allows: a list of small aligned
/// copies is one kernel (eagerly or in a graph: one node beats a memcpy node a copy), the rest
/// local_copy each. The copies run in no particular order, so no copy may write what another
/// reads or writes (a group's receives are distinct buffers, as in NCCL).
Status local_copies(gicl_comm* comm, const std::vector<CopySpec>& copies, cudaStream_t stream);

}  // namespace gicl::coll
