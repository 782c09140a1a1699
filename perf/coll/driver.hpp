// SPDX-License-Identifier: Apache-2.0
// The shared driver of the collective benchmarks (the nccl-tests src/common.cu model): each
// *_perf.cu fills a CollDesc; the driver sets up ranks (one process per GPU under gicl-run /
// mpirun / srun, or -g GPUs in one process), sweeps sizes, checks results, times out-of-place and
// in-place runs with CUDA events (optionally inside a CUDA graph), runs NCCL side by side with
// --compare-nccl, and prints the nccl-tests table (+ NCCL columns, the ratio and gicl's host
// enqueue time per call).
#pragma once

#include <cuda_runtime_api.h>

#include "gicl/gicl.h"
#include "nccl_loader.hpp"
#include "values.hpp"

namespace perf {

/// A call's buffers for a benchmark size of `elems` elements (nccl-tests' getCollByteCount): the
/// count passed to the call, the elements of the send and receive buffers, and where in the
/// receive buffer the in-place call's send and receive parts start (nccl-tests' layout).
struct Counts {
  size_t count;
  size_t send_elems, recv_elems;
  size_t in_place_send_off = 0, in_place_recv_off = 0;  // elements into the receive buffer
};

/// Everything a benchmark knows of its collective (the nccl-tests model: each *_perf.cu owns its
/// collective's counts, expected values and bus-bandwidth factor; the driver only runs, times,
/// checks and prints). docs/performance.md lists the factors.
struct CollDesc {
  const char* name;  // nccl-tests name: "all_reduce"
  bool has_op;
  bool has_root;
  Counts (*counts)(size_t elems, int nranks, int rank);
  /// Expected element i of `rank`'s receive buffer (inputs: values.hpp's input_value).
  double (*expected)(int rank, int nranks, size_t i, size_t count, gicl_redop_t op, int root,
                     bool is_unsigned);
  /// busbw = algbw x factor, so that busbw compares with the links' speed whatever n is.
  double (*busbw_factor)(int nranks);
  const char* busbw_formula;  // the factor as a formula, for the usage text
  gicl_result_t (*run)(const void* send, void* recv, size_t count, gicl_datatype_t d,
                       gicl_redop_t op, int root, gicl_comm_t comm, cudaStream_t s);
  int (*run_nccl)(const Nccl& nccl, const void* send, void* recv, size_t count, gicl_datatype_t d,
                  gicl_redop_t op, int root, void* comm, cudaStream_t s);
  /// Point to point has no in-place form (a rank's send would race with the data arriving).
  bool in_place = true;
  /// Reduce: only the root's receive buffer holds a result.
  bool root_receives_only = false;
  /// A second way NCCL runs the same call where the loaded NCCL has it (`nccl_alt_ready`); each
  /// size reports the faster of the two, NCCL's best. `nccl_ways` names them for the header.
  decltype(run_nccl) run_nccl_alt = nullptr;
  bool (*nccl_alt_ready)(const Nccl& nccl) = nullptr;
  const char* nccl_ways = nullptr;
  /// --p2p: gicl's call made of grouped gicl_send / gicl_recv, as nccl-tests makes NCCL's
  /// (alltoall).
  decltype(run) run_p2p = nullptr;
};

int run_driver(int argc, char** argv, const CollDesc& desc);

/// For NCCL call sequences (alltoall, sendrecv): this process's rank and the rank count.
int nccl_rank();
int nccl_ranks();

}  // namespace perf
