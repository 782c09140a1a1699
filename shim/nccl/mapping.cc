// SPDX-License-Identifier: Apache-2.0
#include "shim/nccl/mapping.hpp"

namespace gicl::nccl {

static_assert(static_cast<int>(ncclInt8) == gicl_int8 &&
                  static_cast<int>(ncclUint64) == gicl_uint64 &&
                  static_cast<int>(ncclFloat16) == gicl_float16 &&
                  static_cast<int>(ncclBfloat16) == gicl_bfloat16 &&
                  static_cast<int>(ncclFloat8e5m2) == gicl_float8_e5m2 &&
                  static_cast<int>(ncclNumTypes) == gicl_num_datatypes,
              "NCCL's and gicl's type numbers agree");
static_assert(static_cast<int>(ncclSum) == gicl_sum && static_cast<int>(ncclAvg) == gicl_avg &&
                  static_cast<int>(ncclNumOps) == gicl_num_redops,
              "NCCL's and gicl's reduction numbers agree");

ncclResult_t to_nccl(gicl_result_t r) {
  switch (r) {
    case GICL_SUCCESS:
      return ncclSuccess;
    case GICL_UNHANDLED_CUDA_ERROR:
      return ncclUnhandledCudaError;
    case GICL_SYSTEM_ERROR:
      return ncclSystemError;
    case GICL_INTERNAL_ERROR:
      return ncclInternalError;
    case GICL_INVALID_ARGUMENT:
      return ncclInvalidArgument;
    case GICL_INVALID_USAGE:
    case GICL_ABORTED:
    case GICL_UNSUPPORTED:
      return ncclInvalidUsage;
    case GICL_REMOTE_ERROR:
    case GICL_TIMEOUT:
      return ncclRemoteError;
    case GICL_IN_PROGRESS:
      return ncclInProgress;
    default:
      return ncclInternalError;
  }
}

bool to_gicl(ncclDataType_t t, gicl_datatype_t* out) {
  const int v = static_cast<int>(t);
  if (v < 0 || v >= ncclNumTypes) return false;
  *out = static_cast<gicl_datatype_t>(v);
  return true;
}

bool to_gicl(ncclRedOp_t op, gicl_redop_t* out) {
  const int v = static_cast<int>(op);
  if (v < 0 || v >= ncclNumOps) return false;
  *out = static_cast<gicl_redop_t>(v);
  return true;
}

}  // namespace gicl::nccl
