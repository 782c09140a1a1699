// SPDX-License-Identifier: Apache-2.0
#include "memory/registry.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/cuda.hpp"
#include "common/log.hpp"
#include "memory/heap.hpp"

namespace gicl {

namespace {

struct RegExchange {
  cudaIpcMemHandle_t handle;  // of the allocation holding the buffer
  uint64_t base;              // the allocation's address in the owner's process
  uint64_t offset;            // the buffer's offset in its allocation
  int32_t status;
  int32_t in_heap;
};
static_assert(sizeof(RegExchange) == 88);

}  // namespace

Status BufferRegistry::create(bootstrap::Bootstrap* bs, const std::vector<PeerInfo>& peers,
                              const std::vector<PeerPath>& paths, int device,
                              std::unique_ptr<BufferRegistry>* out) {
  std::unique_ptr<BufferRegistry> r(new BufferRegistry());
  r->bs_ = bs;
  r->peers_ = peers;
  r->paths_ = paths;
  r->rank_ = bs->rank();
  r->nranks_ = bs->nranks();
  r->device_ = device;
  r->entries_.resize(kMaxRegistrations);
  DeviceScope scope(device);
  const size_t bytes = static_cast<size_t>(kMaxRegistrations) * r->nranks_ * sizeof(char*);
  GICL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&r->table_), bytes));
  GICL_CHECK(zero_device(r->table_, bytes));
  r->host_table_.assign(static_cast<size_t>(kMaxRegistrations) * r->nranks_, nullptr);
  *out = std::move(r);
  return GICL_SUCCESS;
}

BufferRegistry::~BufferRegistry() {
  DeviceScope scope(device_);
  for (auto& [key, o] : opened_) GICL_CUDA_WARN(cudaIpcCloseMemHandle(o.ptr));
  if (table_ != nullptr) GICL_CUDA_WARN(cudaFree(table_));
}

namespace {
// One peer allocation: the rank and its IPC handle.
std::string peer_key(int rank, const cudaIpcMemHandle_t& handle) {
  std::string key(reinterpret_cast<const char*>(&rank), sizeof(rank));
  key.append(reinterpret_cast<const char*>(&handle), sizeof(handle));
  return key;
}

// A handle: generation << 16 | (slot + 1), never 0.
uintptr_t make_handle(uint32_t generation, int slot) {
  return (static_cast<uintptr_t>(generation) << 16) | static_cast<uintptr_t>(slot + 1);
}
}  // namespace

bool BufferRegistry::find(const void* p, size_t bytes, int* index, uint64_t* offset) const {
  const char* c = static_cast<const char*>(p);
  for (int i : mapped_) {
    const Entry& e = entries_[i];
    if (c < e.ptr) continue;
    const size_t off = static_cast<size_t>(c - e.ptr);
    if (off <= e.bytes && e.bytes - off >= bytes) {
      *index = i;
      *offset = off;
      return true;
    }
  }
  return false;
}

Status BufferRegistry::open_peer(const std::string& key, const cudaIpcMemHandle_t& handle,
                                 void** base) {
  Opened& o = opened_[key];
  if (o.refs == 0) {
    const cudaError_t e = cudaIpcOpenMemHandle(&o.ptr, handle, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
      cudaGetLastError();
      opened_.erase(key);
      return GICL_FAIL(GICL_UNHANDLED_CUDA_ERROR, "cannot map a peer's registered buffer: %s",
                       cudaGetErrorString(e));
    }
  }
  o.refs++;
  *base = o.ptr;
  return GICL_SUCCESS;
}

void BufferRegistry::close_key(const std::string& key) {
  auto it = opened_.find(key);
  if (it == opened_.end() || --it->second.refs > 0) return;
  GICL_CUDA_WARN(cudaIpcCloseMemHandle(it->second.ptr));
  opened_.erase(it);
}

Status BufferRegistry::write_row(int index, const std::vector<char*>& row) {
  GICL_CHECK(upload_device(table_ + static_cast<size_t>(index) * nranks_, row.data(),
                           row.size() * sizeof(char*)));
  std::copy(row.begin(), row.end(), host_table_.begin() + static_cast<size_t>(index) * nranks_);
  return GICL_SUCCESS;
}

