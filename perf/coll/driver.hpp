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

namespace perf {

/// Which collective a benchmark runs: decides counts, buffer sizes, expected values and the
/// in-place layout (nccl-tests conventions: the size is the largest buffer).
enum class Kind {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv
};

struct CollDesc {
  const char* name;  // nccl-tests name: "all_reduce"
  Kind kind;
  bool has_op;
  bool has_root;
  gicl_result_t (*run)(const void* send, void* recv, size_t count, gicl_datatype_t d,
                       gicl_redop_t op, int root, gicl_comm_t comm, cudaStream_t s);
  int (*run_nccl)(const Nccl& nccl, const void* send, void* recv, size_t count, gicl_datatype_t d,
                  gicl_redop_t op, int root, void* comm, cudaStream_t s);
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
