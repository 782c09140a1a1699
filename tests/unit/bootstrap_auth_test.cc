// SPDX-License-Identifier: Apache-2.0
// The bootstrap handshake's MACs: each field of the transcript, the role and the secret change
// the MAC; the same inputs give the same MAC on both ends; nonces do not repeat.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "bootstrap/auth.hpp"

namespace gicl::bootstrap {
namespace {

struct Inputs {
  uint8_t secret[kSecretBytes];
  uint8_t job[kJobBytes];
  Hello hello{};
  uint8_t nonce[kNonceBytes];
  Inputs() {
    for (size_t i = 0; i < kSecretBytes; ++i) secret[i] = static_cast<uint8_t>(i + 1);
    for (size_t i = 0; i < kJobBytes; ++i) job[i] = static_cast<uint8_t>(0x40 + i);
    for (size_t i = 0; i < kNonceBytes; ++i) nonce[i] = static_cast<uint8_t>(0x80 + i);
    hello.version = kWireVersion;
    hello.rank = 2;
    hello.nranks = 4;
    for (size_t i = 0; i < kNonceBytes; ++i) hello.nonce[i] = static_cast<uint8_t>(0xc0 + i);
  }
  std::string mac(AuthRole role = AuthRole::kClient, MsgType type = MsgType::kRootHello) const {
    uint8_t m[kMacBytes];
    EXPECT_TRUE(auth_mac(secret, role, type, job, hello, nonce, m).ok());
    return std::string(reinterpret_cast<char*>(m), kMacBytes);
  }
};

TEST(BootstrapAuth, TheSameTranscriptGivesTheSameMacAndAnyChangeAnother) {
  const Inputs base;
  const std::string m = base.mac();
  EXPECT_EQ(m, Inputs().mac()) << "two ends computing over one transcript disagree";
  uint8_t raw[kMacBytes];
  std::memcpy(raw, m.data(), kMacBytes);
  EXPECT_TRUE(auth_check(base.secret, AuthRole::kClient, MsgType::kRootHello, base.job, base.hello,
                         base.nonce, raw));

  std::set<std::string> seen{m};
  auto differs = [&](const std::string& other, const char* what) {
    EXPECT_TRUE(seen.insert(other).second) << what << " does not change the MAC";
  };
  differs(base.mac(AuthRole::kServer), "the role");
  differs(base.mac(AuthRole::kClient, MsgType::kPeerHello), "the message type");
  Inputs x;
  x.secret[15] ^= 1;
  differs(x.mac(), "the secret");
  x = Inputs();
  x.job[0] ^= 1;
  differs(x.mac(), "the job id");
  x = Inputs();
  x.hello.rank = 3;
  differs(x.mac(), "the rank");
  x = Inputs();
  x.hello.nranks = 8;
  differs(x.mac(), "the rank count");
  x = Inputs();
  x.hello.nonce[7] ^= 1;
  differs(x.mac(), "the client nonce");
  x = Inputs();
  x.nonce[9] ^= 1;
  differs(x.mac(), "the server nonce");
  x = Inputs();
  x.hello.listen_addr.port = 1234;
  differs(x.mac(), "the listen address");

  raw[31] ^= 1;
  EXPECT_FALSE(auth_check(base.secret, AuthRole::kClient, MsgType::kRootHello, base.job, base.hello,
                          base.nonce, raw))
      << "a MAC with one bit flipped passed";
}

TEST(BootstrapAuth, NoncesAreFreshAndDerivationsDependOnKeyAndText) {
  std::set<std::string> nonces;
  for (int i = 0; i < 1000; ++i) {
    uint8_t n[kNonceBytes];
    ASSERT_TRUE(auth_nonce(n).ok());
    nonces.insert(std::string(reinterpret_cast<char*>(n), kNonceBytes));
  }
  EXPECT_EQ(nonces.size(), 1000u) << "a nonce repeated";
  uint8_t a[16], b[16], c[16];
  const uint8_t k1[4] = {1, 2, 3, 4}, k2[4] = {1, 2, 3, 5};
  ASSERT_TRUE(auth_derive(k1, 4, "job|x", a, 16).ok());
  ASSERT_TRUE(auth_derive(k2, 4, "job|x", b, 16).ok());
  ASSERT_TRUE(auth_derive(k1, 4, "job|y", c, 16).ok());
  EXPECT_NE(std::memcmp(a, b, 16), 0);
  EXPECT_NE(std::memcmp(a, c, 16), 0);
  uint8_t big[64];
  EXPECT_FALSE(auth_derive(k1, 4, "x", big, sizeof(big)).ok()) << "more than 32 bytes derived";
}

}  // namespace
}  // namespace gicl::bootstrap
