// SPDX-License-Identifier: Apache-2.0
#include "topology/rdma_devices.hpp"

#include <cstdio>

#ifdef GICL_HAVE_VERBS
#include "common/verbs_api.hpp"
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
  const VerbsApi* v = nullptr;
  if (!verbs_api(&v).ok()) {
    clear_last_error();  // rdma-core absent: no devices, not an error
    return GICL_SUCCESS;
  }
  int n = 0;
  ibv_device** list = v->get_device_list(&n);
  if (list == nullptr) return GICL_SUCCESS;  // no kernel support: no devices
  for (int i = 0; i < n; ++i) {
    RdmaDevice d;
    d.name = v->get_device_name(list[i]);
    char guid[32];
    std::snprintf(guid, sizeof(guid), "%016llx",
                  static_cast<unsigned long long>(v->get_device_guid(list[i])));
    d.guid = guid;
    if (ibv_context* ctx = v->open_device(list[i])) {
      ibv_device_attr attr{};
      if (v->query_device(ctx, &attr) == 0) d.ports = attr.phys_port_cnt;
      v->close_device(ctx);
    }
    out->push_back(d);
  }
  v->free_device_list(list);
#endif
  return GICL_SUCCESS;
}

}  // namespace gicl
