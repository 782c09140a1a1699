// SPDX-License-Identifier: Apache-2.0
// The interface every network backend implements (net/ofi, net/verbs, net/null): one object per
// process and communicator, driven by one thread at a time (the proxy), which posts one-sided
// operations to peers and polls for their completions and for what peers deliver here.
//
// Guarantees every backend gives, on every provider (they are EFA's rules, the weakest target):
// - A write, a write_imm posted with Completion::kDelivered or a non-fetching atomic completes (its
//   kDone event) only once its data is visible in the target's memory (delivery complete), so
//   quiet can count completions. A write_imm posted with Completion::kSent completes once its
//   source may be reused.
// - Nothing is ordered between two operations, not even to the same peer and address. What must
//   be seen after a payload is posted after the payload's kDone, or rides on the same write_imm.
// - A write_imm's kImmediate event at the target comes after that write's data is visible there.
// - flush(peer) completes after every operation posted earlier to that peer has completed.
// - Data lands at a target only while the target polls (manual progress): a process that holds
//   registered memory keeps polling while peers may write to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/deadline.hpp"
#include "common/status.hpp"

namespace gicl::net {

enum class MemKind : uint8_t { kHost = 0, kCuda = 1 };

enum class Backend : uint8_t { kNull = 0, kOfi = 1, kVerbs = 2 };
const char* backend_name(Backend b);

/// What a peer needs to reach a registered region; exchanged through the bootstrap as bytes.
/// Remote addresses are `addr + offset`: addr is the region's virtual address where the backend
/// addresses memory virtually, else 0 (offset addressing).
struct RemoteKey {
  static constexpr uint32_t kVersion = 1;
  uint32_t version;
  uint8_t backend;  // Backend
  uint8_t pad[3];
  uint64_t addr;
  uint64_t key;
  uint64_t bytes;
};
static_assert(sizeof(RemoteKey) == 32, "RemoteKey is exchanged between processes as bytes");

/// A local registration. Operations name their local buffers by a pointer inside one. A region
/// is destroyed before the transport that registered it.
class Region {
 public:
  virtual ~Region() = default;
  void* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  MemKind kind() const { return kind_; }
  const RemoteKey& remote_key() const { return key_; }
  bool contains(const void* p, size_t n) const {
    const auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(base_);
    return a >= b && n <= bytes_ && a - b <= bytes_ - n;
  }

 protected:
  void* base_ = nullptr;
  size_t bytes_ = 0;
  MemKind kind_ = MemKind::kHost;
  RemoteKey key_{};
};

enum class AtomicOp : uint8_t { kAdd = 0, kFetchAdd = 1, kSwap = 2, kCompareSwap = 3 };
const char* atomic_op_name(AtomicOp op);

/// When a write_imm completes. Its kImmediate event at the target follows its data either way.
enum class Completion : uint8_t {
  kDelivered = 0,  // its data is visible in the target's memory: a quiet can count it
  // Its source may be reused; nothing is said of the target (a write to a process that died may
  // complete). For traffic that the target acknowledges itself (the staged path's chunks,
  // acknowledgements and host FIFOs): a provider's own delivery acknowledgement would be a
  // second one, on tcp a reply the target sends before it reports the write.
  kSent = 1,
};

enum class EventKind : uint8_t {
  kDone = 0,       // an operation posted here completed (or failed: status)
  kImmediate = 1,  // a peer's write_imm landed here; `value` is its immediate
};

struct Event {
  EventKind kind = EventKind::kDone;
  gicl_result_t status = GICL_SUCCESS;
  int peer = -1;        // kDone: the operation's peer; kImmediate: -1 (the sender encodes itself)
  uint64_t cookie = 0;  // kDone: the caller's cookie
  uint64_t value = 0;   // kDone of a fetching atomic: the old value; kImmediate: the immediate
};

struct Caps {
  bool cuda_memory = false;  // registers CUDA memory directly (FI_HMEM, DMA-BUF)
  bool atomics = false;      // 64-bit add, fetch-add, swap and compare-swap to peers
  size_t max_write = 0;      // largest single write or read, bytes
  int imm_bytes = 0;         // bytes of a write_imm's immediate carried natively
};

struct OpenArgs {
  int rank = 0;
  int nranks = 1;
  int max_inflight = 1024;  // operations posted and not yet completed, per process
  int64_t timeout_ms = -1;  // -1: GICL_NET_TIMEOUT
  const CancelFlag* cancel = nullptr;
  // The NICs closest to this rank's GPU, nearest first, by every OS name the topology knows them
  // by ("mlx5_0", "ib0"): a backend that chooses a device takes the first it knows, unless its
  // own setting names one. Empty: the backend's own choice.
  std::vector<std::string> nics;
  // Rails: NICs to spread the endpoints over, each by every OS name the topology knows it by.
  // With two or more, at least that many endpoints open and endpoint k opens on
  // rails[k % rails.size()] (as its `nics`), so operations spilled to other endpoints (net/
  // endpoints) travel over every rail; every rank must pass the same count. The verbs backend
  // takes one endpoint: the first rail.
  std::vector<std::vector<std::string>> rails;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual Backend backend() const = 0;
  /// The provider ("tcp;ofi_rxm", "efa"; the backend's name where it has none): every rank of a
  /// job must use the same one.
  virtual std::string provider() const = 0;
  /// For logs and gicl-info: backend, provider and device ("ofi tcp;ofi_rxm on lo").
  virtual std::string describe() const = 0;
  virtual Caps caps() const = 0;

