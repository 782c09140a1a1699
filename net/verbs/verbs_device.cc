// SPDX-License-Identifier: Apache-2.0
#include "net/verbs/verbs_device.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace gicl::net {
namespace {

constexpr uint32_t kMellanoxVendorId = 0x02c9;

/// "::ffff:a.b.c.d": the GID of an IPv4 address (RoCE v2's, and v1's where the port lists both).
bool ipv4_mapped(const ibv_gid& g) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(g.raw, prefix, sizeof(prefix)) == 0;
}

bool zero_gid(const ibv_gid& g) {
  for (uint8_t b : g.raw)
    if (b != 0) return false;
  return true;
}

/// Fills the port's attributes and GID; false (with *why) where the port cannot carry traffic.
Status take_port(const VerbsApi& api, int64_t gid_index, VerbsPort* p, bool* usable,
                 std::string* why) {
  *usable = false;
  if (api.query_port(p->context, p->port, &p->attr) != 0)
    return GICL_FAIL(GICL_SYSTEM_ERROR, "net verbs: ibv_query_port(%s, %d) failed", p->name.c_str(),
                     p->port);
  if (p->attr.state != IBV_PORT_ACTIVE) {
    *why += " " + p->name + ":" + std::to_string(p->port) + " is not active;";
    return GICL_SUCCESS;
  }
  p->ethernet = p->attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  p->gid_index = 0;
  if (p->ethernet && gid_index < 0) {
    p->gid_index = -1;
    for (int i = 0; i < p->attr.gid_tbl_len; ++i) {
      ibv_gid g{};
      if (api.query_gid(p->context, p->port, i, &g) == 0 && !zero_gid(g) && ipv4_mapped(g))
        p->gid_index = i;
    }
    if (p->gid_index < 0) {
      *why += " " + p->name + ":" + std::to_string(p->port) +
              " has no IPv4 GID (set GICL_VERBS_GID_INDEX);";
      return GICL_SUCCESS;
    }
  } else if (gid_index >= 0) {
    p->gid_index = static_cast<int>(gid_index);
  }
  GICL_ARG_CHECK(p->gid_index < p->attr.gid_tbl_len || !p->ethernet,
                 "GICL_VERBS_GID_INDEX=%d: %s port %d has %d GIDs", p->gid_index, p->name.c_str(),
                 p->port, p->attr.gid_tbl_len);
  if (api.query_gid(p->context, p->port, p->gid_index, &p->gid) != 0)
    return GICL_FAIL(GICL_SYSTEM_ERROR, "net verbs: ibv_query_gid(%s, %d, %d) failed",
                     p->name.c_str(), p->port, p->gid_index);
  if (p->ethernet && zero_gid(p->gid)) {
    *why += " " + p->name + ":" + std::to_string(p->port) + " GID " + std::to_string(p->gid_index) +
            " is empty;";
    return GICL_SUCCESS;
  }
  *usable = true;
  return GICL_SUCCESS;
}

}  // namespace

Status verbs_open_port(const VerbsApi& api, const std::string& wanted,
                       const std::vector<std::string>& preferred, int64_t gid_index,
                       VerbsPort* out) {
  std::string want_name = wanted;
  int want_port = 0;
  if (const size_t colon = wanted.find(':'); colon != std::string::npos) {
    want_name = wanted.substr(0, colon);
    char* end = nullptr;
    const long port = std::strtol(wanted.c_str() + colon + 1, &end, 10);
    GICL_ARG_CHECK(*end == '\0' && port >= 1 && port <= 255,
                   "GICL_VERBS_DEVICE='%s': the port after ':' must be 1 to 255", wanted.c_str());
    want_port = static_cast<int>(port);
  }
  int n = 0;
  ibv_device** list = api.get_device_list(&n);
  if (list == nullptr || n == 0) {
    if (list != nullptr) api.free_device_list(list);
    return GICL_FAIL(GICL_UNSUPPORTED, "net verbs: this machine has no RDMA device");
  }
  std::vector<std::string> names(n);
  std::string seen, why;
  for (int d = 0; d < n; ++d) {
    const char* name = api.get_device_name(list[d]);
    names[d] = name != nullptr ? name : "?";
    seen += (d > 0 ? ", " : "") + names[d];
  }
  // Where no device is named, the GPU's closest NICs first, by any name rdma-core knows them by
  // (a network interface's name matches none), then the others in rdma-core's order.
  std::vector<int> order;
  for (const std::string& p : want_name.empty() ? preferred : std::vector<std::string>{})
    if (auto it = std::find(names.begin(), names.end(), p); it != names.end())
      if (const int d = static_cast<int>(it - names.begin());
          std::find(order.begin(), order.end(), d) == order.end())
        order.push_back(d);
  for (int d = 0; d < n; ++d)
    if (std::find(order.begin(), order.end(), d) == order.end()) order.push_back(d);
  Status result = GICL_SUCCESS;
  bool found = false;
  for (size_t k = 0; k < order.size() && !found && result.ok(); ++k) {
    const int d = order[k];
    const char* name = names[d].c_str();
    if (!want_name.empty() && want_name != names[d]) continue;
    ibv_context* ctx = api.open_device(list[d]);
    if (ctx == nullptr) {
      why += std::string(" ") + name + " does not open;";
      continue;
    }
    VerbsPort p;
    p.context = ctx;
    p.name = name;
    if (api.query_device(ctx, &p.device) != 0) {
      why += " " + p.name + ": ibv_query_device failed;";
      api.close_device(ctx);
      continue;
    }
    for (int port = 1; port <= p.device.phys_port_cnt && !found; ++port) {
      if (want_port != 0 && port != want_port) continue;
      p.port = static_cast<uint8_t>(port);
      bool usable = false;
      result = take_port(api, gid_index, &p, &usable, &why);
      if (!result.ok()) break;
      found = usable;
    }
    if (found) {
      p.atomic_reply_big_endian = p.device.vendor_id == kMellanoxVendorId;
      *out = p;
    } else {
      api.close_device(ctx);
    }
  }
  api.free_device_list(list);
  GICL_CHECK(result);
  if (!found) {
    if (!want_name.empty() && why.empty())
      return GICL_FAIL(GICL_INVALID_ARGUMENT,
                       "GICL_VERBS_DEVICE='%s': no such RDMA device port (this machine has: %s)",
                       wanted.c_str(), seen.c_str());
    return GICL_FAIL(GICL_UNSUPPORTED, "net verbs: no usable RDMA port (devices: %s):%s",
                     seen.c_str(), why.c_str());
  }
  return GICL_SUCCESS;
}

}  // namespace gicl::net
