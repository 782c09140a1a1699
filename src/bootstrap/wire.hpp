// SPDX-License-Identifier: Apache-2.0
// Bootstrap wire format. Every byte read from a socket is checked against these definitions
// before use: type, length bound and (for hellos) the challenge-response of bootstrap/auth.hpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "common/socket.hpp"

namespace gicl::bootstrap {

inline constexpr uint32_t kWireVersion = 2;
inline constexpr size_t kSecretBytes = 16;
inline constexpr size_t kNonceBytes = 16;
inline constexpr size_t kJobBytes = 16;
inline constexpr size_t kMacBytes = 32;  // HMAC-SHA-256
/// Largest payload accepted in one message; a header announcing more is a protocol error.
inline constexpr uint64_t kMaxMessageBytes = 64ull << 20;
/// Largest abort text the root sends.
inline constexpr uint64_t kMaxAbortText = 4096;
/// How long an accepted connection may take to complete its handshake (hello, then proof) before
/// it is dropped; keeps a port scan or a silent client from holding init.
inline constexpr int kHelloTimeoutMs = 2000;

enum class MsgType : uint32_t {
  kRootHello = 0x10,   // rank -> root: its listening address
  kPeerHello = 0x11,   // rank -> rank: first message on a peer connection
  kChallenge = 0x12,   // server -> client: its nonce and MAC (bootstrap/auth.hpp)
  kProof = 0x13,       // client -> server: its MAC
  kRootTable = 0x20,   // root -> ranks: every rank's listening address
  kRootAbort = 0x21,   // root -> ranks: the job cannot start in time; text says why
  kRootRefuse = 0x22,  // root -> ranks: the job is misconfigured (sizes, ranks); text says how
  kRootLost = 0x23,  // root -> ranks: a rank's process ended before the job started; text names it
  kData = 0x30,      // rank -> rank: tagged payload
};

/// Fixed 16-byte header before every message.
struct WireHeader {
  uint32_t type;
  uint32_t tag;
  uint64_t length;
};
static_assert(sizeof(WireHeader) == 16);

/// A socket address in a fixed layout (sockaddr_storage is not portable across builds).
struct WireAddr {
  uint16_t family;  // AF_INET or AF_INET6
  uint16_t port;    // host order
  uint32_t scope_id;
  uint8_t addr[16];
};
static_assert(sizeof(WireAddr) == 24);

WireAddr to_wire(const SockAddr& a);
/// False if the family is not IPv4/IPv6.
bool from_wire(const WireAddr& w, SockAddr* out);

/// The first message on every connection; no secret: the Proof that follows shows the sender
/// holds it.
struct Hello {
  uint32_t version;
  uint32_t pad;
  uint8_t nonce[kNonceBytes];  // the client's, fresh
  int32_t rank;
  int32_t nranks;
  WireAddr listen_addr;  // meaningful in kRootHello
};
static_assert(sizeof(Hello) == 56);

/// The server's answer to a Hello.
struct Challenge {
  uint8_t nonce[kNonceBytes];  // the server's, fresh
  uint8_t mac[kMacBytes];
};
static_assert(sizeof(Challenge) == 48);

/// The client's answer to a Challenge.
struct Proof {
  uint8_t mac[kMacBytes];
};

/// Constant-time comparison, so the secret cannot be guessed byte by byte from timings.
inline bool secret_equal(const uint8_t* a, const uint8_t* b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < kSecretBytes; ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

/// Contents of gicl_unique_id_t.
struct UniqueIdData {
  uint32_t version;
  uint32_t pad;
  uint8_t secret[kSecretBytes];
  WireAddr root;
  uint8_t job[kJobBytes];  // names the job in every MAC: one secret shared by two jobs stays apart
};
static_assert(sizeof(UniqueIdData) <= 128);

/// The id's bytes (gicl_unique_id_t's first sizeof(UniqueIdData)) as UniqueIdData, checked:
/// this wire version and a root address of a known family.
Status decode_unique_id(const void* bytes, size_t n, UniqueIdData* out);

/// Why a hello of `type` for a job of `nranks` (< 0: any count) cannot be accepted, or nullptr.
/// `h` is its header, `hello` its body.
const char* hello_problem(const WireHeader& h, const Hello& hello, MsgType type, int nranks);

/// A tagged message between ranks (kData).
struct WireMessage {
  uint32_t tag;
  std::vector<char> payload;
};

/// Moves every complete message at the front of `rx` to `out`, leaving a partial one in `rx`.
/// Each header is checked (kData, at most kMaxMessageBytes) before its length is trusted; a
/// malformed one fails naming `from`.
Status take_messages(std::vector<char>* rx, std::deque<WireMessage>* out, const char* from);

}  // namespace gicl::bootstrap
