// SPDX-License-Identifier: Apache-2.0
// GICL_HD: functions the kernels, the host planner and the CPU simulator share.
#pragma once

#if defined(__CUDACC__)
#define GICL_HD __host__ __device__ __forceinline__
#else
#define GICL_HD inline
#endif
