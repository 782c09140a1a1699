// Where and how a collective kernel is enqueued (host side; the kernels' half is launch.cuh).
#pragma once

#include <cuda_runtime_api.h>

namespace ccl::coll {

struct Launch {
  cudaStream_t stream;
  bool pdl;  // programmatic dependent launch (CCL_PDL=1 on sm_90 and later): see launch.cuh
};

}  // namespace ccl::coll