  /// This process's endpoint address, exchanged through the bootstrap (net/connect.hpp);
  /// `connect` takes every rank's in rank order, `stride` bytes apart.
  virtual size_t address_bytes() const = 0;
  virtual Status local_address(void* out) const = 0;
  virtual Status connect(const void* all_addresses, size_t stride) = 0;

  virtual Status register_memory(void* base, size_t bytes, MemKind kind,
                                 std::unique_ptr<Region>* out) = 0;

  /// Posts an operation; its kDone event carries `cookie`. With max_inflight operations
  /// outstanding, posting first polls (events are kept for the next poll) until one completes.
  virtual Status write(int peer, const Region& src, const void* src_ptr, const RemoteKey& dst,
                       uint64_t dst_offset, size_t bytes, uint64_t cookie) = 0;
  virtual Status write_imm(int peer, const Region& src, const void* src_ptr, const RemoteKey& dst,
                           uint64_t dst_offset, size_t bytes, uint64_t imm, uint64_t cookie,
                           Completion when) = 0;
  virtual Status read(int peer, const Region& dst, void* dst_ptr, const RemoteKey& src,
                      uint64_t src_offset, size_t bytes, uint64_t cookie) = 0;
  /// A 64-bit atomic on the peer's word at dst + dst_offset (8-byte aligned). Fetching ops return
  /// the old value in their kDone event; compare-swap stores `operand` where the word equals
  /// `compare`.
  virtual Status atomic(int peer, AtomicOp op, const RemoteKey& dst, uint64_t dst_offset,
                        uint64_t operand, uint64_t compare, uint64_t cookie) = 0;
  /// Completes (kDone with `cookie`) once every operation posted to `peer` before it has.
  virtual Status flush(int peer, uint64_t cookie) = 0;

  /// Endpoints inside this transport (net/endpoints/multi_endpoint.hpp): each has its own
  /// connections, which open_connections opens through `endpoint(k)` before the first
  /// operation. A plain transport is its own single endpoint.
  virtual int endpoints() const { return 1; }
  virtual Transport& endpoint(int) { return *this; }

  /// Progresses the backend (this process's targets too) and returns up to `max` events.
  virtual Status poll(Event* events, int max, int* count) = 0;
  /// Operations posted and not yet completed.
  virtual int inflight() const = 0;
};

/// Opens `backend` (kNull, kOfi, kVerbs) with its settings (GICL_OFI_PROVIDER, ...): as many
/// endpoints as GICL_NET_ENDPOINTS says, or where it is 0 as auto_endpoints() gives for the
/// provider the first one opened.
Status open_transport(Backend backend, const OpenArgs& args, std::unique_ptr<Transport>* out);

/// Endpoints per process where GICL_NET_ENDPOINTS is 0: 4 for providers over kernel TCP sockets
/// (`tcp`, `tcp;ofi_rxm`, `sockets`), which move data on the thread that progresses them; 1 for
/// the others (efa, verbs, cxi, shm).
int auto_endpoints(const std::string& provider);

}  // namespace gicl::net
