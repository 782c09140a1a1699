// SPDX-License-Identifier: Apache-2.0
#include "net/op_table.hpp"

#include "common/log.hpp"

namespace gicl::net {

void OpTable::init(int nranks, int capacity) {
  slots_.assign(capacity, Slot{});
  free_.clear();
  for (int i = capacity - 1; i >= 0; --i) free_.push_back(i);
  peers_.assign(nranks, Peer{});
  ready_.clear();
  inflight_ = 0;
}

int OpTable::begin(int peer, uint64_t cookie, int64_t now_ns) {
  const int slot = free_.back();
  free_.pop_back();
  Peer& p = peers_[peer];
  slots_[slot] = Slot{peer, cookie, p.next++, now_ns, true, false};
  p.done.push_back(0);
  ++inflight_;
  return slot;
}

void OpTable::cancel(int slot) {
  Slot& s = slots_[slot];
  if (s.expired) {
    // It expired while its post waited for the provider (the progress a backend runs between
    // FI_EAGAIN retries expires late operations): its number is retired, its kDone fired with
    // GICL_TIMEOUT and its peer failed then. Only the slot is left to give back.
    release(slot);
    return;
  }
  Peer& p = peers_[s.peer];
  // Only the newest operation of a peer can be cancelled (it was refused at its post).
  if (s.seq + 1 == p.next) {
    --p.next;
    p.done.pop_back();
  } else {
    p.done[s.seq - p.base] = 1;
  }
  release(slot);
  advance(s.peer);
}

void OpTable::complete(int slot, gicl_result_t status, uint64_t value) {
  Slot& s = slots_[slot];
  if (s.expired) {  // its kDone fired at expiry: the slot is free again only now
    release(slot);
    return;
  }
  settle(s, status, value);
  release(slot);
  advance(s.peer);
}

void OpTable::release(int slot) {
  slots_[slot].busy = slots_[slot].expired = false;
  free_.push_back(slot);
  --inflight_;
}

void OpTable::expire_late(int64_t timeout_ms) {
  if (inflight_ == 0) return;
  const int n = expire(now_ns(), timeout_ms * 1000000);
  if (n > 0)
    GICL_WARN(kSubsysNet,
              "net: %d operation(s) to rank %d (first) did not complete within %lld ms "
              "(GICL_NET_TIMEOUT); their peers are marked failed",
              n, expired_peer_, static_cast<long long>(timeout_ms));
}

int OpTable::expire(int64_t now_ns, int64_t timeout_ns) {
  if (now_ns < next_scan_ns_) return 0;
  next_scan_ns_ = now_ns + timeout_ns / 8;
  int n = 0;
  for (Slot& s : slots_) {
    if (!s.busy || s.expired || now_ns - s.posted_ns <= timeout_ns) continue;
    settle(s, GICL_TIMEOUT, 0);
    s.expired = true;
    if (n++ == 0) expired_peer_ = s.peer;
    advance(s.peer);
  }
  return n;
}

void OpTable::push_done(int peer, uint64_t cookie, gicl_result_t status, uint64_t value) {
  Event e;
  e.kind = EventKind::kDone;
  e.status = status;
  e.peer = peer;
  e.cookie = cookie;
  e.value = value;
  ready_.push_back(e);
}

void OpTable::settle(const Slot& s, gicl_result_t status, uint64_t value) {
  Peer& p = peers_[s.peer];
  push_done(s.peer, s.cookie, status, value);
  if (status != GICL_SUCCESS && p.failed == GICL_SUCCESS) p.failed = status;
  p.done[s.seq - p.base] = 1;
}

void OpTable::advance(int peer) {
  Peer& p = peers_[peer];
  while (!p.done.empty() && p.done.front()) {
    p.done.pop_front();
    ++p.base;
  }
  while (!p.markers.empty() && (p.markers.front().seq <= p.base || p.failed != GICL_SUCCESS)) {
    push_done(peer, p.markers.front().cookie, p.failed, 0);
    p.markers.pop_front();
  }
}

void OpTable::flush(int peer, uint64_t cookie) {
  peers_[peer].markers.push_back(Marker{peers_[peer].next, cookie});
  advance(peer);
}

void OpTable::fail_peer(int peer, gicl_result_t status) {
  if (peers_[peer].failed == GICL_SUCCESS) peers_[peer].failed = status;
  advance(peer);
}

int OpTable::take(Event* out, int max) {
  int n = 0;
  while (n < max && !ready_.empty()) {
    out[n++] = ready_.front();
    ready_.pop_front();
  }
  return n;
}

}  // namespace gicl::net
