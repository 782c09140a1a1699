// SPDX-License-Identifier: Apache-2.0
// NVLink multicast over the symmetric heap (the NVLS algorithms' real path). The lowest local
// rank creates the multicast object and hands its POSIX fd to the others; every rank adds its
// device, binds its own heap chunks at their heap offsets and maps the object. Only reached with
// GICL_NVLS_ENABLE=1, which is refused whenever NCCL_NVLS_ENABLE=0 or NVSHMEM_DISABLE_NVLS=1: it
// has never run on the machines this project is tested on (shared hosts where multicast must
// stay off); the emulated mode (GICL_NVLS_EMULATE=1) runs the same kernels' data movement.
#include <unistd.h>

#include <algorithm>

#include "common/deadline.hpp"
#include "memory/heap.hpp"

namespace gicl {

Status SymmetricHeap::map_multicast(CUdeviceptr* va, size_t* bytes) {
  if (mc_va_ != 0) {
    *va = mc_va_;
    *bytes = mc_bytes_;
    return GICL_SUCCESS;
  }
  if (cfg_.handle != HeapHandle::kPosixFd || cu_->cuMulticastCreate == nullptr ||
      cu_->cuMulticastBindMem == nullptr)
    return GICL_FAIL(GICL_UNSUPPORTED,
                     "NVLS needs a CUDA VMM heap with POSIX fds and a driver with multicast");
  if (local_ranks_.size() != static_cast<size_t>(nranks_))
    return GICL_FAIL(GICL_UNSUPPORTED, "NVLS needs every rank on this node's NVLink fabric");
  CUmulticastObjectProp prop{};
  prop.numDevices = static_cast<unsigned>(nranks_);
  prop.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  prop.size = 2u << 20;
  GICL_CU_CHECK(cu_->cuMulticastGetGranularity(&gran, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED));
  const size_t size = (allocator_.end() + gran - 1) / gran * gran;
  prop.size = size;
  const int leader = *std::min_element(local_ranks_.begin(), local_ranks_.end());
  const Deadline d = Deadline::after_ms(cfg_.timeout_ms);
  Status local = [&]() -> Status {
    if (rank_ == leader) {
      GICL_CU_CHECK(cu_->cuMulticastCreate(&mc_handle_, &prop));
      int fd = -1;
      GICL_CU_CHECK(cu_->cuMemExportToShareableHandle(&fd, mc_handle_,
                                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
      Status sent = GICL_SUCCESS;
      for (int r : local_ranks_)
        if (r != rank_ && sent.ok())
          sent = channel_.send_fd(r, {kFdMessageVersion, kFdMulticast, 0, 0, size}, fd, d, cancel_);
      ::close(fd);
      GICL_CHECK(sent);
    } else {
      FdMessage m{};
      int fd = -1;
      GICL_CHECK(channel_.recv_fd(leader, &m, &fd, d, cancel_));
      if (m.kind != kFdMulticast || m.size != size) {
        ::close(fd);
        return GICL_FAIL(GICL_REMOTE_ERROR,
                         "rank %d sent a multicast object of %llu bytes, not %zu", leader,
                         static_cast<unsigned long long>(m.size), size);
      }
      const CUresult e = cu_->cuMemImportFromShareableHandle(
          &mc_handle_, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      ::close(fd);
      GICL_CU_CHECK(e);
    }
    GICL_CU_CHECK(cu_->cuMulticastAddDevice(mc_handle_, cfg_.device));
    return GICL_SUCCESS;
  }();
  // Every device must be added before anyone binds memory.
  GICL_CHECK(bs_->agree(local, "join the multicast object"));
  local = [&]() -> Status {
    const CUdeviceptr own_lo = va_ + slot_[rank_] * slot_bytes_;
    for (const Mapping& m : mappings_)
      if (m.ptr >= own_lo && m.ptr < own_lo + slot_bytes_)
        GICL_CU_CHECK(cu_->cuMulticastBindMem(mc_handle_, m.ptr - own_lo, m.handle, 0, m.size, 0));
    GICL_CU_CHECK(cu_->cuMemAddressReserve(&mc_va_, size, gran, 0, 0));
    GICL_CU_CHECK(cu_->cuMemMap(mc_va_, size, 0, mc_handle_, 0));
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = cfg_.device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    GICL_CU_CHECK(cu_->cuMemSetAccess(mc_va_, size, &access, 1));
    return GICL_SUCCESS;
  }();
  GICL_CHECK(bs_->agree(local, "map the multicast object"));
  mc_bytes_ = size;
  *va = mc_va_;
  *bytes = size;
  return GICL_SUCCESS;
}

void SymmetricHeap::unmap_multicast() {
  if (mc_va_) {
    GICL_CU_WARN(cu_->cuMemUnmap(mc_va_, mc_bytes_));
    GICL_CU_WARN(cu_->cuMemAddressFree(mc_va_, mc_bytes_));
  }
  if (mc_handle_) {
    const CUdeviceptr own_lo = va_ + slot_[rank_] * slot_bytes_;
    for (const Mapping& m : mappings_)
      if (m.ptr >= own_lo && m.ptr < own_lo + slot_bytes_ && m.ptr - own_lo < mc_bytes_)
        GICL_CU_WARN(cu_->cuMulticastUnbind(mc_handle_, cfg_.device, m.ptr - own_lo, m.size));
    GICL_CU_WARN(cu_->cuMemRelease(mc_handle_));
  }
  mc_va_ = 0;
  mc_handle_ = 0;
  mc_bytes_ = 0;
}

}  // namespace gicl
