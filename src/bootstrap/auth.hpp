// SPDX-License-Identifier: Apache-2.0
// The bootstrap's mutual authentication: every connection (rank to root, rank to rank) proves on
// both ends that they hold the job's secret, without the secret crossing the wire.
//
//   client -> server  Hello      { version, fresh client nonce, rank, nranks, listen address }
//   server -> client  Challenge  { fresh server nonce, HMAC(secret, "server" | transcript) }
//   client -> server  Proof      { HMAC(secret, "client" | transcript) }
//
// transcript = message type | job id | the Hello's bytes | the server nonce. HMAC-SHA-256 is
// OpenSSL's. Nonces from both sides make every MAC fresh: a recorded exchange replays nowhere,
// and a listener that squats an address learns a nonce and nothing it can answer with.
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/wire.hpp"

namespace gicl::bootstrap {

/// Which end a MAC speaks for: the two ends' MACs over one transcript differ.
enum class AuthRole : uint8_t { kServer = 1, kClient = 2 };

/// HMAC-SHA-256 under `secret` over (role, type, job, hello, server nonce).
Status auth_mac(const uint8_t* secret, AuthRole role, MsgType type, const uint8_t* job,
                const Hello& hello, const uint8_t* server_nonce, uint8_t* mac);

/// True when `mac` is the expected one (compared in constant time).
bool auth_check(const uint8_t* secret, AuthRole role, MsgType type, const uint8_t* job,
                const Hello& hello, const uint8_t* server_nonce, const uint8_t* mac);

/// `out_bytes` (at most 32) of HMAC-SHA-256(key, text): job ids, and the secret of a launcher
/// job that has none (GICL_BOOTSTRAP_INSECURE).
Status auth_derive(const void* key, size_t key_bytes, const std::string& text, uint8_t* out,
                   size_t out_bytes);

/// A fresh nonce from the OS's random source.
Status auth_nonce(uint8_t* nonce);

/// The client's side on a connected socket, as a state machine that never blocks: start() sends
/// the Hello; progress() reads the Challenge, checks the server's MAC and sends the Proof.
/// Used blocking (run()) toward the root and interleaved with accepting between ranks, where
/// every rank is client and server at once.
class ClientHandshake {
 public:
  ClientHandshake(int fd, MsgType type, const uint8_t* secret, const uint8_t* job,
                  const Hello& hello, std::string peer);
  Status start(Deadline d, const CancelFlag* cancel);
  /// Reads what has arrived; done() once the Proof is sent. A server whose MAC is wrong (not
  /// this job's) fails with GICL_REMOTE_ERROR naming the peer.
  Status progress(Deadline d, const CancelFlag* cancel);
  /// start() then progress() until done or `d`.
  Status run(Deadline d, const CancelFlag* cancel);
  bool done() const { return done_; }
  /// The server's Challenge arrived (whatever its MAC): a connection dropped before it was
  /// dropped by a busy server, not refused by a wrong one.
  bool challenged() const { return got_ == sizeof(buf_); }
  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }

 private:
  int fd_;
  MsgType type_;
  const uint8_t* secret_;
  const uint8_t* job_;
  Hello hello_;
  std::string peer_;
  unsigned char buf_[sizeof(WireHeader) + sizeof(Challenge)];
  size_t got_ = 0;
  bool done_ = false;
};

}  // namespace gicl::bootstrap
