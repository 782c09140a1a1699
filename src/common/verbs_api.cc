// SPDX-License-Identifier: Apache-2.0
#include "common/verbs_api.hpp"

#include <atomic>
#include <string>

#include "common/shared_library.hpp"

namespace gicl {
namespace {

struct Loaded {
  VerbsApi api{};
  std::string error;  // empty when loaded
};

Loaded load() {
  Loaded l;
  SharedLibrary lib("libibverbs.so.1", "install rdma-core (libibverbs1)");
  VerbsApi& a = l.api;
  (void)(lib.loaded() && lib.sym("ibv_get_device_list", &a.get_device_list) &&
         lib.sym("ibv_free_device_list", &a.free_device_list) &&
         lib.sym("ibv_get_device_name", &a.get_device_name) &&
         lib.sym("ibv_get_device_guid", &a.get_device_guid) &&
         lib.sym("ibv_open_device", &a.open_device) &&
         lib.sym("ibv_close_device", &a.close_device) &&
         lib.sym("ibv_query_device", &a.query_device) && lib.sym("ibv_query_gid", &a.query_gid) &&
         lib.sym("ibv_query_port", &a.query_port) && lib.sym("ibv_alloc_pd", &a.alloc_pd) &&
         lib.sym("ibv_dealloc_pd", &a.dealloc_pd) && lib.sym("ibv_reg_mr", &a.reg_mr) &&
         lib.sym("ibv_reg_dmabuf_mr", &a.reg_dmabuf_mr, false) &&
         lib.sym("ibv_dereg_mr", &a.dereg_mr) && lib.sym("ibv_create_cq", &a.create_cq) &&
         lib.sym("ibv_destroy_cq", &a.destroy_cq) && lib.sym("ibv_create_qp", &a.create_qp) &&
         lib.sym("ibv_modify_qp", &a.modify_qp) && lib.sym("ibv_destroy_qp", &a.destroy_qp) &&
         lib.sym("ibv_wc_status_str", &a.wc_status_str));
  l.error = lib.error();
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
