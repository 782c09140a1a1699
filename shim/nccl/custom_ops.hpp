// SPDX-License-Identifier: Apache-2.0
// A communicator's custom reductions (ncclRedOpCreatePreMulSum): each rank's input multiplied by
// its own scalar, then summed. Their numbers start at ncclNumOps, are unique per communicator and
// are reused once destroyed, as NCCL numbers them.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "shim/nccl/nccl_abi.h"

namespace gicl::nccl {

/// ncclScalarResidence_t: where the scalar lives.
enum ScalarResidence : int { kScalarDevice = 0, kScalarHostImmediate = 1 };

struct PreMulSum {
  ncclDataType_t type = ncclFloat32;
  const void* device_scalar = nullptr;  // kScalarDevice: read when the call's kernel runs
  uint64_t host_bits = 0;               // kScalarHostImmediate: the scalar's bytes at creation
};

class CustomOps {
 public:
  /// A new reduction's number in `*op`; false with `*why` for a bad argument.
  bool create(ncclDataType_t type, int residence, const void* scalar, ncclRedOp_t* op,
              std::string* why);
  /// The reduction numbered `op`; false where there is none.
  bool find(ncclRedOp_t op, PreMulSum* out) const;
  /// False where `op` names no live reduction of this communicator.
  bool destroy(ncclRedOp_t op);

 private:
  mutable std::mutex m_;
  std::vector<PreMulSum> ops_;  // number ncclNumOps + i
  std::vector<bool> live_;
};

}  // namespace gicl::nccl
