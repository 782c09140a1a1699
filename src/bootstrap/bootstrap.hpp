// SPDX-License-Identifier: Apache-2.0
// Out-of-band host messaging between the ranks of one job: authenticated TCP connections to and
// from every rank, opened by create() (bootstrap/auth.hpp's handshake on each), and the collectives
// init needs (allgather, broadcast, barrier) built on tagged point-to-point messages. Every wait is
// bounded by GICL_BOOTSTRAP_TIMEOUT and names the rank it waited for.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/auth.hpp"

namespace gicl::bootstrap {

/// Tags below kUserTagBase belong to the bootstrap's own collectives.
enum : uint32_t {
  kTagAllgather = 1,
  kTagBroadcast = 2,
  kTagBarrier = 3,
  kUserTagBase = 0x100,
};

class Bootstrap {
 public:
  /// Joins the job named by `id` as `rank` of `nranks` and opens authenticated connections to
  /// and from every other rank; the listener is closed after that. `cancel` (owned by the
  /// caller) stops every wait when set.
  static Status create(const UniqueIdData& id, int rank, int nranks, const CancelFlag* cancel,
                       int64_t timeout_ms, std::unique_ptr<Bootstrap>* out);
  ~Bootstrap();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const uint8_t* secret() const { return secret_; }
  /// The job id (kJobBytes): names the job in handshakes, socket names and memory tags.
  const uint8_t* job() const { return job_; }

  /// In place: rank r's `bytes` at data + r * bytes are sent to all; ring, n - 1 steps.
  Status allgather(void* data, size_t bytes);
  Status broadcast(void* data, size_t bytes, int root);
  /// Dissemination barrier, ceil(log2 n) rounds.
  Status barrier();
  /// Every rank learns whether any rank's `local` step failed: a failure here returns `local`,
  /// elsewhere GICL_REMOTE_ERROR naming the first failed rank and `what` it failed to do.
  Status agree(Status local, const char* what);
  Status send(int peer, uint32_t tag, const void* data, size_t bytes);
  /// Receives exactly `bytes`; a message of another length is an error naming the peer.
  Status recv(int peer, uint32_t tag, void* data, size_t bytes);
  /// Sends to `to` and receives from `from` at once, so rings of large messages cannot deadlock.
  Status exchange(int to, uint32_t tag, const void* sdata, size_t sbytes, int from, void* rdata,
                  size_t rbytes);

  /// Wakes every blocked call (used by abort from another thread); the object stays valid.
  void shutdown();
  /// Rank r's bootstrap address (its listener's, closed after create): where r's host is.
  const SockAddr& address(int r) const { return peers_[r]; }
  /// Every open connection's descriptor and peer rank, for polling hang-ups only: never read.
  std::vector<std::pair<int, int>> connections() const;

 private:
  struct InConn {
    int fd = -1;
    std::vector<char> rx;  // bytes received, not yet parsed
    std::deque<WireMessage> ready;
    bool closed = false;  // the peer closed; messages already received stay readable
  };

  Bootstrap() = default;
  std::string peer_name(int peer) const;
  /// The peers whose connections to this rank have closed (or failed) by now.
  std::vector<int> closed_peers() const;
  /// Connections to and from every other rank: a peer process that ends closes them, which the
  /// communicator's peer watch sees.
  Status connect_all();
  Status out_conn(int peer, int* fd);
  Status in_conn(int peer, std::vector<ClientHandshake>* clients = nullptr);
  Status pump(int peer);  // reads what is available and parses complete messages
  bool take(int peer, uint32_t tag, WireMessage* m);

  int rank_ = 0;
  int nranks_ = 0;
  int64_t timeout_ms_ = 0;
  const CancelFlag* cancel_ = nullptr;
  uint8_t secret_[kSecretBytes] = {};
  uint8_t job_[kJobBytes] = {};
  int listen_fd_ = -1;
  std::vector<SockAddr> peers_;
  std::vector<int> out_fds_;
  std::vector<InConn> in_;
  std::unique_ptr<class Acceptor> acceptor_;
};

}  // namespace gicl::bootstrap
