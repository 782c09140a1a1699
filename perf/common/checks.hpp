// Check macros of every benchmark binary: a failed CUDA or ccl call prints where and why, then
// exits (a benchmark has nothing sensible to continue with).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#include "ccl/ccl.h"

#define PERF_CUDA(x)                                                                          \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(3);                                                                           \
    }                                                                                         \
  } while (0)
#define PERF_CCL(x)                                                                         \
  do {                                                                                      \
    ccl_result_t r_ = (x);                                                                  \
    if (r_ != CCL_SUCCESS) {                                                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, ccl_get_last_error()); \
      std::exit(4);                                                                         \
    }                                                                                       \
  } while (0)
