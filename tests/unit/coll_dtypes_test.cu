// SPDX-License-Identifier: Apache-2.0
// The collective type table on the host: sizes and names for every type, conversions, fp32
// accumulation of low-precision types, every reduction, fp8 saturation.
#include <gtest/gtest.h>

#include <cstring>

#include "collectives/common/dtypes.cuh"

namespace gicl::coll {
namespace {

TEST(CollDtypes, SizesAndNamesForEveryType) {
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int d = 0; d < gicl_num_datatypes; ++d) {
    EXPECT_EQ(dtype_size(static_cast<gicl_datatype_t>(d)), sizes[d]) << d;
    EXPECT_STRNE(dtype_name(static_cast<gicl_datatype_t>(d)), "unknown") << d;
  }
  EXPECT_EQ(dtype_size(static_cast<gicl_datatype_t>(99)), 0u);
  for (int op = 0; op < gicl_num_redops; ++op)
    EXPECT_STRNE(redop_name(static_cast<gicl_redop_t>(op)), "unknown");
}

// The kernel tables follow the enums, whose values are NCCL's: NCCL's number for each type and
// reduction reaches the kernels of that type and reduction.
TEST(CollDtypes, NcclNumbersNameTheSameTypesAndReductions) {
  const char* types[] = {"int8",    "uint8",   "int32",   "uint32",   "int64",       "uint64",
                         "float16", "float32", "float64", "bfloat16", "float8_e4m3", "float8_e5m2"};
  for (int d = 0; d < gicl_num_datatypes; ++d)
    EXPECT_STREQ(dtype_name(static_cast<gicl_datatype_t>(d)), types[d]) << d;
  const char* ops[] = {"sum", "prod", "max", "min", "avg"};
  for (int op = 0; op < gicl_num_redops; ++op)
    EXPECT_STREQ(redop_name(static_cast<gicl_redop_t>(op)), ops[op]) << op;
}

template <gicl_datatype_t D>
float round_trip(float x) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  return static_cast<float>(to_acc<T, A>(from_acc<T, A>(static_cast<A>(x))));
}

TEST(CollDtypes, RepresentableValuesRoundTripExactly) {
  for (float x : {0.f, 1.f, -2.5f, 1024.f, 2047.f, 0.125f})
    EXPECT_EQ(round_trip<gicl_float16>(x), x);
  for (float x : {0.f, 1.f, -3.f, 256.f, 0.5f}) EXPECT_EQ(round_trip<gicl_bfloat16>(x), x);
  for (float x : {0.f, 0.5f, 1.f, 1.5f, -2.f, 448.f}) EXPECT_EQ(round_trip<gicl_float8_e4m3>(x), x);
  for (float x : {0.f, 1.f, -2.f, 57344.f, 0.25f}) EXPECT_EQ(round_trip<gicl_float8_e5m2>(x), x);
}

TEST(CollDtypes, Fp8SaturatesToItsFiniteRange) {
  EXPECT_EQ(round_trip<gicl_float8_e4m3>(1000.f), 448.f);
  EXPECT_EQ(round_trip<gicl_float8_e4m3>(-1000.f), -448.f);
  EXPECT_EQ(round_trip<gicl_float8_e5m2>(1e6f), 57344.f);
}

TEST(CollDtypes, LowPrecisionAccumulatesInFp32) {
  // In fp16, 2048 + 1 rounds back to 2048 (spacing 2), so fp16 accumulation would stay at 2048;
  // fp32 accumulation reaches 2051, which rounds to 2052.
  const __half v[4] = {__float2half(2048.f), __float2half(1.f), __float2half(1.f),
                       __float2half(1.f)};
  const __half* in[4] = {&v[0], &v[1], &v[2], &v[3]};
  EXPECT_EQ(__half2float(reduce_canonical<gicl_float16, gicl_sum>(in, 4, 0)), 2052.f);
  const __nv_bfloat16 b[3] = {__float2bfloat16(256.f), __float2bfloat16(1.f),
                              __float2bfloat16(1.f)};
  const __nv_bfloat16* bin[3] = {&b[0], &b[1], &b[2]};
  EXPECT_EQ(__bfloat162float(reduce_canonical<gicl_bfloat16, gicl_sum>(bin, 3, 0)), 258.f);
}

TEST(CollDtypes, EveryReduction) {
  const int32_t x[3] = {1, -2, 4};
  const int32_t* in[3] = {&x[0], &x[1], &x[2]};
  EXPECT_EQ((reduce_canonical<gicl_int32, gicl_sum>(in, 3, 0)), 3);
  EXPECT_EQ((reduce_canonical<gicl_int32, gicl_prod>(in, 3, 0)), -8);
  EXPECT_EQ((reduce_canonical<gicl_int32, gicl_min>(in, 3, 0)), -2);
  EXPECT_EQ((reduce_canonical<gicl_int32, gicl_max>(in, 3, 0)), 4);
  EXPECT_EQ((reduce_canonical<gicl_int32, gicl_avg>(in, 3, 0)), 1);  // 3 / 3
  const double d[2] = {1.5, 2.0};
  const double* din[2] = {&d[0], &d[1]};
  EXPECT_EQ((reduce_canonical<gicl_float64, gicl_avg>(din, 2, 0)), 1.75);
  const uint8_t u[2] = {200, 100};
  const uint8_t* uin[2] = {&u[0], &u[1]};
  EXPECT_EQ((reduce_canonical<gicl_uint8, gicl_sum>(uin, 2, 0)), 44);  // wraps like uint8
  // avg of 8-bit integers divides the wrapped sum, as NCCL does (and nccl-tests checks): 300
  // wraps to 44, then 44 / 2; int8 100 + 100 wraps to -56, then -56 / 2 rounds toward zero.
  EXPECT_EQ((reduce_canonical<gicl_uint8, gicl_avg>(uin, 2, 0)), 22);
  const int8_t s[3] = {100, 100, 1};
  const int8_t* sin[3] = {&s[0], &s[1], &s[2]};
  EXPECT_EQ((reduce_canonical<gicl_int8, gicl_avg>(sin, 2, 0)), -28);
  EXPECT_EQ((reduce_canonical<gicl_int8, gicl_avg>(sin, 3, 0)), -18);  // -55 / 3
  const int32_t big[2] = {2000000000, 2000000000};
  const int32_t* bin[2] = {&big[0], &big[1]};
  EXPECT_EQ((reduce_canonical<gicl_int32, gicl_avg>(bin, 2, 0)), -147483648);  // wraps, / 2
}

TEST(CollDtypes, CanonicalOrderIsBitwiseRepeatable) {
  float v[8];
  const float* in[8];
  for (int i = 0; i < 8; ++i) v[i] = 1.f / (3.f + i), in[i] = &v[i];
  const float a = reduce_canonical<gicl_float32, gicl_sum>(in, 8, 0);
  const float b = reduce_canonical<gicl_float32, gicl_sum>(in, 8, 0);
  EXPECT_EQ(std::memcmp(&a, &b, sizeof(float)), 0);
}

}  // namespace
}  // namespace gicl::coll
