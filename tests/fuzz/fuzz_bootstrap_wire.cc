// SPDX-License-Identifier: Apache-2.0
// The bootstrap's wire parsers on bytes from anywhere: a stream of tagged messages as a peer
// connection delivers it (split at an input-chosen point, as recv may), a hello as the acceptor
// reads it, an address table entry, a challenge's MAC check and a heartbeat datagram. None may read
// outside its input, and a stream parsed in two pieces must give what it gives in one.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "bootstrap/auth.hpp"
#include "bootstrap/wire.hpp"
#include "core/heartbeat.hpp"
#include "fuzz/fuzz_common.hpp"

using namespace gicl::bootstrap;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz_quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // Messages, in one piece and in two.
  std::vector<char> whole(data + 1, data + size), rx;
  std::deque<WireMessage> one, two;
  const gicl::Status a = take_messages(&whole, &one, "the fuzzer");
  const size_t cut = size > 1 ? data[0] % size : 0;
  rx.assign(data + 1, data + 1 + (cut > 0 ? cut - 1 : 0));
  gicl::Status b = take_messages(&rx, &two, "the fuzzer");
  if (b.ok()) {
    rx.insert(rx.end(), data + 1 + (cut > 0 ? cut - 1 : 0), data + size);
    b = take_messages(&rx, &two, "the fuzzer");
  }
  if (a.ok() != b.ok() || (a.ok() && (one.size() != two.size() || whole.size() != rx.size())))
    __builtin_trap();
  for (size_t i = 0; a.ok() && i < one.size(); ++i)
    if (one[i].tag != two[i].tag || one[i].payload != two[i].payload) __builtin_trap();
  // A hello after its header.
  if (size >= sizeof(WireHeader) + sizeof(Hello)) {
    WireHeader h;
    Hello hello;
    std::memcpy(&h, data, sizeof(h));
    std::memcpy(&hello, data + sizeof(h), sizeof(hello));
    const char* why = hello_problem(h, hello, MsgType::kRootHello, data[0] % 2 ? -1 : 4);
    if (why == nullptr && (hello.rank < 0 || hello.rank >= hello.nranks)) __builtin_trap();
  }
  // An address.
  if (size >= sizeof(WireAddr)) {
    WireAddr w;
    std::memcpy(&w, data, sizeof(w));
    gicl::SockAddr sa;
    if (from_wire(w, &sa) && sa.family() != w.family) __builtin_trap();
  }
  // A challenge under a fixed secret: a MAC from the input never checks as valid by accident.
  if (size >= sizeof(Hello) + kNonceBytes + kMacBytes) {
    static const uint8_t secret[kSecretBytes] = {7}, job[kJobBytes] = {9};
    Hello hello;
    std::memcpy(&hello, data, sizeof(hello));
    const uint8_t* nonce = data + sizeof(hello);
    const uint8_t* mac = nonce + kNonceBytes;
    uint8_t want[kMacBytes];
    if (!auth_mac(secret, AuthRole::kServer, MsgType::kPeerHello, job, hello, nonce, want).ok())
      __builtin_trap();
    const bool same = std::memcmp(want, mac, kMacBytes) == 0;
    if (auth_check(secret, AuthRole::kServer, MsgType::kPeerHello, job, hello, nonce, mac) != same)
      __builtin_trap();
  }
  // A datagram at the heartbeat socket: accepted only if it is the very heartbeat this job's key
  // signs for its sender and sequence number.
  {
    static uint8_t key[gicl::kHeartbeatKeyBytes];
    static const bool keyed = [] {
      const uint8_t secret[kSecretBytes] = {7}, job[kJobBytes] = {9};
      return gicl::heartbeat_key(secret, kSecretBytes, job, kJobBytes, key).ok();
    }();
    if (!keyed) __builtin_trap();
    uint64_t seq = 0;
    const int from = gicl::heartbeat_decode(key, 0, 8, data, size, &seq);
    if (from >= 0) {
      gicl::HeartbeatMsg m;
      if (from >= 8 || !gicl::heartbeat_encode(key, from, 8, seq, &m).ok() || size != sizeof(m) ||
          std::memcmp(&m, data, sizeof(m)) != 0)
        __builtin_trap();
    }
  }
  return 0;
}
