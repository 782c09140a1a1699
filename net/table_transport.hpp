// SPDX-License-Identifier: Apache-2.0
// What the backends share above the interface: their operations are tracked by one op table
// (net/op_table.hpp), so flush, poll and inflight are the table's, after the backend's own
// progress; and a write, write_imm, read or atomic is checked alike before any backend posts it.
#pragma once

#include <string>

#include "net/op_checks.hpp"
#include "net/op_table.hpp"
#include "net/transport.hpp"

namespace gicl::net {

class TableTransport : public Transport {
 public:
  Status flush(int peer, uint64_t cookie) override {
    GICL_CHECK(check_peer("flush", peer, args_.nranks));
    table_.flush(peer, cookie);
    return GICL_SUCCESS;
  }
  Status poll(Event* events, int max, int* count) override {
    GICL_CHECK(progress());
    *count = table_.take(events, max);
    return GICL_SUCCESS;
  }
  int inflight() const override { return table_.inflight(); }

 protected:
  /// Moves the provider's completions (and what peers deliver here) into the table.
  virtual Status progress() = 0;

  /// A write, write_imm or read of `bytes` between the local `p` in `local` and `key` + `off` at
  /// `peer`: a rank of the job, a connected transport, both ranges inside their regions, at most
  /// the provider's largest message (`max_bytes`, named by `provider`).
  Status check_rma(const char* op, int peer, bool connected, const Region& local, const void* p,
                   const RemoteKey& key, uint64_t off, size_t bytes, uint64_t max_bytes,
                   const std::string& provider) const {
    GICL_CHECK(check_peer(op, peer, args_.nranks));
    GICL_ARG_CHECK(connected, "net %s: the transport is not connected yet", op);
    GICL_CHECK(check_local(op, "local buffer", local, p, bytes));
    GICL_CHECK(check_remote(op, peer, backend(), key, off, bytes));
    GICL_ARG_CHECK(bytes <= max_bytes,
                   "net %s to rank %d: %zu bytes exceed %s's largest message (%llu bytes)", op,
                   peer, bytes, provider.c_str(), static_cast<unsigned long long>(max_bytes));
    return GICL_SUCCESS;
  }

  /// A 64-bit atomic `op` on `key` + `off` at `peer`: a rank of the job, a connected transport,
  /// an aligned word inside the peer's region, an op of the four, a backend that has atomics
  /// (`atomics`, else GICL_UNSUPPORTED naming `provider`).
  Status check_atomic_args(AtomicOp op, int peer, bool connected, const RemoteKey& key,
                           uint64_t off, bool atomics, const std::string& provider) const {
    const char* name = atomic_op_name(op);
    GICL_CHECK(check_peer(name, peer, args_.nranks));
    GICL_ARG_CHECK(connected, "net %s: the transport is not connected yet", name);
    GICL_CHECK(check_atomic(name, peer, backend(), key, off));
    GICL_ARG_CHECK(op == AtomicOp::kAdd || op == AtomicOp::kFetchAdd || op == AtomicOp::kSwap ||
                       op == AtomicOp::kCompareSwap,
                   "net atomic: unknown op %d", static_cast<int>(op));
    if (!atomics)
      return GICL_FAIL(GICL_UNSUPPORTED, "net %s to rank %d: %s has no 64-bit remote atomics", name,
                       peer, provider.c_str());
    return GICL_SUCCESS;
  }

  OpenArgs args_;
  OpTable table_;
};

}  // namespace gicl::net
