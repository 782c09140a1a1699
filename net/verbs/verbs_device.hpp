// SPDX-License-Identifier: Apache-2.0
// The verbs backend's device: the RDMA device and port it opens (GICL_VERBS_DEVICE, else the
// first device with an active port), the port's link layer, and on Ethernet (RoCE) the GID index
// its queue pairs address peers by (GICL_VERBS_GID_INDEX, else the highest IPv4-mapped one).
#pragma once

#include <infiniband/verbs.h>

#include <string>
#include <vector>

#include "common/status.hpp"
#include "common/verbs_api.hpp"

namespace gicl::net {

struct VerbsPort {
  ibv_context* context = nullptr;
  std::string name;  // "mlx5_0"
  ibv_device_attr device{};
  uint8_t port = 1;
  ibv_port_attr attr{};
  bool ethernet = false;  // RoCE: peers are addressed by GID (a global route), not by LID
  int gid_index = 0;
  ibv_gid gid{};
  // Mellanox adapters on little-endian hosts return a fetching atomic's old value big-endian.
  bool atomic_reply_big_endian = false;
};

/// Opens the device `wanted` names ("mlx5_0", "mlx5_0:2") with an active port; where it names
/// none, the first of `preferred` (the GPU's closest NICs) that has one, else the first device
/// that has one. On failure nothing stays open and the message says what the machine has.
Status verbs_open_port(const VerbsApi& api, const std::string& wanted,
                       const std::vector<std::string>& preferred, int64_t gid_index,
                       VerbsPort* out);

}  // namespace gicl::net
