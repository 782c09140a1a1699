// SPDX-License-Identifier: Apache-2.0
#include "memory/heap.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/log.hpp"
#include "common/rank_list.hpp"

namespace gicl {

namespace {
constexpr uint64_t kAllocAlign = 512;  // covers 16-byte vectors and 128-byte lines with room

uint64_t round_up(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}

/// A teardown step that failed: nothing can be returned from a destructor, but a mapping left
/// behind (its range then reserved again by the next heap of the process) must not pass unseen.
void warn_teardown(CUresult e, const char* call, int rank, const void* p, size_t bytes) {
  if (e == CUDA_SUCCESS) return;
  char what[160];
  std::snprintf(what, sizeof(what), "rank %d: heap teardown: %s(%p, %zu bytes)", rank, call, p,
                bytes);
  cu_warn(e, what, __FILE__, __LINE__);
}

/// Written by a chunk's owner at its start and read back by every load/store peer through its
/// own mapping before the chunk is handed out: a mapping of other memory fails the allocation,
/// naming both ranks, instead of losing every store made through it.
struct ChunkTag {
  uint64_t job;  // the job id's first bytes: another communicator's chunk differs
  uint32_t rank;
  uint32_t seq;
};
static_assert(sizeof(ChunkTag) == 16);

ChunkTag chunk_tag(const uint8_t* job, int rank, uint64_t seq) {
  ChunkTag t{};
  std::memcpy(&t.job, job, sizeof(t.job));
  t.rank = static_cast<uint32_t>(rank);
  t.seq = static_cast<uint32_t>(seq);
  return t;
}

struct LegacyExchange {
  cudaIpcMemHandle_t handle;
  uint64_t ptr;
  int32_t status;
  int32_t pad;
};
static_assert(sizeof(LegacyExchange) == 80);

}  // namespace

const char* heap_handle_name(HeapHandle h) {
  return h == HeapHandle::kPosixFd ? "posix_fd" : "legacy_ipc";
}

Status SymmetricHeap::create(const HeapConfig& cfg, bootstrap::Bootstrap* bs,
                             const std::vector<PeerInfo>& peers, const std::vector<PeerPath>& paths,
                             const CancelFlag* cancel, std::unique_ptr<SymmetricHeap>* out) {
  std::unique_ptr<SymmetricHeap> h(new SymmetricHeap());
  h->cfg_ = cfg;
  h->bs_ = bs;
  h->cancel_ = cancel;
  h->rank_ = bs->rank();
  h->nranks_ = bs->nranks();
  h->peers_ = peers;
  h->slot_.assign(h->nranks_, -1);
  for (int r = 0; r < h->nranks_; ++r) {
    if (paths[r] == PeerPath::kNetwork) continue;
    h->slot_[r] = static_cast<int>(h->local_ranks_.size());
    h->local_ranks_.push_back(r);
  }
  GICL_CHECK(driver_api(&h->cu_));
  if (cfg.handle == HeapHandle::kPosixFd) {
    DeviceScope scope(cfg.device);
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = cfg.device;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    size_t gran = 0;
    GICL_CU_CHECK(
        h->cu_->cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    h->cfg_.chunk_bytes = round_up(cfg.chunk_bytes, gran);
    h->slot_bytes_ = round_up(cfg.max_bytes, h->cfg_.chunk_bytes);
    h->cfg_.max_bytes = h->slot_bytes_;
    h->va_bytes_ = h->slot_bytes_ * h->local_ranks_.size();
    GICL_CU_CHECK(h->cu_->cuMemAddressReserve(&h->va_, h->va_bytes_, gran, 0, 0));
    char job[40];
    const uint8_t* s = bs->job();
    std::snprintf(job, sizeof(job), "%02x%02x%02x%02x%02x%02x%02x%02x", s[0], s[1], s[2], s[3],
                  s[4], s[5], s[6], s[7]);
    Status st = h->channel_.listen(job, h->rank_, bs->secret());
    GICL_CHECK(h->bs_->agree(st, "open its handle socket"));
    std::vector<FdChannel::Peer> local;
    for (int r : h->local_ranks_)
      if (r != h->rank_) local.push_back({r, peers[r].pid});
    GICL_CHECK(h->channel_.connect(local, Deadline::after_ms(cfg.timeout_ms), cancel));
  } else {
    h->cfg_.chunk_bytes = round_up(cfg.chunk_bytes, 2u << 20);
  }
  GICL_INFO(kSubsysMem, "rank %d: symmetric heap (%s) up to %llu MiB, %zu load/store peers",
            h->rank_, heap_handle_name(cfg.handle),
            static_cast<unsigned long long>(h->cfg_.max_bytes >> 20), h->local_ranks_.size());
  *out = std::move(h);
  return GICL_SUCCESS;
}

SymmetricHeap::~SymmetricHeap() {
  DeviceScope scope(cfg_.device);
  if (mc_handle_ || mc_va_) unmap_multicast();  // before the memory it is bound to goes
  for (auto it = mappings_.rbegin(); it != mappings_.rend(); ++it) {
    const void* at = reinterpret_cast<const void*>(it->ptr);
    if (it->ptr)
      warn_teardown(cu_->cuMemUnmap(it->ptr, it->size), "cuMemUnmap", rank_, at, it->size);
    warn_teardown(cu_->cuMemRelease(it->handle), "cuMemRelease", rank_, at, it->size);
  }
  if (va_)
    warn_teardown(cu_->cuMemAddressFree(va_, va_bytes_), "cuMemAddressFree", rank_,
                  reinterpret_cast<const void*>(va_), va_bytes_);
  for (void* p : opened_) GICL_CUDA_WARN(cudaIpcCloseMemHandle(p));
  for (void* p : own_chunks_) GICL_CUDA_WARN(cudaFree(p));
}

Status SymmetricHeap::alloc(uint64_t bytes, void** ptr) {
  std::vector<uint64_t> sizes(nranks_);
  sizes[rank_] = bytes;
  GICL_CHECK(bs_->allgather(sizes.data(), sizeof(uint64_t)));
  std::vector<int> differ;
  for (int r = 0; r < nranks_; ++r)
    if (sizes[r] != sizes[0]) differ.push_back(r);
  if (!differ.empty())
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "gicl_mem_alloc: bytes differ between ranks (rank 0 asked for %llu; ranks %s "
                     "asked for other sizes)",
                     static_cast<unsigned long long>(sizes[0]), rank_list(differ).c_str());
  if (bytes == 0) return GICL_FAIL(GICL_INVALID_ARGUMENT, "gicl_mem_alloc: bytes must be > 0");
  const uint64_t need = round_up(bytes, kAllocAlign);
  uint64_t offset = 0;
  if (!allocator_.allocate(need, kAllocAlign, &offset)) {
    // Grow by enough to hold the request even if the free tail is not usable.
    GICL_CHECK(grow(need));
    if (!allocator_.allocate(need, kAllocAlign, &offset))
      return GICL_FAIL(GICL_INTERNAL_ERROR, "heap grew but %llu bytes still do not fit",
                       static_cast<unsigned long long>(need));
  }
  for (const Segment& s : segments_) {
    if (offset >= s.offset && offset < s.offset + s.size) {
      *ptr = s.base[rank_] + (offset - s.offset);
      return GICL_SUCCESS;
    }
  }
  return GICL_FAIL(GICL_INTERNAL_ERROR, "allocated offset %llu lies in no segment",
                   static_cast<unsigned long long>(offset));
}

Status SymmetricHeap::free(void* ptr) {
  uint64_t off = UINT64_MAX;
  if (!offset_of(ptr, &off) || allocator_.block_size(off) == 0) off = UINT64_MAX;
  std::vector<uint64_t> offs(nranks_);
  offs[rank_] = off;
  GICL_CHECK(bs_->allgather(offs.data(), sizeof(uint64_t)));
  std::vector<int> bad;
  for (int r = 0; r < nranks_; ++r)
    if (offs[r] == UINT64_MAX || offs[r] != offs[0]) bad.push_back(r);
  if (!bad.empty())
    return GICL_FAIL(
        GICL_INVALID_ARGUMENT,
        "gicl_mem_free: ptr is not the same gicl_mem_alloc block on every rank (ranks %s "
        "differ from rank 0 or passed a pointer that is not a block start)",
        rank_list(bad).c_str());
  if (!allocator_.release(off))
    return GICL_FAIL(GICL_INTERNAL_ERROR, "release of a known block failed");
  return GICL_SUCCESS;
}

bool SymmetricHeap::offset_of(const void* ptr, uint64_t* offset) const {
  const char* p = static_cast<const char*>(ptr);
  if (cfg_.handle == HeapHandle::kPosixFd) {
    const char* own = reinterpret_cast<const char*>(va_) + slot_[rank_] * slot_bytes_;
    if (p < own || p >= own + allocator_.end()) return false;
    *offset = static_cast<uint64_t>(p - own);
    return true;
  }
  for (const Segment& s : segments_) {
    if (p >= s.base[rank_] && p < s.base[rank_] + s.size) {
      *offset = s.offset + static_cast<uint64_t>(p - s.base[rank_]);
      return true;
    }
  }
  return false;
}

void* SymmetricHeap::peer_ptr(const void* ptr, int rank) const {
  uint64_t off = 0;
  return offset_of(ptr, &off) ? peer_at(off, rank) : nullptr;
}

void* SymmetricHeap::peer_at(uint64_t offset, int rank) const {
  if (rank < 0 || rank >= nranks_ || slot_[rank] < 0 || offset >= allocator_.end()) return nullptr;
  if (cfg_.handle == HeapHandle::kPosixFd)
    // The O(1) case: the same offset in the peer's slot of one virtual range.
    return reinterpret_cast<char*>(va_) + slot_[rank] * slot_bytes_ + offset;
  for (const Segment& s : segments_)
    if (offset >= s.offset && offset < s.offset + s.size) return s.base[rank] + (offset - s.offset);
  return nullptr;
}

Status SymmetricHeap::grow(uint64_t bytes) {
  const uint64_t offset = allocator_.end();
  const uint64_t size = round_up(std::max(bytes, cfg_.chunk_bytes), cfg_.chunk_bytes);
  if (offset + size > cfg_.max_bytes)
    return GICL_FAIL(
        GICL_INVALID_ARGUMENT,
        "gicl_mem_alloc: the request does not fit: the heap holds %llu MiB and may grow "
        "to GICL_SYMMETRIC_SIZE=%llu MiB",
        static_cast<unsigned long long>(offset >> 20),
        static_cast<unsigned long long>(cfg_.max_bytes >> 20));
  DeviceScope scope(cfg_.device);
  if (cfg_.handle == HeapHandle::kPosixFd)
    GICL_CHECK(grow_vmm(offset, size));
  else
    GICL_CHECK(grow_legacy(offset, size));
  allocator_.add_region(offset, size, cfg_.handle == HeapHandle::kPosixFd);
  GICL_INFO(kSubsysMem, "rank %d: heap grew by %llu MiB to %llu MiB", rank_,
            static_cast<unsigned long long>(size >> 20),
            static_cast<unsigned long long>((offset + size) >> 20));
  return GICL_SUCCESS;
}

Status SymmetricHeap::grow_vmm(uint64_t offset, uint64_t size) {
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = cfg_.device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  auto slot_addr = [&](int r) { return va_ + slot_[r] * slot_bytes_ + offset; };

  // 1. Our chunk: create, export, map into our own slot, tag.
  const uint64_t seq = segments_.size();
  int fd = -1;
  Status local = [&]() -> Status {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = cfg_.device;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle handle;
    GICL_CU_CHECK(cu_->cuMemCreate(&handle, size, &prop, 0));
    mappings_.push_back({0, size, handle});
    GICL_CU_CHECK(cu_->cuMemExportToShareableHandle(&fd, handle,
                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    GICL_CU_CHECK(cu_->cuMemMap(slot_addr(rank_), size, 0, handle, 0));
    mappings_.back().ptr = slot_addr(rank_);
    GICL_CU_CHECK(cu_->cuMemSetAccess(slot_addr(rank_), size, &access, 1));
    const ChunkTag tag = chunk_tag(bs_->job(), rank_, seq);
    return upload_device(reinterpret_cast<void*>(slot_addr(rank_)), &tag, sizeof(tag));
  }();
  Status s = bs_->agree(local, "create its heap chunk");
  if (!s.ok()) {
    if (fd >= 0) ::close(fd);
    return s;
  }
  // 2. Hand our fd to every load/store peer, then import theirs into their slots and check
  // their tags (the owner wrote its tag before sending the fd).
  const Deadline d = Deadline::after_ms(cfg_.timeout_ms);
  local = [&]() -> Status {
    for (int r : local_ranks_)
      if (r != rank_)
        GICL_CHECK(channel_.send_fd(r, {kFdMessageVersion, kFdHeapChunk, seq, offset, size}, fd, d,
                                    cancel_));
    for (int r : local_ranks_) {
      if (r == rank_) continue;
      FdMessage m{};
      int pfd = -1;
      GICL_CHECK(channel_.recv_fd(r, &m, &pfd, d, cancel_));
      if (m.kind != kFdHeapChunk || m.seq != seq || m.offset != offset || m.size != size) {
        ::close(pfd);
        return GICL_FAIL(
            GICL_REMOTE_ERROR,
            "rank %d sent heap chunk %llu (offset %llu, %llu bytes), expected chunk "
            "%llu (offset %llu, %llu bytes)",
            r, static_cast<unsigned long long>(m.seq), static_cast<unsigned long long>(m.offset),
            static_cast<unsigned long long>(m.size), static_cast<unsigned long long>(seq),
            static_cast<unsigned long long>(offset), static_cast<unsigned long long>(size));
      }
      CUmemGenericAllocationHandle handle;
      CUresult e = cu_->cuMemImportFromShareableHandle(
          &handle, reinterpret_cast<void*>(static_cast<uintptr_t>(pfd)),
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      ::close(pfd);  // the handle holds the memory now
      GICL_CU_CHECK(e);
      mappings_.push_back({0, size, handle});
      GICL_CU_CHECK(cu_->cuMemMap(slot_addr(r), size, 0, handle, 0));
      mappings_.back().ptr = slot_addr(r);
      GICL_CU_CHECK(cu_->cuMemSetAccess(slot_addr(r), size, &access, 1));
      ChunkTag seen{};
      GICL_CHECK(download_device(&seen, reinterpret_cast<const void*>(slot_addr(r)), sizeof(seen)));
      const ChunkTag want = chunk_tag(bs_->job(), r, seq);
      if (std::memcmp(&seen, &want, sizeof(seen)) != 0)
        return GICL_FAIL(GICL_SYSTEM_ERROR,
                         "rank %d: rank %d's heap chunk %llu, imported here from its descriptor, "
                         "holds other memory (tag: %s job, rank %u, chunk %u): stores through it "
                         "would be lost",
                         rank_, r, static_cast<unsigned long long>(seq),
                         seen.job == want.job ? "this" : "another", seen.rank, seen.seq);
    }
    return GICL_SUCCESS;
  }();
  if (fd >= 0) ::close(fd);
  GICL_CHECK(bs_->agree(local, "map the peers' heap chunks"));
  // Every peer has read the tag: clear it, so that the chunk goes out with the zeros a fresh
  // allocation has in practice (which callers may have come to expect).
  const ChunkTag blank{};
  GICL_CHECK(upload_device(reinterpret_cast<void*>(slot_addr(rank_)), &blank, sizeof(blank)));
  Segment seg{offset, size, std::vector<char*>(nranks_, nullptr)};
  for (int r : local_ranks_) seg.base[r] = reinterpret_cast<char*>(slot_addr(r));
  segments_.push_back(std::move(seg));
  return GICL_SUCCESS;
}

Status SymmetricHeap::grow_legacy(uint64_t offset, uint64_t size) {
  std::vector<LegacyExchange> all(nranks_);
  LegacyExchange& mine = all[rank_];
  void* chunk = nullptr;
  Status local = [&]() -> Status {
    GICL_CUDA_CHECK(cudaMalloc(&chunk, size));
    own_chunks_.push_back(chunk);
    GICL_CUDA_CHECK(cudaIpcGetMemHandle(&mine.handle, chunk));
    return GICL_SUCCESS;
  }();
  mine.ptr = reinterpret_cast<uint64_t>(chunk);
  mine.status = local.code();
  GICL_CHECK(bs_->allgather(all.data(), sizeof(LegacyExchange)));
  if (!local.ok()) return local;
  for (int r = 0; r < nranks_; ++r)
    if (all[r].status != GICL_SUCCESS)
      return GICL_FAIL(GICL_REMOTE_ERROR, "rank %d failed to create its heap chunk", r);
  Segment seg{offset, size, std::vector<char*>(nranks_, nullptr)};
  local = [&]() -> Status {
    for (int r : local_ranks_) {
      if (r == rank_ || peers_[r].pid == peers_[rank_].pid) {
        // Same address space (gicl_comm_init_all): the pointer is valid as it is.
        seg.base[r] = reinterpret_cast<char*>(all[r].ptr);
        if (r != rank_ && peers_[r].device != cfg_.device)
          GICL_CHECK(enable_peer_access(peers_[r].device));
        continue;
      }
      void* p = nullptr;
      GICL_CUDA_CHECK(cudaIpcOpenMemHandle(&p, all[r].handle, cudaIpcMemLazyEnablePeerAccess));
      opened_.push_back(p);
      seg.base[r] = static_cast<char*>(p);
    }
    return GICL_SUCCESS;
  }();
  GICL_CHECK(bs_->agree(local, "open the peers' legacy IPC handles"));
  segments_.push_back(std::move(seg));
  return GICL_SUCCESS;
}

}  // namespace gicl
