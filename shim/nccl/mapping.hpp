// SPDX-License-Identifier: Apache-2.0
// NCCL's numbers to gicl's and back: results, data types, built-in reductions. The types and
// reductions share their numbers; the results differ where gicl has codes NCCL 2.28 lacks.
#pragma once

#include "gicl/gicl.h"
#include "shim/nccl/nccl_abi.h"

namespace gicl::nccl {

/// gicl's result as NCCL 2.28 reports it: codes it lacks become the nearest it has (a timeout,
/// a peer late: ncclRemoteError; aborted or unsupported: ncclInvalidUsage, the message saying
/// which in ncclGetLastError).
ncclResult_t to_nccl(gicl_result_t r);

/// False where `t` is not one of NCCL 2.28's types.
bool to_gicl(ncclDataType_t t, gicl_datatype_t* out);

/// False where `op` is not a built-in reduction (a custom one is the caller's to look up).
bool to_gicl(ncclRedOp_t op, gicl_redop_t* out);

}  // namespace gicl::nccl
