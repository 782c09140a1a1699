// SPDX-License-Identifier: Apache-2.0
#include "common/verbs_api.hpp"

#include <dlfcn.h>

#include <atomic>
#include <string>

namespace gicl {
namespace {

struct Loaded {
  VerbsApi api{};
  std::string error;  // empty when loaded
};

template <typename F>
bool sym(void* lib, const char* name, F* out, std::string* error, bool required = true) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (*out == nullptr && required) *error = std::string("libibverbs.so.1 lacks ") + name;
  return *out != nullptr || !required;
}

Loaded load() {
  Loaded l;
  void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    l.error = std::string("cannot load libibverbs.so.1 (") + (e != nullptr ? e : "?") +
              "): install rdma-core (libibverbs1)";
    return l;
  }
  // Loaded for the process's life: providers keep state behind every open device.
  VerbsApi& a = l.api;
  // Stops at the first missing symbol, which l.error names.
  (void)(sym(lib, "ibv_get_device_list", &a.get_device_list, &l.error) &&
         sym(lib, "ibv_free_device_list", &a.free_device_list, &l.error) &&
         sym(lib, "ibv_get_device_name", &a.get_device_name, &l.error) &&
         sym(lib, "ibv_get_device_guid", &a.get_device_guid, &l.error) &&
         sym(lib, "ibv_open_device", &a.open_device, &l.error) &&
         sym(lib, "ibv_close_device", &a.close_device, &l.error) &&
         sym(lib, "ibv_query_device", &a.query_device, &l.error) &&
         sym(lib, "ibv_query_gid", &a.query_gid, &l.error) &&
         sym(lib, "ibv_alloc_pd", &a.alloc_pd, &l.error) &&
         sym(lib, "ibv_dealloc_pd", &a.dealloc_pd, &l.error) &&
         sym(lib, "ibv_reg_mr", &a.reg_mr, &l.error) &&
         sym(lib, "ibv_reg_dmabuf_mr", &a.reg_dmabuf_mr, &l.error, false) &&
         sym(lib, "ibv_dereg_mr", &a.dereg_mr, &l.error) &&
         sym(lib, "ibv_create_cq", &a.create_cq, &l.error) &&
         sym(lib, "ibv_destroy_cq", &a.destroy_cq, &l.error) &&
         sym(lib, "ibv_create_qp", &a.create_qp, &l.error) &&
         sym(lib, "ibv_modify_qp", &a.modify_qp, &l.error) &&
         sym(lib, "ibv_destroy_qp", &a.destroy_qp, &l.error));
  return l;
}

std::atomic<const VerbsApi*> g_test_api{nullptr};

}  // namespace

Status verbs_api(const VerbsApi** out) {
  if (const VerbsApi* t = g_test_api.load(std::memory_order_acquire)) {
    *out = t;
    return GICL_SUCCESS;
  }
  static const Loaded loaded = load();
  if (!loaded.error.empty()) return GICL_FAIL(GICL_UNSUPPORTED, "%s", loaded.error.c_str());
  *out = &loaded.api;
  return GICL_SUCCESS;
}

void set_verbs_api_for_testing(const VerbsApi* api) {
  g_test_api.store(api, std::memory_order_release);
}

}  // namespace gicl
