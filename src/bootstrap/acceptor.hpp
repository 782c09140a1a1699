// SPDX-License-Identifier: Apache-2.0
// Authenticated accept: polls the listening socket and every half-open connection together, so
// a port scan, a silent client or a flood of garbage never blocks the ranks that are real. Each
// connection is the server's end of bootstrap/auth.hpp's handshake.
#pragma once

#include <vector>

#include "bootstrap/auth.hpp"

namespace gicl::bootstrap {

class Acceptor {
 public:
  /// Accepts hellos of `type` whose sender proves it holds `secret` for job `job`; nranks < 0
  /// accepts any rank count (the root learns it from the first valid hello).
  Acceptor(int listen_fd, const uint8_t* secret, const uint8_t* job, MsgType type, int nranks);
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  /// Returns the next connection whose hello is valid and whose proof holds; invalid ones are
  /// logged and closed. `clients` (may be null) are this process's own outgoing handshakes,
  /// advanced in the same poll: between ranks each is client and server at once; one that is
  /// done is watched for a hang-up, as is every descriptor in `watched`: a peer process that
  /// ends fails the call at once with GICL_REMOTE_ERROR (`*fd` the descriptor that hung up).
  Status accept_one(Deadline deadline, const CancelFlag* cancel, int* fd, Hello* hello,
                    std::vector<ClientHandshake>* clients = nullptr,
                    const std::vector<int>* watched = nullptr);
  /// The job has `nranks` ranks (the root learns it from the first hello): up to twice as many
  /// handshakes may be in progress at once.
  void expect_ranks(int nranks);
  /// Number of connections rejected so far (tests read it).
  int rejected() const { return rejected_; }

 private:
  struct Pending {
    int fd;
    Clock::time_point started;
    size_t got;
    unsigned char buf[sizeof(WireHeader) + sizeof(Hello)];
    bool challenged = false;  // the Challenge is sent; buf now collects the Proof
    Hello hello{};
    uint8_t nonce[kNonceBytes] = {};
  };
  void reject(size_t index, const char* why);
  // Reads what is available on pending_[i]; returns true when a valid proof completed.
  bool advance(size_t index, int* fd, Hello* hello);
  // The hello of pending_[i] is complete and valid: answer with a Challenge.
  bool challenge(size_t index);

  /// accept4 found no descriptor free: free a silent half-open connection if there is one, and
  /// leave the listener (which stays readable) out of the poll for a while, doubling from 1 ms to
  /// 100 ms while it lasts.
  void out_of_descriptors(int err);

  int listen_fd_;
  uint8_t secret_[kSecretBytes];
  uint8_t job_[kJobBytes];
  MsgType type_;
  int nranks_;
  int rejected_ = 0;
  std::vector<Pending> pending_;
  size_t max_pending_ = 0;
  Clock::time_point listen_again_{};      // the listener sits out of the poll until then
  std::chrono::milliseconds backoff_{0};  // the current pause; 0: accepting
};

}  // namespace gicl::bootstrap
