// SPDX-License-Identifier: Apache-2.0
#include "net/ofi/ofi_api.hpp"

#include <string>

#include "common/shared_library.hpp"

namespace gicl::net {
namespace {

struct Loaded {
  OfiApi api{};
  std::string error;  // empty when loaded
};

Loaded load() {
  Loaded l;
  SharedLibrary lib("libfabric.so.1", "install libfabric1 or choose another GICL_NET");
  const bool found = lib.loaded() && lib.sym("fi_version", &l.api.version) &&
                     lib.sym("fi_getinfo", &l.api.getinfo) &&
                     lib.sym("fi_freeinfo", &l.api.freeinfo) &&
                     lib.sym("fi_dupinfo", &l.api.dupinfo) && lib.sym("fi_fabric", &l.api.fabric) &&
                     lib.sym("fi_strerror", &l.api.strerror);
  l.error = lib.error();
  if (!found) return l;
  const uint32_t v = l.api.version();
  if (v < FI_VERSION(1, 17)) {
    l.error = "libfabric " + std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v)) +
              " is older than 1.17, the oldest gicl supports";
  }
  return l;
}

}  // namespace

Status ofi_api(const OfiApi** out) {
  static const Loaded loaded = load();
  if (!loaded.error.empty()) return GICL_FAIL(GICL_SYSTEM_ERROR, "%s", loaded.error.c_str());
  *out = &loaded.api;
  return GICL_SUCCESS;
}

}  // namespace gicl::net
