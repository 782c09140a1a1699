// SPDX-License-Identifier: Apache-2.0
#include "net/ofi/ofi_api.hpp"

#include <dlfcn.h>

#include <string>

namespace gicl::net {
namespace {

struct Loaded {
  OfiApi api{};
  std::string error;  // empty when loaded
};

template <typename F>
bool sym(void* lib, const char* name, F* out, std::string* error) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (*out == nullptr) *error = std::string("libfabric.so.1 lacks ") + name;
  return *out != nullptr;
}

Loaded load() {
  Loaded l;
  void* lib = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    l.error = std::string("cannot load libfabric.so.1 (") + (e != nullptr ? e : "?") +
              "): install libfabric1 or choose another GICL_NET";
    return l;
  }
  // The library stays loaded for the process's life: providers keep threads and handlers.
  if (!sym(lib, "fi_version", &l.api.version, &l.error) ||
      !sym(lib, "fi_getinfo", &l.api.getinfo, &l.error) ||
      !sym(lib, "fi_freeinfo", &l.api.freeinfo, &l.error) ||
      !sym(lib, "fi_dupinfo", &l.api.dupinfo, &l.error) ||
      !sym(lib, "fi_fabric", &l.api.fabric, &l.error) ||
      !sym(lib, "fi_strerror", &l.api.strerror, &l.error))
    return l;
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
