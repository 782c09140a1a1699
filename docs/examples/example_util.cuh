// SPDX-License-Identifier: Apache-2.0
// What every example shares: start from the launcher environment, skip without a GPU, and fail
// loudly on any error. Start each example with gicl-run -n 2 ./example.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gicl/device.cuh"
#include "gicl/gicl.h"

#define EX_CUDA(x)                                                                            \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)
#define EX_GICL(x)                                                                           \
  do {                                                                                       \
    gicl_result_t r_ = (x);                                                                  \
    if (r_ != GICL_SUCCESS) {                                                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, gicl_get_last_error()); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

/// Exit code ctest reads as "skipped".
inline constexpr int kSkip = 77;

struct Example {
  gicl_comm_t comm;
  gicl_device_comm_t dc;
  int rank, n;
  cudaStream_t s;
};

inline Example example_start() {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("skipped: no GPU\n");
    std::exit(kSkip);
  }
  Example e{};
  EX_GICL(gicl_comm_init_env(&e.comm));
  EX_GICL(gicl_comm_rank(e.comm, &e.rank));
  EX_GICL(gicl_comm_size(e.comm, &e.n));
  EX_GICL(gicl_comm_get_device_comm(e.comm, &e.dc));
  EX_CUDA(cudaStreamCreateWithFlags(&e.s, cudaStreamNonBlocking));
  return e;
}

/// Checks the communicator did not go into error (a device wait timed out), then destroys it.
inline int example_finish(Example& e, long long wrong, const char* what) {
  gicl_result_t async;
  const char* msg = nullptr;
  EX_GICL(gicl_comm_get_async_error(e.comm, &async, &msg));
  if (async != GICL_SUCCESS) std::fprintf(stderr, "rank %d: device error: %s\n", e.rank, msg);
  std::printf("rank %d: %s: %s (%lld wrong)\n", e.rank, what,
              wrong == 0 && async == GICL_SUCCESS ? "OK" : "FAILED", wrong);
  EX_GICL(gicl_barrier_on_stream(e.comm, e.s));
  EX_CUDA(cudaStreamSynchronize(e.s));
  EX_GICL(gicl_comm_destroy(e.comm));
  return wrong == 0 && async == GICL_SUCCESS ? 0 : 1;
}
