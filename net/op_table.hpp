// SPDX-License-Identifier: Apache-2.0
// Bookkeeping every backend shares: a fixed table of operations in flight (a backend keys its
// provider contexts by slot), each peer's completion watermark with the flush markers waiting on
// it, and the events ready for poll().
//
// Completions arrive in any order (nothing is ordered on EFA). Each peer's operations get
// sequence numbers in posting order; the watermark is the first one not yet completed, and a
// flush posted when the peer's next number was S fires once the watermark reaches S, right after
// the event of the completion that moved it there. A failed operation marks its peer failed: each
// later flush to it fails with that error.
//
// An operation outstanding longer than the timeout expires: its kDone fires with GICL_TIMEOUT and
// its peer is failed, but its slot stays taken until the provider hands the context back (a slot
// the provider still owns is never reused).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <vector>

#include "common/deadline.hpp"
#include "net/transport.hpp"

namespace gicl::net {

class OpTable {
 public:
  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  void init(int nranks, int capacity);

  int capacity() const { return static_cast<int>(slots_.size()); }
  int inflight() const { return inflight_; }
  bool full() const { return free_.empty(); }

  /// Takes a free slot for an operation to `peer` (the caller checks full() first), posted at
  /// `now_ns` (steady clock).
  int begin(int peer, uint64_t cookie, int64_t now_ns);
  /// Gives back a slot whose operation was never posted (the provider refused it). Its
  /// operation may have expired meanwhile; its kDone then stays the one the expiry fired.
  void cancel(int slot);
  /// The operation in `slot` completed: queues its kDone event, frees the slot, advances the
  /// peer's watermark and fires the flushes it passes.
  void complete(int slot, gicl_result_t status, uint64_t value);
  int peer_of(int slot) const { return slots_[slot].peer; }

  /// Expires the operations posted before now_ns - timeout_ns; returns how many (the scan runs
  /// at most every `timeout_ns / 8`, so calling it on every poll costs a clock read).
  int expire(int64_t now_ns, int64_t timeout_ns);
  /// The peer of the first operation the last expire() expired.
  int expired_peer() const { return expired_peer_; }
  /// expire() at `timeout_ms` (GICL_NET_TIMEOUT), with a warning naming the first late peer: a
  /// dead or unreachable peer. What every backend's progress calls.
  void expire_late(int64_t timeout_ms);

  /// Waits for room to post an operation to `peer` (a free slot, and `room()` true: a backend's
  /// own limit, such as its send queue to that peer), calling `progress()` meanwhile; then takes a
  /// slot. Fails at the deadline, when cancelled, or when the peer failed earlier, naming it.
  template <typename Progress, typename Room>
  Status take(const char* op, int peer, uint64_t cookie, int64_t timeout_ms,
              const CancelFlag* cancel, Progress&& progress, Room&& room, int* slot) {
    const Deadline deadline = Deadline::after_ms(timeout_ms);
    while (full() || !room()) {
      GICL_CHECK(progress());
      if (!full() && room()) break;
      if (cancelled(cancel)) return GICL_FAIL(GICL_ABORTED, "net %s: aborted", op);
      if (deadline.expired())
        return GICL_FAIL(GICL_TIMEOUT,
                         "net %s to rank %d: %d operations in flight and none completed within "
                         "%lld ms (GICL_NET_TIMEOUT)",
                         op, peer, inflight(), static_cast<long long>(timeout_ms));
    }
    if (peer_status(peer) != GICL_SUCCESS)
      return GICL_FAIL(GICL_REMOTE_ERROR, "net %s to rank %d: an earlier operation to it failed",
                       op, peer);
    *slot = begin(peer, cookie, now_ns());
    return GICL_SUCCESS;
  }

  /// A flush of `peer`: fires at once when nothing earlier is outstanding.
  void flush(int peer, uint64_t cookie);
  /// Marks `peer` failed: its outstanding flushes fire with `status` and so do later ones.
  void fail_peer(int peer, gicl_result_t status);
  gicl_result_t peer_status(int peer) const { return peers_[peer].failed; }

  void push(const Event& e) { ready_.push_back(e); }
  /// Moves up to `max` ready events to `out`.
  int take(Event* out, int max);
  size_t ready() const { return ready_.size(); }

 private:
  struct Slot {
    int peer = -1;
    uint64_t cookie = 0;
    uint64_t seq = 0;
    int64_t posted_ns = 0;
    bool busy = false;
    bool expired = false;  // its kDone fired; the provider still owns the context
  };
  struct Marker {
    uint64_t seq;  // fires once every operation numbered below it completed
    uint64_t cookie;
  };
  struct Peer {
    uint64_t next = 0;           // number of the next operation posted
    uint64_t base = 0;           // the watermark: first operation not completed
    std::deque<uint8_t> done;    // done[i]: operation base + i completed
    std::deque<Marker> markers;  // in posting order, so in seq order
    gicl_result_t failed = GICL_SUCCESS;
  };
  void advance(int peer);
  void push_done(int peer, uint64_t cookie, gicl_result_t status, uint64_t value);
  /// A slot's operation ended with `status`: its event, its peer's failure and in-order mark.
  void settle(const Slot& s, gicl_result_t status, uint64_t value);
  /// The slot is free for another operation (its number was retired, or given back, already).
  void release(int slot);

  std::vector<Slot> slots_;
  std::vector<int> free_;
  std::vector<Peer> peers_;
  std::deque<Event> ready_;
  int inflight_ = 0;
  int64_t next_scan_ns_ = 0;
  int expired_peer_ = -1;
};

}  // namespace gicl::net
