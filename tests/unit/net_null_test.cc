// SPDX-License-Identifier: Apache-2.0
// The null backend: every operation completes at once with its cookie and peer, flushes follow
// them, and it checks its arguments as the real backends do.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "net/transport.hpp"

namespace gicl::net {
namespace {

TEST(NetNull, OperationsCompleteAtOnceInPostingOrder) {
  OpenArgs args;
  args.nranks = 3;
  args.max_inflight = 4;
  std::unique_ptr<Transport> t;
  ASSERT_TRUE(open_transport(Backend::kNull, args, &t).ok()) << last_error();
  std::vector<uint8_t> mem(4096);
  std::unique_ptr<Region> r;
  ASSERT_TRUE(t->register_memory(mem.data(), mem.size(), MemKind::kHost, &r).ok());
  const RemoteKey k = r->remote_key();
  EXPECT_EQ(k.backend, static_cast<uint8_t>(Backend::kNull));
  for (uint64_t i = 0; i < 10; ++i)  // more than max_inflight: each completes at once
    ASSERT_TRUE(t->write(static_cast<int>(i % 3), *r, mem.data(), k, 64, 64, i).ok());
  ASSERT_TRUE(t->atomic(2, AtomicOp::kFetchAdd, k, 8, 1, 0, 10).ok());
  ASSERT_TRUE(t->flush(1, 11).ok());
  EXPECT_EQ(t->inflight(), 0);
  Event ev[16];
  int n = 0;
  ASSERT_TRUE(t->poll(ev, 16, &n).ok());
  ASSERT_EQ(n, 12);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(ev[i].cookie, static_cast<uint64_t>(i));
    EXPECT_EQ(ev[i].status, GICL_SUCCESS);
  }
  EXPECT_EQ(ev[4].peer, 1);
  EXPECT_EQ(ev[11].peer, 1);
}

TEST(NetNull, ChecksItsArguments) {
  OpenArgs args;
  args.nranks = 2;
  std::unique_ptr<Transport> t;
  ASSERT_TRUE(open_transport(Backend::kNull, args, &t).ok()) << last_error();
  std::vector<uint8_t> mem(256);
  std::unique_ptr<Region> r;
  ASSERT_TRUE(t->register_memory(mem.data(), mem.size(), MemKind::kHost, &r).ok());
  const RemoteKey k = r->remote_key();
  EXPECT_EQ(t->write(2, *r, mem.data(), k, 0, 8, 0).code(), GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(last_error(), "peer 2"), nullptr) << last_error();
  EXPECT_EQ(t->read(1, *r, mem.data() + 200, k, 0, 100, 0).code(), GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(last_error(), "dst_ptr"), nullptr) << last_error();
  EXPECT_EQ(t->write(1, *r, mem.data(), k, 250, 8, 0).code(), GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(last_error(), "exceeds the remote region"), nullptr) << last_error();
  EXPECT_EQ(t->atomic(1, AtomicOp::kSwap, k, 3, 1, 0, 0).code(), GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(last_error(), "not 8-byte aligned"), nullptr) << last_error();
  EXPECT_EQ(t->inflight(), 0);
}

TEST(NetTransport, TheVerbsBackendIsNamedWhereItIsNotBuilt) {
  std::unique_ptr<Transport> t;
  const Status s = open_transport(Backend::kVerbs, OpenArgs{}, &t);
  EXPECT_EQ(s.code(), GICL_UNSUPPORTED);
  EXPECT_NE(std::strstr(last_error(), "verbs"), nullptr) << last_error();
}

}  // namespace
}  // namespace gicl::net
