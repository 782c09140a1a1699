// SPDX-License-Identifier: Apache-2.0
#include "net/ofi/ofi_memory.hpp"

#include <cuda_runtime_api.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

namespace gicl::net {
namespace {

class OfiRegion : public Region {
 public:
  OfiRegion(void* base, size_t bytes, MemKind kind, fid_mr* mr, uint64_t addr)
      : mr_(mr), desc_(fi_mr_desc(mr)) {
    base_ = base;
    bytes_ = bytes;
    kind_ = kind;
    key_.version = RemoteKey::kVersion;
    key_.backend = static_cast<uint8_t>(Backend::kOfi);
    key_.addr = addr;
    key_.key = fi_mr_key(mr);
    key_.bytes = bytes;
  }
  ~OfiRegion() override { fi_close(&mr_->fid); }
  void* desc() const { return desc_; }

 private:
  fid_mr* mr_;
  void* desc_;
};

}  // namespace

void* OfiMemory::desc(const Region& region) {
  return static_cast<const OfiRegion&>(region).desc();
}

Status OfiMemory::register_memory(void* base, size_t bytes, MemKind kind,
                                  std::unique_ptr<Region>* out) {
  GICL_ARG_CHECK(base != nullptr && bytes > 0, "net register: empty region %p + %zu bytes", base,
                 bytes);
  fi_mr_attr attr{};
  iovec iov{base, bytes};
  attr.mr_iov = &iov;
  attr.iov_count = 1;
  attr.access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV;
  attr.requested_key = (mr_mode_ & FI_MR_PROV_KEY) != 0 ? 0 : next_key_++;
  attr.iface = FI_HMEM_SYSTEM;
  if (kind == MemKind::kCuda) {
    if (!hmem_) {
      return GICL_FAIL(GICL_UNSUPPORTED,
                       "net register: this provider cannot register GPU memory (no FI_HMEM); the "
                       "proxy stages GPU buffers through host memory");
    }
    cudaPointerAttributes pa{};
    const cudaError_t err = cudaPointerGetAttributes(&pa, base);
    GICL_ARG_CHECK(err == cudaSuccess && pa.type == cudaMemoryTypeDevice,
                   "net register: %p is not device memory (%s)", base, cudaGetErrorString(err));
    attr.iface = FI_HMEM_CUDA;
    attr.device.cuda = pa.device;
  }
  fid_mr* mr = nullptr;
  int rc = fi_mr_regattr(domain_, &attr, 0, &mr);
  if (rc != 0) {
    return GICL_FAIL(GICL_SYSTEM_ERROR, "net register %p + %zu bytes: fi_mr_regattr: %s", base,
                     bytes, api_->strerror(-rc));
  }
  if ((mr_mode_ & FI_MR_ENDPOINT) != 0) {
    if ((rc = fi_mr_bind(mr, &ep_->fid, 0)) != 0 || (rc = fi_mr_enable(mr)) != 0) {
      fi_close(&mr->fid);
      return GICL_FAIL(GICL_SYSTEM_ERROR, "net register: binding to the endpoint: %s",
                       api_->strerror(-rc));
    }
  }
  const uint64_t addr = (mr_mode_ & FI_MR_VIRT_ADDR) != 0 ? reinterpret_cast<uintptr_t>(base) : 0;
  *out = std::make_unique<OfiRegion>(base, bytes, kind, mr, addr);
  return GICL_SUCCESS;
}

}  // namespace gicl::net
