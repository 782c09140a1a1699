// SPDX-License-Identifier: Apache-2.0
// libfabric's exported functions, loaded with dlopen("libfabric.so.1") on first use, so libgicl
// loads and runs where libfabric is absent. Everything else libfabric offers (fi_domain,
// fi_writemsg, fi_cq_read, ...) is an inline call through the objects' own operation tables and
// needs no symbol.
#pragma once

#include <rdma/fabric.h>

#include "common/status.hpp"

namespace gicl::net {

struct OfiApi {
  uint32_t (*version)();
  int (*getinfo)(uint32_t version, const char* node, const char* service, uint64_t flags,
                 const fi_info* hints, fi_info** info);
  void (*freeinfo)(fi_info* info);
  fi_info* (*dupinfo)(const fi_info* info);
  int (*fabric)(fi_fabric_attr* attr, fid_fabric** fabric, void* context);
  const char* (*strerror)(int errnum);
};

/// The loaded table, or an error saying why libfabric could not be loaded.
Status ofi_api(const OfiApi** out);

}  // namespace gicl::net
