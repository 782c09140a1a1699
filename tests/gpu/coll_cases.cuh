// SPDX-License-Identifier: Apache-2.0
// What the collective GPU tests share: the call of each collective, one case (buffers, data,
// bitwise check against the host's reference, run twice), the matrix of one collective, a fresh
// communicator, and the steps of the matrix test that live in other files.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "collectives/schedule/tables.hpp"
#include "gicl/gicl.h"

namespace gicl::test {

using coll::Collective;

gicl_result_t call(gicl_comm_t comm, Collective c, const void* send, void* recv, size_t count,
                   gicl_datatype_t d, gicl_redop_t op, int root, cudaStream_t s);

// kRegistered: cudaMalloc memory registered with gicl_comm_register (zero copy through IPC).
// The matrix runs the first four; the in-place windows serve the in-place alltoall's swap.
enum class Mem {
  kDevice,
  kInPlace,
  kSymmetric,
  kRegistered,
  kInPlaceSymmetric,
  kInPlaceRegistered
};

struct Case {
  Collective coll;
  gicl_redop_t op;
  int root;
  size_t count;
  Mem mem;
  size_t offset;  // elements past an aligned address (unaligned buffers)
  bool exact;
  uint32_t seed;
};

/// Runs one case twice and compares bitwise with the reference (and run 2 with run 1): 0 when
/// right, else non-zero after printing what differed.
int run_case_any(gicl_comm_t comm, int me, int n, gicl_datatype_t d, const Case& k, cudaStream_t s,
                 const char* label);
/// The matrix of one collective under the current algorithm settings.
int matrix(gicl_comm_t comm, int me, int n, Collective c, uint32_t seed, cudaStream_t s,
           const char* label, bool full);
/// A communicator that reads the current environment (the tuner reads it at the first call).
int fresh_comm(gicl_comm_t world, int me, gicl_comm_t* out);
/// Copies the communicator's copy-engine proxy has issued (0 without a proxy) into *out.
int proxy_copies(gicl_comm_t comm, uint64_t* out);
/// A ring exchange in one group on `s`: `bytes` from sym to the next rank, into sym + bytes from
/// the previous one, every byte checked (`tag` varies them from call to call; `label` names the
/// call in a failure, with the stream's and the communicator's errors).
int ring_exchange(gicl_comm_t comm, int me, int n, char* sym, size_t bytes, int tag, cudaStream_t s,
                  const char* label);

/// Steps of Collectives.EveryAlgorithmTypeAndReduction defined beside their subject:
/// the copy-engine collectives (host_exchange_test.cu), send/recv (p2p_test.cu), and calls back
/// to back and in stream order (coll_order_test.cu).
int copy_engine(gicl_comm_t world, int me, int n, cudaStream_t s);
int point_to_point(gicl_comm_t comm, int me, int n, cudaStream_t s);
int stress(gicl_comm_t comm, int me, int n, cudaStream_t s);
int push_stress(gicl_comm_t world, int me, int n, cudaStream_t s);
int dependent_launch(gicl_comm_t world, int me, int n, cudaStream_t s);

}  // namespace gicl::test
