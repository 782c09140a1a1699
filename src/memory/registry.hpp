// SPDX-License-Identifier: Apache-2.0
// Registered buffers (gicl_comm_register): ordinary cudaMalloc memory that every load/store peer
// maps through CUDA IPC, so that collectives read and write it in place instead of staging it
// through the symmetric heap. Registration is collective and ordered: the i-th live registration
// is the same call on every rank, so an index names "rank j's buffer of that call" everywhere and
// kernels find rank j's copy in a device table [index][rank].
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "bootstrap/bootstrap.hpp"
#include "common/status.hpp"
#include "topology/peer_info.hpp"

namespace gicl {

class SymmetricHeap;

class BufferRegistry {
 public:
  /// Live registrations per communicator (slots of the device table).
  static constexpr int kMaxRegistrations = 256;

  /// Local: the device table is allocated on `device`.
  static Status create(bootstrap::Bootstrap* bs, const std::vector<PeerInfo>& peers,
                       const std::vector<PeerPath>& paths, int device,
                       std::unique_ptr<BufferRegistry>* out);
  ~BufferRegistry();

  /// Collective: every rank registers [ptr, ptr + bytes) of its own device memory. Fails on every
  /// rank (naming the rank) when one rank's buffer cannot be exported or mapped. A buffer inside
  /// the symmetric heap is recorded but needs no mapping (it is zero copy already).
  /// `*handle` names the registration (slot and generation: a stale handle is recognised).
  Status add(void* ptr, size_t bytes, const SymmetricHeap* heap, uintptr_t* handle);
  /// Collective: waits for this device's work, unmaps the peers' copies, frees the slot. Every
  /// rank has returned from the device wait before any rank unmaps, so a peer kernel never reads
  /// a buffer its owner has freed. A handle that is not live fails on every rank.
  Status remove(uintptr_t handle);
  /// The registration holding all of [p, p + bytes) and p's byte offset in it.
  bool find(const void* p, size_t bytes, int* index, uint64_t* offset) const;
  /// Device array [kMaxRegistrations][nranks]: where this process sees rank j's buffer of each
  /// registration (null where not mapped).
  char* const* device_table() const { return table_; }
  /// The same table's entry on the host: where this process sees `rank`'s buffer of `slot`.
  char* peer_address(int slot, int rank) const {
    return slot >= 0 && slot < kMaxRegistrations && rank >= 0 && rank < nranks_
               ? host_table_[static_cast<size_t>(slot) * nranks_ + rank]
               : nullptr;
  }

 private:
  struct Opened {
    void* ptr = nullptr;  // the peer allocation's base as mapped here
    int refs = 0;
  };
  struct Entry {
    bool used = false;
    uint32_t generation = 0;
    bool in_heap = false;
    char* ptr = nullptr;
    size_t bytes = 0;
    std::vector<std::string> keys;  // Opened entries this registration holds (one per peer)
  };

  BufferRegistry() = default;
  Status open_peer(const std::string& key, const cudaIpcMemHandle_t& handle, void** base);
  void close_key(const std::string& key);
  Status write_row(int index, const std::vector<char*>& row);

  bootstrap::Bootstrap* bs_ = nullptr;
  std::vector<PeerInfo> peers_;
  std::vector<PeerPath> paths_;
  int rank_ = 0;
  int nranks_ = 0;
  int device_ = -1;
  char** table_ = nullptr;
  std::vector<char*> host_table_;  // table_'s contents, for host-enqueued copies
  std::vector<Entry> entries_;
  std::vector<int> mapped_;  // live slots outside the heap, ascending: what find() searches
  uint32_t generation_ = 0;
  // One mapping per peer allocation however often it is registered: CUDA maps an IPC handle
  // once per process.
  std::map<std::string, Opened> opened_;
};

}  // namespace gicl
