// SPDX-License-Identifier: Apache-2.0
#include "topology/rdma_devices.hpp"

#include <cstdio>

#ifdef GICL_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

namespace gicl {

bool have_verbs() {
#ifdef GICL_HAVE_VERBS
  return true;
#else
  return false;
#endif
}

Status list_rdma_devices(std::vector<RdmaDevice>* out) {
  out->clear();
#ifdef GICL_HAVE_VERBS
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return GICL_SUCCESS;  // no kernel support: no devices
  for (int i = 0; i < n; ++i) {
    RdmaDevice d;
    d.name = ibv_get_device_name(list[i]);
    char guid[32];
    std::snprintf(guid, sizeof(guid), "%016llx",
                  static_cast<unsigned long long>(ibv_get_device_guid(list[i])));
    d.guid = guid;
    if (ibv_context* ctx = ibv_open_device(list[i])) {
      ibv_device_attr attr{};
      if (ibv_query_device(ctx, &attr) == 0) d.ports = attr.phys_port_cnt;
      ibv_close_device(ctx);
    }
    out->push_back(d);
  }
  ibv_free_device_list(list);
#endif
  return GICL_SUCCESS;
}

}  // namespace gicl
