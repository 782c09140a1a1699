// SPDX-License-Identifier: Apache-2.0
// Passing file descriptors (CUDA POSIX-FD shareable handles) between the ranks of one node over
// Unix-domain sockets. Each connection is checked on both ends: the kernel-reported credentials
// of the other process (SO_PEERCRED) must match the pid the rank announced at init and this
// user, and the connecting side's first message carries a token derived from the job secret by
// HMAC (never the secret), which it sends only to a listener whose credentials matched.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/deadline.hpp"
#include "common/status.hpp"

namespace gicl {

/// Fixed message that travels with each descriptor.
struct FdMessage {
  uint32_t version;
  uint32_t kind;    // what the fd is (kFdHeapChunk...)
  uint64_t seq;     // chunk sequence number, checked by the receiver
  uint64_t offset;  // heap offset of the chunk
  uint64_t size;    // chunk bytes
};
static_assert(sizeof(FdMessage) == 32);

inline constexpr uint32_t kFdMessageVersion = 1;
inline constexpr uint32_t kFdHeapChunk = 1;
inline constexpr uint32_t kFdMulticast = 2;
inline constexpr uint32_t kFdHostBoard = 3;

class FdChannel {
 public:
  struct Peer {
    int rank;
    pid_t pid;
  };
  FdChannel() = default;
  ~FdChannel();
  FdChannel(const FdChannel&) = delete;
  FdChannel& operator=(const FdChannel&) = delete;

  /// Binds this rank's abstract socket; `job` must be unique per communicator and equal on all
  /// ranks (from the job id).
  Status listen(const std::string& job, int rank, const uint8_t* secret);
  /// Connects to every peer and accepts each peer's connection. Call after all peers listened.
  Status connect(const std::vector<Peer>& peers, Deadline deadline, const CancelFlag* cancel);
  Status send_fd(int peer, const FdMessage& msg, int fd, Deadline deadline,
                 const CancelFlag* cancel);
  /// Receives one descriptor from `peer` and checks it arrived whole and valid.
  Status recv_fd(int peer, FdMessage* msg, int* fd, Deadline deadline, const CancelFlag* cancel);
  /// Wakes blocked calls (abort).
  void shutdown();

 private:
  std::string address(int rank) const;
  std::string job_;
  int rank_ = -1;
  uint8_t token_[32] = {};  // HMAC(secret, "fd channel|" job)
  int listen_fd_ = -1;
  std::map<int, int> out_;  // peer rank -> connected socket
  std::map<int, int> in_;   // peer rank -> accepted socket
};

}  // namespace gicl
