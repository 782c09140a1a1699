// What every example shares: start from the launcher environment, skip without a GPU, and fail
// loudly on any error. Start each example with ccl-run -n 2 ./example.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ccl/ccl.h"
#include "ccl/device.cuh"

#define EX_CUDA(x)                                                                            \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)
#define EX_CCL(x)                                                                           \
  do {                                                                                      \
    ccl_result_t r_ = (x);                                                                  \
    if (r_ != CCL_SUCCESS) {                                                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, ccl_get_last_error()); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

/// Exit code ctest reads as "skipped".
inline constexpr int kSkip = 77;

struct Example {
  ccl_comm_t comm;
  ccl_device_comm_t dc;
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
  EX_CCL(ccl_comm_init_env(&e.comm));
  EX_CCL(ccl_comm_rank(e.comm, &e.rank));
  EX_CCL(ccl_comm_size(e.comm, &e.n));
  EX_CCL(ccl_comm_get_device_comm(e.comm, &e.dc));
  EX_CUDA(cudaStreamCreateWithFlags(&e.s, cudaStreamNonBlocking));
  return e;
}

/// Checks the communicator did not go into error (a device wait timed out), then destroys it.
inline int example_finish(Example& e, long long wrong, const char* what) {
  ccl_result_t async;
  const char* msg = nullptr;
  EX_CCL(ccl_comm_get_async_error(e.comm, &async, &msg));
  if (async != CCL_SUCCESS) std::fprintf(stderr, "rank %d: device error: %s\n", e.rank, msg);
  std::printf("rank %d: %s: %s (%lld wrong)\n", e.rank, what,
              wrong == 0 && async == CCL_SUCCESS ? "OK" : "FAILED", wrong);
  EX_CCL(ccl_barrier_on_stream(e.comm, e.s));
  EX_CUDA(cudaStreamSynchronize(e.s));
  EX_CCL(ccl_comm_destroy(e.comm));
  return wrong == 0 && async == CCL_SUCCESS ? 0 : 1;
}
