// SPDX-License-Identifier: Apache-2.0
// RDMA devices as rdma-core sees them (the NICs the verbs and IBGDA transports will use).
#pragma once

#include <string>
#include <vector>

#include "common/status.hpp"

namespace gicl {

struct RdmaDevice {
  std::string name;  // "mlx5_0"
  std::string guid;  // node GUID, hex
  int ports = 0;
};

/// Lists the RDMA devices; an empty list (not an error) when there are none or no verbs build.
Status list_rdma_devices(std::vector<RdmaDevice>* out);
bool have_verbs();

}  // namespace gicl
