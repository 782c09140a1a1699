// SPDX-License-Identifier: Apache-2.0
// The element arithmetic of every reduction, shared by the device-side team collectives and the
// host collectives' kernels so both round the same way: the accumulation type of each element
// type, the conversions to and from it, and the operators. Host-compilable (the host collectives'
// argument checks and CPU reference include it through collectives/common/dtypes.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "gicl/types.h"

#if defined(__CUDACC__)
#define GICL_HDI __host__ __device__ __forceinline__
#else
#define GICL_HDI inline
#endif

namespace gicl::dev {

template <typename T>
inline constexpr bool kIsLowFloat =
    std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16> ||
    std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>;

/// The accumulation type of T: fp16, bf16 and fp8 accumulate in fp32 (one rounding at the end);
/// 8-bit integers in 32 bits (their sums and products wrap alike; finish() takes avg's sum back to
/// 8 bits before it divides); every other type in itself.
template <typename T>
using AccOf = std::conditional_t<
    kIsLowFloat<T>, float,
    std::conditional_t<std::is_same_v<T, int8_t>, int32_t,
                       std::conditional_t<std::is_same_v<T, uint8_t>, uint32_t, T>>>;

/// Storage -> accumulation and back. Low-precision floats convert through float; the way back
/// rounds to nearest even and saturates fp8 to its finite range (as cuda_fp8's satfinite).
template <typename T, typename A = AccOf<T>>
GICL_HDI A to_acc(T v) {
  if constexpr (std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>)
    return static_cast<A>(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(v);
  else
    return static_cast<A>(v);
}

template <typename T, typename A = AccOf<T>>
GICL_HDI T from_acc(A v) {
  if constexpr (std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>)
    return T(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else
    return static_cast<T>(v);
}

/// One reduction step in the accumulation type (avg accumulates like sum; finish() divides).
/// Signed integers' sums and products wrap modulo 2^bits, as NCCL's do: computed in the unsigned
/// type (at least unsigned int, so that no promotion to int brings overflow back), where wrapping
/// is defined, then converted back (two's complement).
template <gicl_redop_t Op, typename A>
GICL_HDI A combine(A a, A b) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A> &&
                (Op == gicl_sum || Op == gicl_avg || Op == gicl_prod)) {
    using U = std::conditional_t<(sizeof(A) < sizeof(unsigned)), unsigned, std::make_unsigned_t<A>>;
    const U x = static_cast<U>(a), y = static_cast<U>(b);
    return static_cast<A>(Op == gicl_prod ? static_cast<U>(x * y) : static_cast<U>(x + y));
  } else if constexpr (Op == gicl_sum || Op == gicl_avg)
    return a + b;
  else if constexpr (Op == gicl_prod)
    return a * b;
  else if constexpr (Op == gicl_min)
    return b < a ? b : a;
  else
    return a < b ? b : a;
}

/// The accumulated value as the result: avg divides by the rank count. An 8-bit integer's sum is
/// first taken modulo its storage type, as a sum of that type wraps, so that avg is NCCL's (the
/// wrapped sum, divided, rounding toward zero) on every type.
template <gicl_redop_t Op, typename A, typename T = A>
GICL_HDI A finish(A acc, int nranks) {
  if constexpr (Op == gicl_avg && std::is_integral_v<T> && sizeof(T) < sizeof(A))
    return static_cast<A>(static_cast<T>(acc)) / static_cast<A>(nranks);
  else if constexpr (Op == gicl_avg)
    return acc / static_cast<A>(nranks);
  else
    return acc;
}

}  // namespace gicl::dev
