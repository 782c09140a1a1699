// SPDX-License-Identifier: Apache-2.0
// rdma-core's exported functions, loaded with dlopen("libibverbs.so.1") on first use, so that
// libgicl loads and runs where rdma-core is absent (the topology lists no RDMA device then, and
// the verbs transport says why it cannot open). Posting and polling (ibv_post_send, ibv_poll_cq)
// are inline calls through the context's own operation table and need no symbol. Tests install
// a table of their own (a mock device) with set_verbs_api_for_testing.
#pragma once

#include <infiniband/verbs.h>

#include "common/status.hpp"

namespace gicl {

struct VerbsApi {
  ibv_device** (*get_device_list)(int* num_devices);
  void (*free_device_list)(ibv_device** list);
  const char* (*get_device_name)(ibv_device* device);
  __be64 (*get_device_guid)(ibv_device* device);
  ibv_context* (*open_device)(ibv_device* device);
  int (*close_device)(ibv_context* context);
  int (*query_device)(ibv_context* context, ibv_device_attr* attr);
  // The exported ibv_query_port (the header's inline wraps it): fills the whole ibv_port_attr.
  int (*query_port)(ibv_context* context, uint8_t port, ibv_port_attr* attr);
  int (*query_gid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid);
  ibv_pd* (*alloc_pd)(ibv_context* context);
  int (*dealloc_pd)(ibv_pd* pd);
  ibv_mr* (*reg_mr)(ibv_pd* pd, void* addr, size_t length, int access);
  ibv_mr* (*reg_dmabuf_mr)(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                           int access);  // null where rdma-core predates DMA-BUF
  int (*dereg_mr)(ibv_mr* mr);
  ibv_cq* (*create_cq)(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                       int comp_vector);
  int (*destroy_cq)(ibv_cq* cq);
  ibv_qp* (*create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr);
  int (*modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int mask);
  int (*destroy_qp)(ibv_qp* qp);
  const char* (*wc_status_str)(ibv_wc_status status);
};

/// The loaded table (or the test's), or GICL_UNSUPPORTED saying why rdma-core could not be loaded.
Status verbs_api(const VerbsApi** out);

/// Replaces the table for the rest of the process (tests); nullptr restores the loaded one.
void set_verbs_api_for_testing(const VerbsApi* api);

}  // namespace gicl