Status BufferRegistry::add(void* ptr, size_t bytes, const SymmetricHeap* heap, uintptr_t* handle) {
  DeviceScope scope(device_);
  int slot = 0;
  while (slot < kMaxRegistrations && entries_[slot].used) ++slot;
  std::vector<RegExchange> all(nranks_);
  RegExchange& mine = all[rank_];
  Status local = [&]() -> Status {
    // The same history on every rank gives the same free slot; a full table is full everywhere.
    if (slot == kMaxRegistrations)
      return GICL_FAIL(GICL_INVALID_USAGE,
                       "gicl_comm_register: %d buffers are registered already (the most a "
                       "communicator holds); deregister some first",
                       kMaxRegistrations);
    uint64_t off = 0;
    if (heap != nullptr && heap->offset_of(ptr, &off) && heap->mapped_bytes() - off >= bytes) {
      mine.in_heap = 1;
      return GICL_SUCCESS;
    }
    cudaPointerAttributes attr{};
    const cudaError_t pe = cudaPointerGetAttributes(&attr, ptr);
    cudaGetLastError();
    if (pe != cudaSuccess || attr.type != cudaMemoryTypeDevice)
      return GICL_FAIL(GICL_INVALID_ARGUMENT, "gicl_comm_register: buff=%p is not device memory",
                       ptr);
    if (attr.device != device_)
      return GICL_FAIL(GICL_INVALID_ARGUMENT,
                       "gicl_comm_register: buff=%p is memory of device %d, the communicator's "
                       "device is %d",
                       ptr, attr.device, device_);
    const DriverApi* cu = nullptr;
    GICL_CHECK(driver_api(&cu));
    CUdeviceptr base = 0;
    size_t size = 0;
    if (cu->cuMemGetAddressRange(&base, &size, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS)
      return GICL_FAIL(GICL_INVALID_ARGUMENT,
                       "gicl_comm_register: buff=%p is not in a device allocation", ptr);
    const uint64_t in_alloc = reinterpret_cast<uint64_t>(ptr) - base;
    if (size - in_alloc < bytes)
      return GICL_FAIL(
          GICL_INVALID_ARGUMENT,
          "gicl_comm_register: size=%zu but buff=%p's allocation ends %zu bytes after it", bytes,
          ptr, static_cast<size_t>(size - in_alloc));
    const cudaError_t e = cudaIpcGetMemHandle(&mine.handle, reinterpret_cast<void*>(base));
    if (e != cudaSuccess) {
      cudaGetLastError();
      return GICL_FAIL(GICL_INVALID_ARGUMENT,
                       "gicl_comm_register: buff=%p cannot be shared with the peers (%s): register "
                       "cudaMalloc memory, or use gicl_mem_alloc",
                       ptr, cudaGetErrorString(e));
    }
    mine.base = base;
    mine.offset = in_alloc;
    return GICL_SUCCESS;
  }();
  mine.status = local.code();
  GICL_CHECK(bs_->allgather(all.data(), sizeof(RegExchange)));
  if (!local.ok()) return local;
  for (int r = 0; r < nranks_; ++r)
    if (all[r].status != GICL_SUCCESS)
      return GICL_FAIL(GICL_REMOTE_ERROR, "gicl_comm_register failed on rank %d (%s)", r,
                       gicl_get_error_string(static_cast<gicl_result_t>(all[r].status)));
  Entry e;
  e.used = true;
  e.generation = ++generation_ & 0xffffffu;
  e.in_heap = mine.in_heap != 0;
  e.ptr = static_cast<char*>(ptr);
  e.bytes = bytes;
  std::vector<char*> row(nranks_, nullptr);
  local = [&]() -> Status {
    const int pid = static_cast<int>(::getpid());
    for (int r = 0; r < nranks_; ++r) {
      if (paths_[r] == PeerPath::kNetwork || all[r].in_heap) continue;
      if (r == rank_ || peers_[r].pid == pid) {
        // Same address space (gicl_comm_init_all): the owner's pointer is valid here.
        row[r] = reinterpret_cast<char*>(all[r].base) + all[r].offset;
        if (r != rank_ && peers_[r].device != device_)
          GICL_CHECK(enable_peer_access(peers_[r].device));
        continue;
      }
      void* base = nullptr;
      e.keys.push_back(peer_key(r, all[r].handle));
      GICL_CHECK(open_peer(e.keys.back(), all[r].handle, &base));
      row[r] = static_cast<char*>(base) + all[r].offset;
    }
    return write_row(slot, row);
  }();
  local = bs_->agree(local, "map the peers' registered buffers");
  if (!local.ok()) {
    for (const std::string& k : e.keys) close_key(k);
    return local;
  }
  entries_[slot] = std::move(e);
  if (!entries_[slot].in_heap)
    mapped_.insert(std::upper_bound(mapped_.begin(), mapped_.end(), slot), slot);
  *handle = make_handle(entries_[slot].generation, slot);
  GICL_INFO(kSubsysMem, "rank %d: registered %zu bytes at %p as buffer %d%s", rank_, bytes, ptr,
            slot, entries_[slot].in_heap ? " (symmetric heap: nothing to map)" : "");
  return GICL_SUCCESS;
}

Status BufferRegistry::remove(uintptr_t handle) {
  DeviceScope scope(device_);
  const int index = static_cast<int>(handle & 0xffff) - 1;
  Status local = [&]() -> Status {
    if (index < 0 || index >= kMaxRegistrations || !entries_[index].used ||
        make_handle(entries_[index].generation, index) != handle)
      return GICL_FAIL(GICL_INVALID_ARGUMENT,
                       "gicl_comm_deregister: handle=%p is not a live registration of this "
                       "communicator",
                       reinterpret_cast<void*>(handle));
    // Kernels of this rank may still read the peers' copies (and the peers' kernels this one).
    GICL_CUDA_CHECK(cudaDeviceSynchronize());
    return GICL_SUCCESS;
  }();
  GICL_CHECK(bs_->agree(local, "finish its work before gicl_comm_deregister"));
  Entry& e = entries_[index];
  for (const std::string& k : e.keys) close_key(k);
  mapped_.erase(std::remove(mapped_.begin(), mapped_.end(), index), mapped_.end());
  e = Entry{};
  return write_row(index, std::vector<char*>(nranks_, nullptr));
}

}  // namespace gicl
