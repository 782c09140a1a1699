// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/auth.hpp"

#include <openssl/crypto.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "common/hmac.hpp"
#include "common/log.hpp"

namespace gicl::bootstrap {

namespace {

constexpr char kLabel[] = "gicl bootstrap v2";

}  // namespace

Status auth_mac(const uint8_t* secret, AuthRole role, MsgType type, const uint8_t* job,
                const Hello& hello, const uint8_t* server_nonce, uint8_t* mac) {
  // Fixed-size fields in a fixed order: no two transcripts share an encoding.
  unsigned char msg[sizeof(kLabel) + 1 + 4 + kJobBytes + sizeof(Hello) + kNonceBytes];
  size_t off = 0;
  auto put = [&](const void* p, size_t n) {
    std::memcpy(msg + off, p, n);
    off += n;
  };
  put(kLabel, sizeof(kLabel));
  const uint8_t r = static_cast<uint8_t>(role);
  put(&r, 1);
  const uint32_t t = static_cast<uint32_t>(type);
  put(&t, 4);
  put(job, kJobBytes);
  put(&hello, sizeof(Hello));
  put(server_nonce, kNonceBytes);
  static_assert(kMacBytes == kHmacBytes);
  if (!hmac_sha256(secret, kSecretBytes, msg, off, mac))
    return GICL_FAIL(GICL_SYSTEM_ERROR, "bootstrap: OpenSSL's HMAC-SHA-256 failed");
  return GICL_SUCCESS;
}

bool auth_check(const uint8_t* secret, AuthRole role, MsgType type, const uint8_t* job,
                const Hello& hello, const uint8_t* server_nonce, const uint8_t* mac) {
  uint8_t want[kMacBytes];
  if (!auth_mac(secret, role, type, job, hello, server_nonce, want).ok()) return false;
  return CRYPTO_memcmp(want, mac, kMacBytes) == 0;
}

Status auth_derive(const void* key, size_t key_bytes, const std::string& text, uint8_t* out,
                   size_t out_bytes) {
  uint8_t mac[kMacBytes];
  if (out_bytes > kMacBytes || !hmac_sha256(key, key_bytes, text.data(), text.size(), mac))
    return GICL_FAIL(GICL_SYSTEM_ERROR, "bootstrap: OpenSSL's HMAC-SHA-256 failed");
  std::memcpy(out, mac, out_bytes);
  return GICL_SUCCESS;
}

Status auth_nonce(uint8_t* nonce) {
  size_t got = 0;
  while (got < kNonceBytes) {
    ssize_t k = getrandom(nonce + got, kNonceBytes - got, 0);
    if (k < 0 && errno == EINTR) continue;
    GICL_SYSCHECK(k < 0 ? -1 : 0, "getrandom");
    got += static_cast<size_t>(k);
  }
  return GICL_SUCCESS;
}

ClientHandshake::ClientHandshake(int fd, MsgType type, const uint8_t* secret, const uint8_t* job,
                                 const Hello& hello, std::string peer)
    : fd_(fd), type_(type), secret_(secret), job_(job), hello_(hello), peer_(std::move(peer)) {}

Status ClientHandshake::start(Deadline d, const CancelFlag* cancel) {
  GICL_CHECK(auth_nonce(hello_.nonce));
  WireHeader h{static_cast<uint32_t>(type_), 0, sizeof(Hello)};
  unsigned char out[sizeof(h) + sizeof(Hello)];
  std::memcpy(out, &h, sizeof(h));
  std::memcpy(out + sizeof(h), &hello_, sizeof(Hello));
  return send_all(fd_, out, sizeof(out), d, cancel, peer_.c_str());
}

Status ClientHandshake::progress(Deadline d, const CancelFlag* cancel) {
  while (!done_) {
    ssize_t k = ::recv(fd_, buf_ + got_, sizeof(buf_) - got_, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return GICL_SUCCESS;
    if (k <= 0)
      return GICL_FAIL(GICL_REMOTE_ERROR, "bootstrap: %s %s during the handshake", peer_.c_str(),
                       k == 0 ? "closed the connection" : "failed (read error)");
    got_ += static_cast<size_t>(k);
    if (got_ >= sizeof(WireHeader)) {
      WireHeader h;
      std::memcpy(&h, buf_, sizeof(h));
      if (h.type != static_cast<uint32_t>(MsgType::kChallenge) || h.length != sizeof(Challenge))
        return GICL_FAIL(GICL_REMOTE_ERROR,
                         "bootstrap: %s answered the hello with message type %u (%llu bytes), "
                         "not a challenge",
                         peer_.c_str(), h.type, static_cast<unsigned long long>(h.length));
    }
    if (got_ < sizeof(buf_)) continue;
    Challenge c;
    std::memcpy(&c, buf_ + sizeof(WireHeader), sizeof(c));
    if (!auth_check(secret_, AuthRole::kServer, type_, job_, hello_, c.nonce, c.mac))
      return GICL_FAIL(GICL_REMOTE_ERROR,
                       "bootstrap: %s failed authentication: it does not hold this job's secret "
                       "(another job, or another process listening at its address)",
                       peer_.c_str());
    Proof p;
    GICL_CHECK(auth_mac(secret_, AuthRole::kClient, type_, job_, hello_, c.nonce, p.mac));
    WireHeader h{static_cast<uint32_t>(MsgType::kProof), 0, sizeof(Proof)};
    unsigned char out[sizeof(h) + sizeof(Proof)];
    std::memcpy(out, &h, sizeof(h));
    std::memcpy(out + sizeof(h), &p, sizeof(p));
    GICL_CHECK(send_all(fd_, out, sizeof(out), d, cancel, peer_.c_str()));
    done_ = true;
  }
  return GICL_SUCCESS;
}

Status ClientHandshake::run(Deadline d, const CancelFlag* cancel) {
  GICL_CHECK(start(d, cancel));
  while (!done_) {
    if (cancelled(cancel)) return GICL_FAIL(GICL_ABORTED, "aborted while authenticating");
    pollfd p{fd_, POLLIN, 0};
    int n = ::poll(&p, 1, d.poll_ms());
    if (n < 0 && errno != EINTR) GICL_SYSCHECK(-1, "poll");
    if (n > 0) GICL_CHECK(progress(d, cancel));
    if (!done_ && d.expired())
      return GICL_FAIL(GICL_TIMEOUT, "bootstrap: %s did not answer our hello in time",
                       peer_.c_str());
  }
  return GICL_SUCCESS;
}

}  // namespace gicl::bootstrap
