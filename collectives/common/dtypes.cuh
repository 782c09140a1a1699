// The one table of collective element types: storage type, accumulation type, name and size.
// Kernel instantiations (type x op x algorithm) are generated from CCL_FOR_EACH_DTYPE, with
// CCL_DTYPE_FILTER narrowing it in development builds.
#pragma once

#include <cstdint>

#include "ccl/device/reduce_op.cuh"
#include "ccl/types.h"

// X(enum, storage type, accumulation type, name)
#define CCL_FOR_EACH_DTYPE(X)                             \
  X(ccl_int8, int8_t, int32_t, "int8")                    \
  X(ccl_uint8, uint8_t, uint32_t, "uint8")                \
  X(ccl_int32, int32_t, int32_t, "int32")                 \
  X(ccl_uint32, uint32_t, uint32_t, "uint32")             \
  X(ccl_int64, int64_t, int64_t, "int64")                 \
  X(ccl_uint64, uint64_t, uint64_t, "uint64")             \
  X(ccl_float16, __half, float, "float16")                \
  X(ccl_bfloat16, __nv_bfloat16, float, "bfloat16")       \
  X(ccl_float32, float, float, "float32")                 \
  X(ccl_float64, double, double, "float64")               \
  X(ccl_float8_e4m3, __nv_fp8_e4m3, float, "float8_e4m3") \
  X(ccl_float8_e5m2, __nv_fp8_e5m2, float, "float8_e5m2")

#define CCL_FOR_EACH_REDOP(X) \
  X(ccl_sum, "sum") X(ccl_prod, "prod") X(ccl_min, "min") X(ccl_max, "max") X(ccl_avg, "avg")

namespace ccl::coll {

template <ccl_datatype_t D>
struct DType;

// The table's accumulation column must agree with the device API's (one rounding rule).
#define CCL_DTYPE_TRAITS(e, T, A, name)                                            \
  template <>                                                                      \
  struct DType<e> {                                                                \
    using Storage = T;                                                             \
    using Acc = A;                                                                 \
    static constexpr const char* kName = name;                                     \
    static_assert(std::is_same_v<A, dev::AccOf<T>>, "accumulation type of " name); \
  };
CCL_FOR_EACH_DTYPE(CCL_DTYPE_TRAITS)
#undef CCL_DTYPE_TRAITS

/// Bytes of one element; 0 for an unknown type (argument checks use it).
CCL_HDI size_t dtype_size(ccl_datatype_t d) {
  switch (d) {
#define CCL_DTYPE_SIZE(e, T, A, name) \
  case e:                             \
    return sizeof(T);
    CCL_FOR_EACH_DTYPE(CCL_DTYPE_SIZE)
#undef CCL_DTYPE_SIZE
    default:
      return 0;
  }
}

inline const char* dtype_name(ccl_datatype_t d) {
  switch (d) {
#define CCL_DTYPE_NAME(e, T, A, name) \
  case e:                             \
    return name;
    CCL_FOR_EACH_DTYPE(CCL_DTYPE_NAME)
#undef CCL_DTYPE_NAME
    default:
      return "unknown";
  }
}

inline const char* redop_name(ccl_redop_t op) {
  switch (op) {
#define CCL_REDOP_NAME(e, name) \
  case e:                       \
    return name;
    CCL_FOR_EACH_REDOP(CCL_REDOP_NAME)
#undef CCL_REDOP_NAME
    default:
      return "unknown";
  }
}

using dev::combine;
using dev::finish;
using dev::from_acc;
using dev::to_acc;

/// Reduces `n` inputs in rank order 0..n-1 (the canonical order every algorithm uses under
/// CCL_DETERMINISTIC=1) and stores the result in the storage type.
template <ccl_datatype_t D, ccl_redop_t Op>
CCL_HDI typename DType<D>::Storage reduce_canonical(const typename DType<D>::Storage* const* in,
                                                    int n, size_t i) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  A acc = to_acc<T, A>(in[0][i]);
  for (int r = 1; r < n; ++r) acc = combine<Op, A>(acc, to_acc<T, A>(in[r][i]));
  return from_acc<T, A>(finish<Op, A>(acc, n));
}

}  // namespace ccl::coll
