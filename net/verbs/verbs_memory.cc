// SPDX-License-Identifier: Apache-2.0
#include "net/verbs/verbs_memory.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "common/cuda.hpp"

namespace gicl::net {
namespace {

constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_ATOMIC;

Status cuda_dmabuf(void* base, size_t bytes, int* fd, uint64_t* offset) {
  const DriverApi* drv = nullptr;
  GICL_CHECK(driver_api(&drv));
  if (drv->cuMemGetHandleForAddressRange == nullptr)
    return GICL_FAIL(GICL_UNSUPPORTED, "the CUDA driver cannot export DMA-BUFs");
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto at = reinterpret_cast<uintptr_t>(base);
  const uintptr_t lo = at & ~(page - 1), hi = (at + bytes + page - 1) & ~(page - 1);
  GICL_CU_CHECK(drv->cuMemGetHandleForAddressRange(fd, static_cast<CUdeviceptr>(lo), hi - lo,
                                                   CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
  *offset = at - lo;
  return GICL_SUCCESS;
}

std::atomic<DmabufExport> g_export{nullptr};

DmabufExport dmabuf_export() {
  const DmabufExport t = g_export.load(std::memory_order_acquire);
  return t != nullptr ? t : cuda_dmabuf;
}

}  // namespace

VerbsRegion::VerbsRegion(const VerbsApi* api, ibv_mr* mr, void* base, size_t bytes, MemKind kind)
    : api_(api), mr_(mr) {
  base_ = base;
  bytes_ = bytes;
  kind_ = kind;
  key_.version = RemoteKey::kVersion;
  key_.backend = static_cast<uint8_t>(Backend::kVerbs);
  key_.addr = reinterpret_cast<uint64_t>(base);  // RC RDMA addresses memory virtually
  key_.key = mr->rkey;
  key_.bytes = bytes;
}

VerbsRegion::~VerbsRegion() {
  if (api_->dereg_mr(mr_) != 0)
    GICL_WARN(kSubsysNet, "net verbs: ibv_dereg_mr of %zu bytes at %p failed: %s", bytes_, base_,
              std::strerror(errno));
}

void set_dmabuf_export_for_testing(DmabufExport fn) {
  g_export.store(fn, std::memory_order_release);
}

bool verbs_can_register_cuda(const VerbsApi& api) {
  if (api.reg_dmabuf_mr == nullptr) return false;
  if (g_export.load(std::memory_order_acquire) != nullptr) return true;
  if (cuda_device_count() == 0) return false;  // no driver or GPU: nothing to register
  const DriverApi* drv = nullptr;
  return driver_api(&drv).ok() && drv->cuMemGetHandleForAddressRange != nullptr;
}

Status verbs_register(const VerbsApi& api, ibv_pd* pd, void* base, size_t bytes, MemKind kind,
                      std::unique_ptr<Region>* out) {
  GICL_ARG_CHECK(base != nullptr && bytes > 0, "net verbs register: base %p, %zu bytes", base,
                 bytes);
  ibv_mr* mr = nullptr;
  if (kind == MemKind::kHost) {
    mr = api.reg_mr(pd, base, bytes, kAccess);
    if (mr == nullptr)
      return GICL_FAIL(GICL_SYSTEM_ERROR, "net verbs: ibv_reg_mr of %zu bytes at %p: %s", bytes,
                       base, std::strerror(errno));
  } else {
    if (api.reg_dmabuf_mr == nullptr)
      return GICL_FAIL(
          GICL_UNSUPPORTED,
          "net verbs: rdma-core lacks ibv_reg_dmabuf_mr (GPU memory needs 34 or newer)");
    int fd = -1;
    uint64_t offset = 0;
    GICL_CHECK(dmabuf_export()(base, bytes, &fd, &offset));
    mr = api.reg_dmabuf_mr(pd, offset, bytes, reinterpret_cast<uint64_t>(base), fd, kAccess);
    const int err = errno;
    // The registration holds its own reference to the buffer.
    close(fd);
    if (mr == nullptr)
      return GICL_FAIL(GICL_SYSTEM_ERROR,
                       "net verbs: ibv_reg_dmabuf_mr of %zu bytes of GPU memory at %p: %s", bytes,
                       base, std::strerror(err));
  }
  *out = std::make_unique<VerbsRegion>(&api, mr, base, bytes, kind);
  return GICL_SUCCESS;
}

}  // namespace gicl::net
