// The one table of collective element types: storage type, accumulation type, name and size.
// Kernel instantiations (type x op x algorithm) are generated from CCL_FOR_EACH_DTYPE, with
// CCL_DTYPE_FILTER narrowing it in development builds.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "ccl/types.h"

#if defined(__CUDACC__)
#define CCL_HDI __host__ __device__ __forceinline__
#else
#define CCL_HDI inline
#endif

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

#define CCL_DTYPE_TRAITS(e, T, A, name)        \
  template <>                                  \
  struct DType<e> {                            \
    using Storage = T;                         \
    using Acc = A;                             \
    static constexpr const char* kName = name; \
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

/// Storage -> accumulation and back. Low-precision floats convert through float; the way back
/// rounds to nearest even and saturates fp8 to its finite range (as cuda_fp8's satfinite).
template <typename T, typename A>
CCL_HDI A to_acc(T v) {
  if constexpr (std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>)
    return static_cast<A>(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(v);
  else
    return static_cast<A>(v);
}

template <typename T, typename A>
CCL_HDI T from_acc(A v) {
  if constexpr (std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>)
    return T(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else
    return static_cast<T>(v);
}

/// The reduction in the accumulation type (avg accumulates like sum; finish() divides).
template <ccl_redop_t Op, typename A>
CCL_HDI A reduce(A a, A b) {
  if constexpr (Op == ccl_sum || Op == ccl_avg)
    return a + b;
  else if constexpr (Op == ccl_prod)
    return a * b;
  else if constexpr (Op == ccl_min)
    return b < a ? b : a;
  else
    return a < b ? b : a;
}

template <ccl_redop_t Op, typename A>
CCL_HDI A finish(A acc, int nranks) {
  if constexpr (Op == ccl_avg)
    return acc / static_cast<A>(nranks);
  else
    return acc;
}

/// Reduces `n` inputs in rank order 0..n-1 (the canonical order every algorithm uses under
/// CCL_DETERMINISTIC=1) and stores the result in the storage type.
template <ccl_datatype_t D, ccl_redop_t Op>
CCL_HDI typename DType<D>::Storage reduce_canonical(const typename DType<D>::Storage* const* in,
                                                    int n, size_t i) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  A acc = to_acc<T, A>(in[0][i]);
  for (int r = 1; r < n; ++r) acc = reduce<Op, A>(acc, to_acc<T, A>(in[r][i]));
  return from_acc<T, A>(finish<Op, A>(acc, n));
}

}  // namespace ccl::coll
