// SPDX-License-Identifier: Apache-2.0
// How the network proxy moves an operation it read from a ring (proxy/net_proxy.hpp): straight
// between registered heaps (DirectDelivery, where the transport registers the heap's memory) or
// through pinned staging buffers and the target's proxy (StagedDelivery, where it cannot: GPU
// memory on providers without FI_HMEM / DMA-BUF). Both complete an operation only once its
// effect is in the target's heap, and a put's signal only after its payload.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.hpp"
#include "gicl/device/detail/proxy_ring.h"
#include "net/transport.hpp"

namespace gicl::proxy {

/// This rank's heap as the transport reaches it: requests name offsets into it and into peers'.
struct HeapView {
  char* base = nullptr;  // this rank's heap (device memory in the staged path)
  size_t bytes = 0;
  const net::Region* region = nullptr;  // the heap's registration; null in the staged path
  std::vector<net::RemoteKey> keys;     // [rank]: every rank's heap (`bytes` bounds requests)
};

class Delivery {
 public:
  static constexpr uint32_t kNoOp = ~0u;

  virtual ~Delivery() = default;
  /// Starts operation `cookie`: a put, get, signal, put with signal or atomic (fetching or not),
  /// already checked against both heaps. A fetching one records its answer before it completes.
  virtual Status start(uint32_t cookie, const ProxyRequest& q) = 0;
  /// Handles one transport event. A failure returns its Status (the message names the peer) and
  /// sets failed_op() to the operation's cookie where it has one.
  virtual Status on_event(const net::Event& e) = 0;
  /// Work not driven by an event (staging copies, chunks waiting for room, lost answers); sets
  /// `*work` when it did something.
  virtual Status progress(bool* work) = 0;

  /// The largest put it takes with its bytes in the request (ProxyRingSet::inline_max): only
  /// where it would otherwise copy the heap's bytes into a staging buffer first.
  virtual uint32_t inline_max() const { return 0; }

  /// Operations completed since the caller last cleared the list.
  std::vector<uint32_t>& completed() { return completed_; }
  /// A completed fetching operation's answer (the word's old value), read before the cookie is
  /// reused.
  uint64_t answer(uint32_t cookie) const { return cookie < answers_.size() ? answers_[cookie] : 0; }
  uint32_t failed_op() const { return failed_op_; }
  uint64_t issued() const { return issued_; }

 protected:
  void set_answer(uint32_t cookie, uint64_t value) {
    if (cookie >= answers_.size()) answers_.resize(cookie + 1);
    answers_[cookie] = value;
  }

  std::vector<uint32_t> completed_;
  std::vector<uint64_t> answers_;  // by cookie
  uint32_t failed_op_ = kNoOp;
  uint64_t issued_ = 0;  // transport operations posted
};

/// RMA on registered heaps: puts and gets in max_write pieces, signals and atomics as the
/// transport's atomics (a compare-swap loop where it has no matching one), a put's signal posted
/// once every piece is delivered.
std::unique_ptr<Delivery> make_direct_delivery(net::Transport* t, const HeapView& heap);

}  // namespace gicl::proxy
