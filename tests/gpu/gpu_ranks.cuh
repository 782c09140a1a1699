// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the multi-process GPU tests: GPU counting without initialising CUDA in the
// parent, rank set-up on a GPU, and CUDA checks inside ranks.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

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

/// Attribute `attr` of GPU 0 as a fresh process sees it with `percent` as its
/// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (nullptr: unset), 0 if the query fails (it travels as an
/// exit code). In a child, so that the test process never initialises CUDA before it forks ranks.
inline int gpu0_attribute(cudaDeviceAttr attr, const char* percent = nullptr) {
  return fork_ranks(1,
                    [&](int) {
                      if (percent != nullptr)
                        setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", percent, 1);
                      int v = 0;
                      return cudaDeviceGetAttribute(&v, attr, 0) == cudaSuccess ? v : 0;
                    })[0]
      .code;
}

inline bool mps_on_gpu0() {
  return gpu0_attribute(cudaDevAttrMpsEnabled) == 1;
}

/// k ranks, each on a GPU of its own or, under MPS, sharing the GPUs there are (init_on_gpu): a
/// test whose ranks wait for each other inside kernels needs their kernels to run at once, which
/// time-sliced processes on one GPU only do a slice at a time.
#define REQUIRE_GPU_EACH_OR_MPS(k)                                                          \
  do {                                                                                      \
    if (::gicl::test::visible_gpus() < (k) &&                                               \
        (::gicl::test::visible_gpus() < 1 || !::gicl::test::mps_on_gpu0()))                 \
      GTEST_SKIP() << "needs " << (k) << " GPUs, or MPS on GPU 0 (nvidia-cuda-mps-control " \
                   << "-d) for ranks to share one; " << ::gicl::test::visible_gpus()        \
                   << " visible";                                                           \
  } while (0)

#define RANK_CUDA(expr)                                                     \
  do {                                                                      \
    cudaError_t e_ = (expr);                                                \
    RANK_CHECK(e_ == cudaSuccess, "%s: %s", #expr, cudaGetErrorString(e_)); \
  } while (0)

/// The network path over libfabric's tcp;ofi_rxm on loopback for rank r of n, made "remote" as
/// `how` says: "p2p_disable" (every peer through the network) or "hostid" (ranks [0, n/2) one
/// node, the others another); any other `how` leaves the machine's own node identity.
inline void use_network_path(const std::string& how, int n, int r) {
  setenv("GICL_OFI_PROVIDER", "tcp;ofi_rxm", 1);
  setenv("FI_TCP_IFACE", "lo", 1);
  setenv("GICL_NET", "OFI", 1);
  unsetenv("GICL_P2P_DISABLE");
  unsetenv("GICL_HOSTID");
  if (how == "p2p_disable") setenv("GICL_P2P_DISABLE", "1", 1);
  if (how == "hostid") setenv("GICL_HOSTID", r < n / 2 ? "node-a" : "node-b", 1);
}

/// `rank(k)` on n threads of this process at once; their results in k's order.
inline std::vector<int> thread_ranks(int n, const std::function<int(int)>& rank) {
  std::vector<int> rc(n, -1);
  std::vector<std::thread> t;
  for (int k = 0; k < n; ++k) t.emplace_back([&, k] { rc[k] = rank(k); });
  for (auto& th : t) th.join();
  return rc;
}

/// Rank r of n on GPU r % gpus.
inline int init_on_gpu(gicl_unique_id_t id, int nranks, int rank, gicl_comm_t* comm) {
  RANK_CUDA(cudaSetDevice(rank % cuda_device_count()));
  RANK_OK(gicl_comm_init_rank(comm, nranks, id, rank));
  return 0;
}

}  // namespace gicl::test
