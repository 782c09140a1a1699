// SPDX-License-Identifier: Apache-2.0
#include "core/heartbeat.hpp"

#include <openssl/crypto.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

#include "bootstrap/auth.hpp"
#include "common/hmac.hpp"

namespace gicl {
namespace {

constexpr size_t kSigned = offsetof(HeartbeatMsg, mac);

bool mac_of(const uint8_t* key, const HeartbeatMsg& m, uint8_t* out) {
  uint8_t full[kHmacBytes];
  if (!hmac_sha256(key, kHeartbeatKeyBytes, &m, kSigned, full)) return false;
  std::memcpy(out, full, sizeof(m.mac));
  return true;
}

}  // namespace

Status heartbeat_key(const uint8_t* secret, size_t secret_bytes, const uint8_t* job,
                     size_t job_bytes, uint8_t* key) {
  std::string text = "gicl heartbeat ";
  text.append(reinterpret_cast<const char*>(job), job_bytes);
  return bootstrap::auth_derive(secret, secret_bytes, text, key, kHeartbeatKeyBytes);
}

Status heartbeat_encode(const uint8_t* key, int rank, int nranks, uint64_t seq, HeartbeatMsg* out) {
  *out = HeartbeatMsg{};
  out->magic = kHeartbeatMagic;
  out->version = kHeartbeatVersion;
  out->rank = rank;
  out->nranks = nranks;
  out->seq = seq;
  if (!mac_of(key, *out, out->mac))
    return GICL_FAIL(GICL_SYSTEM_ERROR, "heartbeat: OpenSSL's HMAC-SHA-256 failed");
  return GICL_SUCCESS;
}

int heartbeat_decode(const uint8_t* key, int me, int nranks, const void* data, size_t bytes,
                     uint64_t* seq) {
  if (bytes != sizeof(HeartbeatMsg)) return -1;
  HeartbeatMsg m;
  std::memcpy(&m, data, sizeof(m));
  if (m.magic != kHeartbeatMagic || m.version != kHeartbeatVersion || m.nranks != nranks ||
      m.rank < 0 || m.rank >= nranks || m.rank == me)
    return -1;
  uint8_t mac[sizeof(m.mac)];
  if (!mac_of(key, m, mac) || CRYPTO_memcmp(mac, m.mac, sizeof(mac)) != 0) return -1;
  *seq = m.seq;
  return m.rank;
}

Status heartbeat_open(const SockAddr& local, int nranks, int* fd, int* port) {
  int s = ::socket(local.family(), SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  GICL_SYSCHECK(s, "socket (heartbeats)");
  SockAddr addr = local;
  addr.set_port(0);
  if (::bind(s, reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) != 0) {
    const int err = errno;
    ::close(s);
    return GICL_FAIL(GICL_SYSTEM_ERROR, "heartbeats: cannot bind a UDP socket to %s: %s",
                     addr.str().c_str(), std::strerror(err));
  }
  // A round from every peer, with the kernel's per-datagram overhead (about 1 KiB each), so
  // that a watch thread held off the CPU for a while loses none. The kernel caps it at
  // net.core.rmem_max; what it grants is enough for small jobs either way.
  int want = static_cast<int>(std::min<int64_t>(int64_t{nranks} * 4096, 64 << 20));
  (void)setsockopt(s, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
  SockAddr bound;
  bound.len = sizeof(bound.storage);
  if (getsockname(s, reinterpret_cast<sockaddr*>(&bound.storage), &bound.len) != 0) {
    const int err = errno;
    ::close(s);
    return GICL_FAIL(GICL_SYSTEM_ERROR, "heartbeats: getsockname: %s", std::strerror(err));
  }
  *fd = s;
  *port = bound.port();
  return GICL_SUCCESS;
}

}  // namespace gicl
