// SPDX-License-Identifier: Apache-2.0
/// @file types.h
/// Element types and reduction operations of the collectives. The values are stable ABI and equal
/// to NCCL's (ncclDataType_t, ncclRedOp_t), so code that casts between the two keeps its meaning.
#ifndef GICL_TYPES_H_
#define GICL_TYPES_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The public enums are int-sized in C and C++ alike; in C++ every int is also one of their
/// values, so a value a C caller passes outside the list reaches the argument checks (an
/// error naming it) instead of being undefined behaviour in the library.
#ifdef __cplusplus
#define GICL_ENUM_INT : int
#else
#define GICL_ENUM_INT
#endif

/// Element type of a collective buffer.
typedef enum GICL_ENUM_INT {
  gicl_int8 = 0,
  gicl_uint8 = 1,
  gicl_int32 = 2,
  gicl_uint32 = 3,
  gicl_int64 = 4,
  gicl_uint64 = 5,
  gicl_float16 = 6,
  gicl_float32 = 7,
  gicl_float64 = 8,
  gicl_bfloat16 = 9,
  gicl_float8_e4m3 = 10,
  gicl_float8_e5m2 = 11,
  gicl_num_datatypes = 12
} gicl_datatype_t;

/// Bytes of one element of `t`; 0 for a value that is not a gicl_datatype_t.
static inline size_t gicl_datatype_size(gicl_datatype_t t) {
  switch (t) {
    case gicl_int8:
    case gicl_uint8:
    case gicl_float8_e4m3:
    case gicl_float8_e5m2:
      return 1;
    case gicl_float16:
    case gicl_bfloat16:
      return 2;
    case gicl_int32:
    case gicl_uint32:
    case gicl_float32:
      return 4;
    case gicl_int64:
    case gicl_uint64:
    case gicl_float64:
      return 8;
    default:
      return 0;
  }
}

/// Reduction of a collective. Low-precision types (fp16, bf16, fp8) accumulate in fp32; avg
/// divides the sum by the rank count (integers: the sum wrapped to the type, as a sum of that
/// type wraps, then truncating division, as NCCL computes it).
typedef enum GICL_ENUM_INT {
  gicl_sum = 0,
  gicl_prod = 1,
  gicl_max = 2,
  gicl_min = 3,
  gicl_avg = 4,
  gicl_num_redops = 5
} gicl_redop_t;

#ifdef __cplusplus
}
#endif

#endif  // GICL_TYPES_H_
