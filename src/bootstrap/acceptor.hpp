// SPDX-License-Identifier: Apache-2.0
// Authenticated accept: polls the listening socket and every half-open connection together, so
// a port scan, a silent client or a flood of garbage never blocks the ranks that are real.
#pragma once

#include <vector>

#include "bootstrap/wire.hpp"

namespace gicl::bootstrap {

class Acceptor {
 public:
  /// Accepts hellos of `type` carrying `secret`; nranks < 0 accepts any rank count (the root
  /// learns it from the first valid hello).
  Acceptor(int listen_fd, const uint8_t* secret, MsgType type, int nranks);
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  /// Returns the next connection whose hello is valid; invalid ones are logged and closed.
  Status accept_one(Deadline deadline, const CancelFlag* cancel, int* fd, Hello* hello);
  /// Number of connections rejected so far (tests read it).
  int rejected() const { return rejected_; }

 private:
  struct Pending {
    int fd;
    Clock::time_point started;
    size_t got;
    unsigned char buf[sizeof(WireHeader) + sizeof(Hello)];
  };
  void reject(size_t index, const char* why);
  // Reads what is available on pending_[i]; returns true when a valid hello completed.
  bool advance(size_t index, int* fd, Hello* hello);

  /// accept4 found no descriptor free: free a silent half-open connection if there is one, and
  /// leave the listener (which stays readable) out of the poll for a while, doubling from 1 ms to
  /// 100 ms while it lasts.
  void out_of_descriptors(int err);

  int listen_fd_;
  uint8_t secret_[kSecretBytes];
  MsgType type_;
  int nranks_;
  int rejected_ = 0;
  std::vector<Pending> pending_;
  Clock::time_point listen_again_{};      // the listener sits out of the poll until then
  std::chrono::milliseconds backoff_{0};  // the current pause; 0: accepting
};

}  // namespace gicl::bootstrap
