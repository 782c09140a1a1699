// SPDX-License-Identifier: Apache-2.0
// NCCL's own environment variables that have a gicl meaning, as the gicl settings they become:
// NCCL_DEBUG -> GICL_DEBUG, NCCL_SOCKET_IFNAME -> GICL_SOCKET_IFNAME (the same syntax),
// NCCL_PROTO -> GICL_PROTO and NCCL_ALGO -> GICL_ALGO where one value maps. A GICL_* variable
// the user set wins; a value with no gicl meaning is left out and reported.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace gicl::nccl {

struct EnvMapping {
  std::string name, value;  // a GICL_* variable to set
};

/// The GICL_* variables to set from NCCL's, with `get` reading the environment; `ignored` gets a
/// line for each NCCL variable whose value has no gicl meaning.
std::vector<EnvMapping> nccl_env_to_gicl(const std::function<const char*(const char*)>& get,
                                         std::vector<std::string>* ignored);

}  // namespace gicl::nccl
