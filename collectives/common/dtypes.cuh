// SPDX-License-Identifier: Apache-2.0
// The one table of collective element types: storage type, accumulation type, name and size.
// Kernel instantiations (type x op x algorithm) are generated from GICL_FOR_EACH_DTYPE. Both lists
// follow the enums' order (launch_table.cuh checks it), which is NCCL's.
#pragma once

#include <cstdint>

#include "gicl/device/reduce_op.cuh"
#include "gicl/types.h"

// X(enum, storage type, accumulation type, name)
#define GICL_FOR_EACH_DTYPE(X)                             \
  X(gicl_int8, int8_t, int32_t, "int8")                    \
  X(gicl_uint8, uint8_t, uint32_t, "uint8")                \
  X(gicl_int32, int32_t, int32_t, "int32")                 \
  X(gicl_uint32, uint32_t, uint32_t, "uint32")             \
  X(gicl_int64, int64_t, int64_t, "int64")                 \
  X(gicl_uint64, uint64_t, uint64_t, "uint64")             \
  X(gicl_float16, __half, float, "float16")                \
  X(gicl_float32, float, float, "float32")                 \
  X(gicl_float64, double, double, "float64")               \
  X(gicl_bfloat16, __nv_bfloat16, float, "bfloat16")       \
  X(gicl_float8_e4m3, __nv_fp8_e4m3, float, "float8_e4m3") \
  X(gicl_float8_e5m2, __nv_fp8_e5m2, float, "float8_e5m2")

#define GICL_FOR_EACH_REDOP(X) \
  X(gicl_sum, "sum") X(gicl_prod, "prod") X(gicl_max, "max") X(gicl_min, "min") X(gicl_avg, "avg")

namespace gicl::coll {

template <gicl_datatype_t D>
struct DType;

// The table's accumulation column must agree with the device API's (one rounding rule).
#define GICL_DTYPE_TRAITS(e, T, A, name)                                           \
  template <>                                                                      \
  struct DType<e> {                                                                \
    using Storage = T;                                                             \
    using Acc = A;                                                                 \
    static constexpr const char* kName = name;                                     \
    static_assert(std::is_same_v<A, dev::AccOf<T>>, "accumulation type of " name); \
  };
GICL_FOR_EACH_DTYPE(GICL_DTYPE_TRAITS)
#undef GICL_DTYPE_TRAITS

/// Bytes of one element; 0 for an unknown type (argument checks use it).
GICL_HDI size_t dtype_size(gicl_datatype_t d) {
  switch (d) {
#define GICL_DTYPE_SIZE(e, T, A, name) \
  case e:                              \
    return sizeof(T);
    GICL_FOR_EACH_DTYPE(GICL_DTYPE_SIZE)
#undef GICL_DTYPE_SIZE
    default:
      return 0;
  }
}

inline const char* dtype_name(gicl_datatype_t d) {
  switch (d) {
#define GICL_DTYPE_NAME(e, T, A, name) \
  case e:                              \
    return name;
    GICL_FOR_EACH_DTYPE(GICL_DTYPE_NAME)
#undef GICL_DTYPE_NAME
    default:
      return "unknown";
  }
}

inline const char* redop_name(gicl_redop_t op) {
  switch (op) {
#define GICL_REDOP_NAME(e, name) \
  case e:                        \
    return name;
    GICL_FOR_EACH_REDOP(GICL_REDOP_NAME)
#undef GICL_REDOP_NAME
    default:
      return "unknown";
  }
}

using dev::combine;
using dev::finish;
using dev::from_acc;
using dev::to_acc;

/// Reduces `n` inputs in rank order 0..n-1 (the canonical order every algorithm uses under
/// GICL_DETERMINISTIC=1) and stores the result in the storage type.
template <gicl_datatype_t D, gicl_redop_t Op>
GICL_HDI typename DType<D>::Storage reduce_canonical(const typename DType<D>::Storage* const* in,
                                                     int n, size_t i) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  A acc = to_acc<T, A>(in[0][i]);
  for (int r = 1; r < n; ++r) acc = combine<Op, A>(acc, to_acc<T, A>(in[r][i]));
  return from_acc<T, A>(finish<Op, A, T>(acc, n));
}

}  // namespace gicl::coll
