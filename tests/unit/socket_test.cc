// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstdlib>

#include "bootstrap/wire.hpp"
#include "common/socket.hpp"

namespace gicl {
namespace {

TEST(Socket, ParsesHostPortForms) {
  SockAddr a;
  ASSERT_TRUE(parse_host_port("127.0.0.1:4242", "X", &a).ok());
  EXPECT_EQ(a.family(), AF_INET);
  EXPECT_EQ(a.port(), 4242);
  EXPECT_EQ(a.str(), "127.0.0.1:4242");
  ASSERT_TRUE(parse_host_port("[::1]:80", "X", &a).ok());
  EXPECT_EQ(a.family(), AF_INET6);
  EXPECT_EQ(a.str(), "[::1]:80");
  ASSERT_TRUE(parse_host_port("localhost:9", "X", &a).ok());
  for (const char* bad : {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "1.2.3.4:70000", "[::1]80",
                          ":80", "[::1:80"}) {
    Status s = parse_host_port(bad, "GICL_ROOT_ADDR", &a);
    EXPECT_EQ(s.code(), GICL_INVALID_ARGUMENT) << bad;
    EXPECT_NE(std::string(last_error()).find("GICL_ROOT_ADDR"), std::string::npos);
  }
}

TEST(Socket, WireAddressRoundTrips) {
  for (const char* text : {"10.1.2.3:1234", "[fd00::7]:65535"}) {
    SockAddr a, b;
    ASSERT_TRUE(parse_host_port(text, "X", &a).ok());
    ASSERT_TRUE(bootstrap::from_wire(bootstrap::to_wire(a), &b));
    EXPECT_EQ(a.str(), b.str());
  }
  bootstrap::WireAddr w{};
  w.family = 99;
  SockAddr c;
  EXPECT_FALSE(bootstrap::from_wire(w, &c));
}

TEST(Socket, InterfaceSelectionHonoursIfnameAndFamily) {
  setenv("GICL_SOCKET_IFNAME", "lo", 1);
  setenv("GICL_SOCKET_FAMILY", "IPV4", 1);
  SockAddr a;
  std::string ifname;
  ASSERT_TRUE(find_interface_address(&a, &ifname).ok()) << last_error();
  EXPECT_EQ(ifname, "lo");
  EXPECT_EQ(a.str(), "127.0.0.1:0");
  setenv("GICL_SOCKET_FAMILY", "IPV6", 1);
  ASSERT_TRUE(find_interface_address(&a, &ifname).ok()) << last_error();
  EXPECT_EQ(a.str(), "[::1]:0");
  setenv("GICL_SOCKET_IFNAME", "=nosuchif0", 1);
  EXPECT_EQ(find_interface_address(&a, &ifname).code(), GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error()).find("GICL_SOCKET_IFNAME"), std::string::npos);
  setenv("GICL_SOCKET_IFNAME", "lo", 1);
  unsetenv("GICL_SOCKET_FAMILY");
}

TEST(Socket, SecretComparisonIsExact) {
  uint8_t a[16] = {1, 2, 3}, b[16] = {1, 2, 3};
  EXPECT_TRUE(bootstrap::secret_equal(a, b));
  b[15] ^= 1;
  EXPECT_FALSE(bootstrap::secret_equal(a, b));
}

TEST(Socket, ListenConnectSendRecvWithDeadline) {
  SockAddr any, bound;
  ASSERT_TRUE(parse_host_port("127.0.0.1:1", "X", &any).ok());
  any.set_port(0);
  int lfd = -1;
  ASSERT_TRUE(listen_on(any, 4, &lfd, &bound).ok());
  int c = -1;
  ASSERT_TRUE(connect_to(bound, Deadline::after_ms(2000), nullptr, "test", &c).ok());
  int s = -1;
  for (int i = 0; i < 200 && s < 0; ++i) {
    s = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK);
    if (s < 0) usleep(1000);
  }
  ASSERT_GE(s, 0);
  const char msg[] = "hello";
  ASSERT_TRUE(send_all(c, msg, sizeof(msg), Deadline::after_ms(1000), nullptr, "peer").ok());
  char buf[sizeof(msg)];
  ASSERT_TRUE(recv_all(s, buf, sizeof(buf), Deadline::after_ms(1000), nullptr, "peer").ok());
  EXPECT_STREQ(buf, msg);
  // Nothing more arrives: the receive must time out, naming the peer, not hang.
  Status st = recv_all(s, buf, 1, Deadline::after_ms(100), nullptr, "rank 7");
  EXPECT_EQ(st.code(), GICL_TIMEOUT);
  EXPECT_NE(std::string(last_error()).find("rank 7"), std::string::npos);
  // A cancelled wait returns ABORTED promptly.
  CancelFlag cancel{true};
  EXPECT_EQ(recv_all(s, buf, 1, Deadline::after_ms(5000), &cancel, "peer").code(), GICL_ABORTED);
  close(c);
  EXPECT_EQ(recv_all(s, buf, 1, Deadline::after_ms(1000), nullptr, "peer").code(),
            GICL_REMOTE_ERROR);
  close(s);
  close(lfd);
}

}  // namespace
}  // namespace gicl
