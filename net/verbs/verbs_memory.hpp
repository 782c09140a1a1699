// SPDX-License-Identifier: Apache-2.0
// The verbs backend's registrations: host memory with ibv_reg_mr, GPU memory as a DMA-BUF
// (cuMemGetHandleForAddressRange) with ibv_reg_dmabuf_mr, so the NIC reads and writes it without
// a bounce buffer. Peers address a region by virtual address and its rkey.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "common/status.hpp"
#include "common/verbs_api.hpp"
#include "net/transport.hpp"

namespace gicl::net {

class VerbsRegion : public Region {
 public:
  VerbsRegion(const VerbsApi* api, ibv_mr* mr, void* base, size_t bytes, MemKind kind);
  ~VerbsRegion() override;
  uint32_t lkey() const { return mr_->lkey; }

 private:
  const VerbsApi* api_;
  ibv_mr* mr_;
};

/// A DMA-BUF file descriptor for [base, base + bytes) of device memory, page-aligned around it:
/// *offset is base's distance from the start of what the descriptor covers. The caller closes it.
using DmabufExport = Status (*)(void* base, size_t bytes, int* fd, uint64_t* offset);
/// The CUDA driver's (cuMemGetHandleForAddressRange), or the test's; nullptr restores it.
void set_dmabuf_export_for_testing(DmabufExport fn);
/// Whether GPU memory can be registered: rdma-core has ibv_reg_dmabuf_mr and the CUDA driver
/// exports DMA-BUFs (or a test stands in for it).
bool verbs_can_register_cuda(const VerbsApi& api);

Status verbs_register(const VerbsApi& api, ibv_pd* pd, void* base, size_t bytes, MemKind kind,
                      std::unique_ptr<Region>* out);

}  // namespace gicl::net
