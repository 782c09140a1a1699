// SPDX-License-Identifier: Apache-2.0
// Heartbeats: every rank's peer watch sends a small datagram to every other rank each
// GICL_PEER_TIMEOUT / 5 over UDP, from its bootstrap address, and a rank from which none arrives
// for GICL_PEER_TIMEOUT is named. A process that ends closes its bootstrap connections, which the
// watch sees at once; heartbeats find what closes nothing: a node that stops answering (power,
// network, kernel), or a process that is stopped. A rank that is merely busy keeps sending: its
// watch thread is not the thread that is busy.
//
// Each datagram carries the sender's rank and a sequence number under HMAC-SHA-256 with a key
// derived from the job's secret and id: a datagram from outside the job, or replayed, keeps no
// rank alive.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/socket.hpp"
#include "common/status.hpp"

namespace gicl {

inline constexpr uint32_t kHeartbeatMagic = 0x47484231;  // "GHB1"
inline constexpr uint16_t kHeartbeatVersion = 1;
inline constexpr size_t kHeartbeatKeyBytes = 32;

struct HeartbeatMsg {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved;
  int32_t rank;     // the sender
  int32_t nranks;   // the sender's job size
  uint64_t seq;     // strictly increasing per sender: a replayed datagram is ignored
  uint8_t mac[16];  // HMAC-SHA-256 (first 16 bytes) over the fields above
};
static_assert(sizeof(HeartbeatMsg) == 40, "HeartbeatMsg crosses the network: keep its size");

/// The key heartbeats are signed with: derived from the job's secret and id, so that jobs
/// sharing a secret do not accept each other's.
Status heartbeat_key(const uint8_t* secret, size_t secret_bytes, const uint8_t* job,
                     size_t job_bytes, uint8_t* key);

/// A signed heartbeat from `rank` of `nranks`.
Status heartbeat_encode(const uint8_t* key, int rank, int nranks, uint64_t seq, HeartbeatMsg* out);

/// The sender's rank when `data` is a heartbeat of this job (size, magic, version, rank in
/// range and not `me`, job size and MAC all right), with its sequence number; else -1.
int heartbeat_decode(const uint8_t* key, int me, int nranks, const void* data, size_t bytes,
                     uint64_t* seq);

/// A UDP socket bound to `local`'s address (any port), non-blocking, with a receive buffer
/// large enough for a round of every peer's heartbeats; its port in `*port`.
Status heartbeat_open(const SockAddr& local, int nranks, int* fd, int* port);

}  // namespace gicl
