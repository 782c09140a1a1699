// SPDX-License-Identifier: Apache-2.0
#include "shim/nccl/custom_ops.hpp"

#include <cstring>

#include "shim/nccl/mapping.hpp"

namespace gicl::nccl {

bool CustomOps::create(ncclDataType_t type, int residence, const void* scalar, ncclRedOp_t* op,
                       std::string* why) {
  gicl_datatype_t t;
  if (op == nullptr) return *why = "op is NULL", false;
  if (!to_gicl(type, &t))
    return *why = "datatype " + std::to_string(static_cast<int>(type)) + " is not one of NCCL's",
           false;
  if (residence != kScalarDevice && residence != kScalarHostImmediate)
    return *why = "residence " + std::to_string(residence) +
                  " is neither ncclScalarDevice (0) nor ncclScalarHostImmediate (1)",
           false;
  if (scalar == nullptr) return *why = "scalar is NULL", false;
  PreMulSum p;
  p.type = type;
  if (residence == kScalarDevice)
    p.device_scalar = scalar;
  else
    std::memcpy(&p.host_bits, scalar, gicl_datatype_size(t));
  std::lock_guard<std::mutex> lock(m_);
  size_t i = 0;
  while (i < live_.size() && live_[i]) ++i;
  if (i == live_.size()) {
    ops_.emplace_back();
    live_.push_back(false);
  }
  ops_[i] = p;
  live_[i] = true;
  *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(i));
  return true;
}

bool CustomOps::find(ncclRedOp_t op, PreMulSum* out) const {
  const long i = static_cast<long>(op) - ncclNumOps;
  std::lock_guard<std::mutex> lock(m_);
  if (i < 0 || i >= static_cast<long>(live_.size()) || !live_[i]) return false;
  *out = ops_[i];
  return true;
}

bool CustomOps::destroy(ncclRedOp_t op) {
  const long i = static_cast<long>(op) - ncclNumOps;
  std::lock_guard<std::mutex> lock(m_);
  if (i < 0 || i >= static_cast<long>(live_.size()) || !live_[i]) return false;
  live_[i] = false;
  return true;
}

}  // namespace gicl::nccl
