// SPDX-License-Identifier: Apache-2.0
// Deadlines and cancellation for every bounded host-side wait.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace gicl {

using Clock = std::chrono::steady_clock;

class Deadline {
 public:
  static Deadline after_ms(int64_t ms) {
    return Deadline(Clock::now() + std::chrono::milliseconds(ms));
  }
  static Deadline never() { return Deadline(Clock::time_point::max()); }
  bool expired() const { return Clock::now() >= t_; }
  /// Milliseconds left, clamped to [0, cap], for poll().
  int poll_ms(int cap = 100) const {
    if (t_ == Clock::time_point::max()) return cap;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }
  Deadline earlier(Deadline o) const { return o.t_ < t_ ? o : *this; }

 private:
  explicit Deadline(Clock::time_point t) : t_(t) {}
  Clock::time_point t_;
};

/// Set by gicl_comm_abort; every blocking host loop polls it at least every 100 ms.
using CancelFlag = std::atomic<bool>;

inline bool cancelled(const CancelFlag* c) {
  return c != nullptr && c->load(std::memory_order_acquire);
}

}  // namespace gicl
