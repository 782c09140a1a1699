// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the multi-process GPU tests: GPU counting without initialising CUDA in the
// parent, rank set-up on a GPU, and CUDA checks inside ranks.
#pragma once

#include <algorithm>

#include "common/cuda.hpp"
#include "gicl/gicl.h"
#include "mp/fork_ranks.hpp"

namespace gicl::test {

// Counted in a child so that the test process never initialises CUDA before it forks ranks.
inline int visible_gpus() {
  static int n = -1;
  if (n < 0) n = fork_ranks(1, [](int) { return std::min(cuda_device_count(), 100); })[0].code;
  return n;
}

#define REQUIRE_GPUS(k)                                                              \
  do {                                                                               \
    if (::gicl::test::visible_gpus() < (k))                                          \
      GTEST_SKIP() << "needs " << (k) << " GPU(s); " << ::gicl::test::visible_gpus() \
                   << " visible";                                                    \
  } while (0)

#define RANK_CUDA(expr)                                                     \
  do {                                                                      \
    cudaError_t e_ = (expr);                                                \
    RANK_CHECK(e_ == cudaSuccess, "%s: %s", #expr, cudaGetErrorString(e_)); \
  } while (0)

/// Rank r of n on GPU r % gpus.
inline int init_on_gpu(gicl_unique_id_t id, int nranks, int rank, gicl_comm_t* comm) {
  RANK_CUDA(cudaSetDevice(rank % cuda_device_count()));
  RANK_OK(gicl_comm_init_rank(comm, nranks, id, rank));
  return 0;
}

}  // namespace gicl::test
