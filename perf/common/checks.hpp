// SPDX-License-Identifier: Apache-2.0
// Check macros of every benchmark binary: a failed CUDA or gicl call prints where and why, then
// exits (a benchmark has nothing sensible to continue with).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#include "gicl/gicl.h"

#define PERF_CUDA(x)                                                                          \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(3);                                                                           \
    }                                                                                         \
  } while (0)
#define PERF_GICL(x)                                                                         \
  do {                                                                                       \
    gicl_result_t r_ = (x);                                                                  \
    if (r_ != GICL_SUCCESS) {                                                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, gicl_get_last_error()); \
      std::exit(4);                                                                          \
    }                                                                                        \
  } while (0)
