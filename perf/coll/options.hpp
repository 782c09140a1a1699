// SPDX-License-Identifier: Apache-2.0
// Command line of the collective benchmarks: the nccl-tests flags plus gicl's extras. Pure host
// code (unit-tested in tests/unit/perf_options_test.cc).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gicl/types.h"

namespace perf {

/// NCCL's buffer configurations --compare-nccl can time.
inline constexpr unsigned kNcclSymmetric = 1;  // ncclMemAlloc + symmetric windows
inline constexpr unsigned kNcclDefault = 2;    // cudaMalloc, nothing registered

struct CollOptions {
  size_t min_bytes = 32, max_bytes = 32 << 20;
  double factor = 2;     // -f: multiply (nccl-tests' stepfactor)
  size_t increment = 0;  // -i: add instead of multiply when > 0
  int gpus = 1;          // -g: GPUs per process
  int iters = 20, warmup = 5;
  int agg_iters = 1;  // -m: calls per iteration, grouped (nccl-tests' aggregation)
  int check = 1;      // -c: checked calls per size and layout (0: none)
  std::vector<gicl_datatype_t> dtypes{gicl_float32};  // -d (all: every type, each its own sweep)
  std::vector<gicl_redop_t> ops{gicl_sum};            // -o (all: every reduction)
  int root = 0;                                       // -r
  bool all_roots = false;                             // -r all: every rank in turn
  bool blocking = false;                              // -z: synchronize after every operation
  int graph_iters = 0;  // -G: capture -n operations in a CUDA graph, replay it
  int average = 1;      // -a: 0 rank 0, 1 average, 2 min, 3 max over ranks
  // -R (as nccl-tests): 0 cudaMalloc buffers (staged), 1 cudaMalloc + gicl_comm_register,
  // 2 symmetric buffers from gicl_mem_alloc.
  int registration = 0;
  std::string algo;           // --algo
  bool p2p = false;           // --p2p: gicl's call as grouped gicl_send / gicl_recv (alltoall)
  bool compare_nccl = false;  // --compare-nccl[=best|sym|default]
  // NCCL's configurations to time, the faster per size reported (kNccl* bits): both by default.
  unsigned nccl_configs = 0;
  std::string json;   // -J / --output_file / --json FILE
  bool help = false;  // -h / --help: print the usage and exit 0
};

/// Parses argv (nccl-tests' short and long flags); on error returns false with a message naming
/// the flag.
bool parse_coll_options(int argc, char** argv, CollOptions* o, std::string* error);
/// The flags' descriptions, for the usage text of every collective benchmark.
const char* coll_usage();
/// The message sizes of a sweep (bytes, rounded down to whole elements, at least one element).
std::vector<size_t> sweep(const CollOptions& o, size_t element_bytes);
bool parse_dtype(const std::string& s, gicl_datatype_t* d);
bool parse_op(const std::string& s, gicl_redop_t* op);
const char* dtype_label(gicl_datatype_t d);
const char* op_label(gicl_redop_t op);

}  // namespace perf
