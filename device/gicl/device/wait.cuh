// SPDX-License-Identifier: Apache-2.0
// Comparisons and the one bounded wait loop every device wait uses.
#pragma once

#include <type_traits>

#include "gicl/device/comm.cuh"

namespace gicl::dev {

/// Comparison of a wait or test (GICL_CMP_*).
enum class Cmp : uint32_t {
  kEq = GICL_CMP_EQ,
  kNe = GICL_CMP_NE,
  kGt = GICL_CMP_GT,
  kGe = GICL_CMP_GE,
  kLt = GICL_CMP_LT,
  kLe = GICL_CMP_LE,
  kAtLeast = GICL_CMP_AT_LEAST,  ///< wrap-safe counter compare: (int64)(seen - value) >= 0
};

/// True when `seen` satisfies `cmp` against `value`. kAtLeast treats both as counters that may
/// wrap: it holds while seen is at most 2^(bits-1) - 1 steps past value.
template <typename T>
__host__ __device__ __forceinline__ bool compare(T seen, Cmp cmp, T value) {
  switch (cmp) {
    case Cmp::kEq:
      return seen == value;
    case Cmp::kNe:
      return seen != value;
    case Cmp::kGt:
      return seen > value;
    case Cmp::kGe:
      return seen >= value;
    case Cmp::kLt:
      return seen < value;
    case Cmp::kLe:
      return seen <= value;
    case Cmp::kAtLeast: {
      using U = std::make_unsigned_t<T>;
      using I = std::make_signed_t<T>;
      return static_cast<I>(static_cast<U>(static_cast<U>(seen) - static_cast<U>(value))) >= 0;
    }
  }
  return false;
}

#include "gicl/device/detail/wait.cuh"
}  // namespace gicl::dev
