/// @file types.h
/// Element types and reduction operations of the collectives (values are stable ABI).
#ifndef CCL_TYPES_H_
#define CCL_TYPES_H_

#ifdef __cplusplus
extern "C" {
#endif

/// The public enums are int-sized in C and C++ alike; in C++ every int is also one of their
/// values, so a value a C caller passes outside the list reaches the argument checks (an
/// error naming it) instead of being undefined behaviour in the library.
#ifdef __cplusplus
#define CCL_ENUM_INT : int
#else
#define CCL_ENUM_INT
#endif

/// Element type of a collective buffer.
typedef enum CCL_ENUM_INT {
  ccl_int8 = 0,
  ccl_uint8 = 1,
  ccl_int32 = 2,
  ccl_uint32 = 3,
  ccl_int64 = 4,
  ccl_uint64 = 5,
  ccl_float16 = 6,
  ccl_bfloat16 = 7,
  ccl_float32 = 8,
  ccl_float64 = 9,
  ccl_float8_e4m3 = 10,
  ccl_float8_e5m2 = 11,
  ccl_num_datatypes = 12
} ccl_datatype_t;

/// Reduction of a collective. Low-precision types (fp16, bf16, fp8) accumulate in fp32; avg
/// divides the sum by the rank count (integers: truncating division).
typedef enum CCL_ENUM_INT {
  ccl_sum = 0,
  ccl_prod = 1,
  ccl_min = 2,
  ccl_max = 3,
  ccl_avg = 4,
  ccl_num_redops = 5
} ccl_redop_t;

#ifdef __cplusplus
}
#endif

#endif  // CCL_TYPES_H_
