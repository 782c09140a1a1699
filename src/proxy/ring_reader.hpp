// SPDX-License-Identifier: Apache-2.0
// The proxy's side of a request ring (gicl/device/detail/proxy_ring.h): reads operations in
// ticket order once all their slots are committed, and publishes how far it has read (`tail`,
// the room producers wait for) and how far operations have completed (`done`, what quiet waits
// for). One thread reads a ring.
#pragma once

#include <cstdint>
#include <deque>

#include "gicl/device/detail/proxy_ring.h"

namespace gicl::proxy {

class RingReader {
 public:
  /// `slots`, `tail` and `done` in the proxy's view (pinned host memory, zeroed).
  RingReader(const ProxySlot* slots, uint32_t size, uint64_t* tail, uint64_t* done)
      : slots_(slots), size_(size), tail_(tail), done_(done) {}

  /// The next operation when all its slots are committed: fills `req` and `ticket` (its first).
  /// Unknown op codes come back as kNop with `bad_op` set.
  bool next(ProxyRequest* req, uint64_t* ticket, bool* bad_op = nullptr);
  /// Stores the read position into `tail` when it moved a quarter ring or `force` (idle).
  void publish_tail(bool force);
  /// The operation that began at `ticket` completed (any order); `done` advances past every
  /// operation that completed with all before it.
  void complete(uint64_t ticket);

  uint64_t position() const { return pos_; }
  uint64_t done() const { return done_mark_; }
  uint64_t outstanding() const { return open_.size(); }

 private:
  struct Open {
    uint64_t ticket;
    uint64_t end;  // ticket + slots
    bool done;
  };

  const ProxySlot* slots_;
  uint32_t size_;
  uint64_t* tail_;
  uint64_t* done_;
  uint64_t pos_ = 0;        // next ticket to read
  uint64_t published_ = 0;  // last value stored into *tail_
  uint64_t done_mark_ = 0;  // last value stored into *done_
  std::deque<Open> open_;   // operations read and not completed, in ticket order
};

}  // namespace gicl::proxy
