// SPDX-License-Identifier: Apache-2.0
// Heartbeat datagrams: what one rank encodes another decodes, naming the sender; any changed
// byte, another job's key, a wrong size, the receiver's own rank or a rank out of range is not a
// heartbeat. A bound heartbeat socket receives a datagram sent to its port.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "core/heartbeat.hpp"

namespace gicl {
namespace {

struct Keys {
  uint8_t a[kHeartbeatKeyBytes], b[kHeartbeatKeyBytes];
  Keys() {
    uint8_t secret[16], job[16], other_job[16];
    for (int i = 0; i < 16; ++i) {
      secret[i] = static_cast<uint8_t>(i + 1);
      job[i] = static_cast<uint8_t>(0x40 + i);
      other_job[i] = static_cast<uint8_t>(0x41 + i);
    }
    EXPECT_TRUE(heartbeat_key(secret, 16, job, 16, a).ok());
    EXPECT_TRUE(heartbeat_key(secret, 16, other_job, 16, b).ok());
  }
};

TEST(Heartbeat, WhatOneRankSignsAnotherAcceptsNamingItsSender) {
  const Keys k;
  EXPECT_NE(std::memcmp(k.a, k.b, kHeartbeatKeyBytes), 0) << "two jobs, one key";
  HeartbeatMsg m;
  ASSERT_TRUE(heartbeat_encode(k.a, 3, 8, 42, &m).ok());
  uint64_t seq = 0;
  EXPECT_EQ(heartbeat_decode(k.a, 0, 8, &m, sizeof(m), &seq), 3);
  EXPECT_EQ(seq, 42u);
}

TEST(Heartbeat, AnythingElseIsNotAHeartbeat) {
  const Keys k;
  HeartbeatMsg m;
  ASSERT_TRUE(heartbeat_encode(k.a, 3, 8, 42, &m).ok());
  uint64_t seq = 0;
  EXPECT_EQ(heartbeat_decode(k.b, 0, 8, &m, sizeof(m), &seq), -1) << "another job's key";
  EXPECT_EQ(heartbeat_decode(k.a, 3, 8, &m, sizeof(m), &seq), -1) << "the receiver's own rank";
  EXPECT_EQ(heartbeat_decode(k.a, 0, 4, &m, sizeof(m), &seq), -1) << "another job size";
  EXPECT_EQ(heartbeat_decode(k.a, 0, 8, &m, sizeof(m) - 1, &seq), -1) << "short";
  std::vector<uint8_t> longer(sizeof(m) + 1);
  std::memcpy(longer.data(), &m, sizeof(m));
  EXPECT_EQ(heartbeat_decode(k.a, 0, 8, longer.data(), longer.size(), &seq), -1) << "long";
  for (size_t i = 0; i < sizeof(m); ++i) {
    for (int bit = 0; bit < 8; bit += 3) {
      HeartbeatMsg bad = m;
      reinterpret_cast<uint8_t*>(&bad)[i] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_EQ(heartbeat_decode(k.a, 0, 8, &bad, sizeof(bad), &seq), -1)
          << "byte " << i << " bit " << bit << " changed, still accepted";
    }
  }
  HeartbeatMsg far;
  ASSERT_TRUE(heartbeat_encode(k.a, 8, 8, 1, &far).ok());
  EXPECT_EQ(heartbeat_decode(k.a, 0, 8, &far, sizeof(far), &seq), -1) << "rank out of range";
}

TEST(Heartbeat, ASocketReceivesWhatIsSentToItsPort) {
  SockAddr lo;
  ASSERT_TRUE(parse_host_port("127.0.0.1:1", "test", &lo).ok());  // the port is not used
  int rx = -1, tx = -1, port = 0, port2 = 0;
  ASSERT_TRUE(heartbeat_open(lo, 4, &rx, &port).ok());
  ASSERT_TRUE(heartbeat_open(lo, 4, &tx, &port2).ok());
  EXPECT_GT(port, 0);
  EXPECT_NE(port, port2);
  const Keys k;
  HeartbeatMsg m;
  ASSERT_TRUE(heartbeat_encode(k.a, 1, 4, 7, &m).ok());
  SockAddr to = lo;
  to.set_port(port);
  ASSERT_EQ(sendto(tx, &m, sizeof(m), 0, reinterpret_cast<const sockaddr*>(&to.storage), to.len),
            static_cast<ssize_t>(sizeof(m)));
  pollfd p{rx, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 2000), 1);
  HeartbeatMsg got;
  ASSERT_EQ(recv(rx, &got, sizeof(got), 0), static_cast<ssize_t>(sizeof(got)));
  uint64_t seq = 0;
  EXPECT_EQ(heartbeat_decode(k.a, 0, 4, &got, sizeof(got), &seq), 1);
  EXPECT_EQ(seq, 7u);
  close(rx);
  close(tx);
}

}  // namespace
}  // namespace gicl
