// SPDX-License-Identifier: Apache-2.0
// Memory registration as the provider's mr_mode asks: keys the provider picks (FI_MR_PROV_KEY) or
// unique ones we request, virtual addressing (FI_MR_VIRT_ADDR) or offsets, regions bound to the
// endpoint (FI_MR_ENDPOINT), local descriptors for every buffer (FI_MR_LOCAL), and GPU memory
// through FI_HMEM_CUDA where the provider was opened with FI_HMEM.
#pragma once

#include <rdma/fabric.h>

#include <memory>

#include "net/ofi/ofi_api.hpp"
#include "net/transport.hpp"

namespace gicl::net {

class OfiMemory {
 public:
  void init(const OfiApi* api, fid_domain* domain, fid_ep* ep, uint64_t mr_mode, bool hmem) {
    api_ = api, domain_ = domain, ep_ = ep, mr_mode_ = mr_mode, hmem_ = hmem;
  }
  Status register_memory(void* base, size_t bytes, MemKind kind, std::unique_ptr<Region>* out);
  /// The local descriptor operations pass for a buffer of `region` (one of ours).
  static void* desc(const Region& region);

 private:
  const OfiApi* api_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_ep* ep_ = nullptr;
  uint64_t mr_mode_ = 0;
  bool hmem_ = false;
  uint64_t next_key_ = 1;  // requested keys, unique in the domain, when the provider takes ours
};

}  // namespace gicl::net
