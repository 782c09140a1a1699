// SPDX-License-Identifier: Apache-2.0
#include "proxy/ring_reader.hpp"

#include <algorithm>

namespace gicl::proxy {

bool RingReader::next(ProxyRequest* req, uint64_t* ticket, bool* bad_op) {
  // Each word is read once, atomically: a word carries its own commit bit, so no fence orders it
  // against the others and a half-written slot is simply not committed yet.
  auto load = [this](uint64_t t, int word) {
    return __atomic_load_n(&slots_[t & (size_ - 1)].w[word], __ATOMIC_ACQUIRE);
  };
  const uint32_t n = proxy_decode(load, pos_, size_, req);
  if (n == 0) return false;
  if (bad_op != nullptr) {
    const uint64_t w0 = load(pos_, 0) & kProxyPayloadMask;
    *bad_op = static_cast<uint32_t>(proxy_op_of(w0)) >= kProxyOpCount;
  }
  *ticket = pos_;
  open_.push_back(Open{pos_, pos_ + n, false});
  pos_ += n;
  if (pos_ - published_ >= size_ / 4) publish_tail(true);
  return true;
}

void RingReader::publish_tail(bool force) {
  if (pos_ == published_ || (!force && pos_ - published_ < size_ / 4)) return;
  published_ = pos_;
  __atomic_store_n(tail_, pos_, __ATOMIC_RELEASE);
}

void RingReader::complete(uint64_t ticket) {
  // Operations complete in any order; `done` is the first ticket of the oldest one still open.
  auto it = std::lower_bound(open_.begin(), open_.end(), ticket,
                             [](const Open& o, uint64_t t) { return o.ticket < t; });
  if (it != open_.end() && it->ticket == ticket) it->done = true;
  uint64_t mark = done_mark_;
  while (!open_.empty() && open_.front().done) {
    mark = open_.front().end;
    open_.pop_front();
  }
  if (mark != done_mark_) {
    done_mark_ = mark;
    __atomic_store_n(done_, mark, __ATOMIC_RELEASE);
  }
}

}  // namespace gicl::proxy
