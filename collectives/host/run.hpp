// SPDX-License-Identifier: Apache-2.0
// One collective call from the host API to kernel launches: argument checks (nothing is enqueued
// when one fails), GICL_CHECK_MODE, the tuner's choice, and the launches in pieces.
#pragma once

#include <cuda_runtime_api.h>

#include "collectives/schedule/step.hpp"
#include "common/status.hpp"
#include "gicl/gicl.h"

namespace gicl::coll {

/// A call as the user made it. `count` follows NCCL: allreduce, broadcast, reduce: elements of
/// the buffer; reduce-scatter: elements received; allgather: elements sent; alltoall: elements
/// exchanged with each rank.
struct CollCall {
  Collective coll;
  const void* send;
  void* recv;
  size_t count;
  gicl_datatype_t dtype;
  gicl_redop_t op;  // reducing collectives only
  int root;         // broadcast, reduce only
  cudaStream_t stream;
};

/// Checks every scalar argument; GICL_INVALID_ARGUMENT names the first bad one.
Status check_collective(gicl_comm* comm, const CollCall& call, const char* fn);
/// One buffer: device memory of this process (or the symmetric heap) holding `bytes` from `p`;
/// GICL_INVALID_ARGUMENT naming `fn` and `name` otherwise.
Status check_buffer(gicl_comm* comm, const void* p, size_t bytes, const char* fn, const char* name);
/// Checks that the buffers are device memory holding what the call needs.
Status check_buffers(gicl_comm* comm, const CollCall& call, const char* fn);
/// The window address of [p, p + bytes) for the peers: its heap offset, or where `registered`
/// allows it, its place in a gicl_comm_register'ed buffer; false when it has to be staged.
bool window_of(gicl_comm* comm, const void* p, size_t bytes, bool registered, uint64_t* w);
/// Whether `comm`'s collectives meet the other ranks' hosts before they are enqueued (the
/// GICL_CHECK_MODE comparison, the copy-engine path's window exchange): a thread driving several
/// communicators must then not run their calls one after another.
Status meets_on_host(gicl_comm* comm, bool* meets);
/// Runs a checked call on its stream: GICL_CHECK_MODE, buffer checks, then the launches.
Status run_collective(gicl_comm* comm, const CollCall& call);

}  // namespace gicl::coll
