// SPDX-License-Identifier: Apache-2.0
// The public enums' values are ABI: datatypes and reductions equal NCCL's (ncclDataType_t,
// ncclRedOp_t in nccl.h, written out here), so code ported from NCCL that casts an enum keeps
// its type and operation. A change to any value fails this file's compilation.
#include "gicl/gicl.h"

namespace {

static_assert(gicl_int8 == 0 && gicl_uint8 == 1 && gicl_int32 == 2 && gicl_uint32 == 3);
static_assert(gicl_int64 == 4 && gicl_uint64 == 5);
static_assert(gicl_float16 == 6 && gicl_float32 == 7 && gicl_float64 == 8 && gicl_bfloat16 == 9);
static_assert(gicl_float8_e4m3 == 10 && gicl_float8_e5m2 == 11 && gicl_num_datatypes == 12);

static_assert(gicl_sum == 0 && gicl_prod == 1 && gicl_max == 2 && gicl_min == 3 && gicl_avg == 4);
static_assert(gicl_num_redops == 5);

static_assert(GICL_SUCCESS == 0 && GICL_UNHANDLED_CUDA_ERROR == 1 && GICL_SYSTEM_ERROR == 2);
static_assert(GICL_INTERNAL_ERROR == 3 && GICL_INVALID_ARGUMENT == 4 && GICL_INVALID_USAGE == 5);
static_assert(GICL_REMOTE_ERROR == 6 && GICL_IN_PROGRESS == 7);

static_assert(sizeof(gicl_datatype_t) == sizeof(int) && sizeof(gicl_redop_t) == sizeof(int));

}  // namespace
