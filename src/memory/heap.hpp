// SPDX-License-Identifier: Apache-2.0
// The symmetric heap of one communicator. Every rank allocates at the same offsets (collective
// calls, deterministic allocator). With POSIX-FD handles (CUDA VMM) one virtual range holds a
// slot per load/store-reachable rank, so a peer's copy of an address is peer_slot_base + offset:
// O(1). With legacy CUDA IPC each growth step is a separate cudaMalloc, found by binary search.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "common/cuda.hpp"
#include "memory/allocator.hpp"
#include "memory/fd_channel.hpp"
#include "topology/peer_info.hpp"

namespace gicl {

enum class HeapHandle { kPosixFd, kLegacyIpc };

const char* heap_handle_name(HeapHandle h);

struct HeapConfig {
  HeapHandle handle = HeapHandle::kPosixFd;
  uint64_t max_bytes = 0;    // GICL_SYMMETRIC_SIZE
  uint64_t chunk_bytes = 0;  // GICL_HEAP_CHUNK_SIZE
  int device = -1;
  int64_t timeout_ms = 0;
};

class SymmetricHeap {
 public:
  /// Collective. `paths` and `peers` come from init; only kSelf/kP2P ranks are mapped.
  static Status create(const HeapConfig& cfg, bootstrap::Bootstrap* bs,
                       const std::vector<PeerInfo>& peers, const std::vector<PeerPath>& paths,
                       const CancelFlag* cancel, std::unique_ptr<SymmetricHeap>* out);
  ~SymmetricHeap();

  /// Collective: same `bytes` on every rank or GICL_INVALID_ARGUMENT naming the ranks.
  Status alloc(uint64_t bytes, void** ptr);
  /// Collective: same pointer (offset) on every rank.
  Status free(void* ptr);
  /// This process's address of `rank`'s copy of `ptr`; nullptr if not reachable or not ours.
  void* peer_ptr(const void* ptr, int rank) const;
  /// This process's address of `rank`'s heap byte `offset`; nullptr if not reachable or mapped.
  void* peer_at(uint64_t offset, int rank) const;
  /// Heap offset of a local symmetric address; false if `ptr` is not in this heap.
  bool offset_of(const void* ptr, uint64_t* offset) const;

  uint64_t mapped_bytes() const { return allocator_.end(); }
  /// VMM layout (POSIX-fd heaps): base of the virtual range, slot stride, slot of a rank (-1 if
  /// the rank is not mapped here).
  char* va_base() const { return reinterpret_cast<char*>(va_); }
  uint64_t slot_bytes() const { return slot_bytes_; }
  int slot_of(int rank) const { return slot_[rank]; }
  uint64_t max_bytes() const { return cfg_.max_bytes; }
  HeapHandle handle() const { return cfg_.handle; }
  int grow_count() const { return static_cast<int>(segments_.size()); }
  /// Wakes blocked calls (abort).
  void shutdown() { channel_.shutdown(); }
  /// The descriptor channel to every load/store peer (POSIX-fd heaps), else nullptr.
  FdChannel* fd_channel() { return cfg_.handle == HeapHandle::kPosixFd ? &channel_ : nullptr; }

  /// Collective over the heap's ranks (all load/store local): creates an NVLink multicast object
  /// covering the heap as mapped now, binds every rank's memory to it and maps it here; `*va`
  /// receives the multicast address of heap offset 0 (multimem instructions only). Never
  /// called unless GICL_NVLS_ENABLE=1 (see memory/multicast.cc).
  Status map_multicast(CUdeviceptr* va, size_t* bytes);
  void unmap_multicast();

 private:
  struct Segment {
    uint64_t offset;
    uint64_t size;
    std::vector<char*> base;  // by rank: where this process sees the rank's copy (or null)
  };
  struct Mapping {
    CUdeviceptr ptr;
    size_t size;
    CUmemGenericAllocationHandle handle;
  };

  SymmetricHeap() = default;
  Status grow(uint64_t bytes);
  Status grow_vmm(uint64_t offset, uint64_t size);
  Status grow_legacy(uint64_t offset, uint64_t size);

  HeapConfig cfg_;
  bootstrap::Bootstrap* bs_ = nullptr;
  const CancelFlag* cancel_ = nullptr;
  const DriverApi* cu_ = nullptr;
  int rank_ = 0;
  int nranks_ = 0;
  std::vector<PeerInfo> peers_;
  std::vector<int> slot_;  // by rank: VMM slot index, -1 if not mapped
  std::vector<int> local_ranks_;
  RangeAllocator allocator_;
  std::vector<Segment> segments_;
  // VMM state
  CUdeviceptr va_ = 0;
  uint64_t slot_bytes_ = 0;
  size_t va_bytes_ = 0;
  std::vector<Mapping> mappings_;
  FdChannel channel_;
  // NVLink multicast (NVLS) state: object, its mapping, the bytes bound
  CUmemGenericAllocationHandle mc_handle_ = 0;
  CUdeviceptr mc_va_ = 0;
  size_t mc_bytes_ = 0;
  // legacy IPC state
  std::vector<void*> own_chunks_;
  std::vector<void*> opened_;
};

}  // namespace gicl
