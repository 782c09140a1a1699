// SPDX-License-Identifier: Apache-2.0
// Every C API function given bad arguments returns GICL_INVALID_ARGUMENT with a message that
// names the argument, and touches nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "gicl/gicl.h"

namespace {

#define EXPECT_BAD_ARG(call, word)                                                       \
  do {                                                                                   \
    EXPECT_EQ((call), GICL_INVALID_ARGUMENT) << #call;                                   \
    EXPECT_NE(std::string(gicl_get_last_error()).find(word), std::string::npos)          \
        << #call << " message '" << gicl_get_last_error() << "' does not name " << word; \
  } while (0)

class ApiArgs : public ::testing::Test {
 protected:
  void SetUp() override {
    gicl_unique_id_t id;
    ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS) << gicl_get_last_error();
    ASSERT_EQ(gicl_comm_init_rank(&comm_, 1, id, 0), GICL_SUCCESS) << gicl_get_last_error();
  }
  void TearDown() override {
    if (comm_) {
      EXPECT_EQ(gicl_comm_destroy(comm_), GICL_SUCCESS) << gicl_get_last_error();
    }
  }
  gicl_comm_t comm_ = nullptr;
};

TEST_F(ApiArgs, VersionAndIds) {
  EXPECT_BAD_ARG(gicl_get_version(nullptr), "version");
  EXPECT_BAD_ARG(gicl_get_unique_id(nullptr), "id");
  int v = 0;
  EXPECT_EQ(gicl_get_version(&v), GICL_SUCCESS);
  EXPECT_EQ(v, GICL_VERSION_CODE);
  EXPECT_EQ(std::string(gicl_get_last_error()), "");  // cleared by a successful call
}

TEST_F(ApiArgs, InitRank) {
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  gicl_comm_t c = nullptr;
  EXPECT_BAD_ARG(gicl_comm_init_rank(nullptr, 1, id, 0), "comm");
  EXPECT_BAD_ARG(gicl_comm_init_rank(&c, 0, id, 0), "nranks");
  EXPECT_BAD_ARG(gicl_comm_init_rank(&c, -3, id, 0), "nranks");
  EXPECT_BAD_ARG(gicl_comm_init_rank(&c, 2, id, 2), "rank");
  EXPECT_BAD_ARG(gicl_comm_init_rank(&c, 2, id, -1), "rank");
  gicl_unique_id_t junk;
  std::memset(&junk, 0xab, sizeof(junk));
  EXPECT_BAD_ARG(gicl_comm_init_rank(&c, 1, junk, 0), "id");
  EXPECT_EQ(c, nullptr);
  EXPECT_BAD_ARG(gicl_comm_init_all(nullptr, 1, nullptr), "comms");
  gicl_comm_t cs[2];
  EXPECT_BAD_ARG(gicl_comm_init_all(cs, 0, nullptr), "ndev");
  EXPECT_BAD_ARG(gicl_comm_init_env(nullptr), "comm");
}

TEST_F(ApiArgs, CommQueries) {
  int x;
  gicl_result_t e;
  EXPECT_BAD_ARG(gicl_comm_rank(nullptr, &x), "comm");
  EXPECT_BAD_ARG(gicl_comm_rank(comm_, nullptr), "rank");
  EXPECT_BAD_ARG(gicl_comm_size(nullptr, &x), "comm");
  EXPECT_BAD_ARG(gicl_comm_size(comm_, nullptr), "size");
  EXPECT_BAD_ARG(gicl_comm_device(nullptr, &x), "comm");
  EXPECT_BAD_ARG(gicl_comm_device(comm_, nullptr), "device");
  EXPECT_BAD_ARG(gicl_comm_get_async_error(nullptr, &e, nullptr), "comm");
  EXPECT_BAD_ARG(gicl_comm_get_async_error(comm_, nullptr, nullptr), "async_error");
  EXPECT_BAD_ARG(gicl_comm_destroy(nullptr), "comm");
  EXPECT_BAD_ARG(gicl_comm_abort(nullptr), "comm");
  gicl_comm_t nc;
  EXPECT_BAD_ARG(gicl_comm_split(nullptr, 0, 0, &nc), "comm");
  EXPECT_BAD_ARG(gicl_comm_split(comm_, 0, 0, nullptr), "newcomm");
  EXPECT_BAD_ARG(gicl_comm_split(comm_, -7, 0, &nc), "color");
  ASSERT_EQ(gicl_comm_rank(comm_, &x), GICL_SUCCESS);
  EXPECT_EQ(x, 0);
  ASSERT_EQ(gicl_comm_get_async_error(comm_, &e, nullptr), GICL_SUCCESS);
  EXPECT_EQ(e, GICL_SUCCESS);
}

TEST_F(ApiArgs, Teams) {
  gicl_team_t world, t;
  int x;
  EXPECT_BAD_ARG(gicl_comm_get_team(nullptr, GICL_TEAM_WORLD, &world), "comm");
  EXPECT_BAD_ARG(gicl_comm_get_team(comm_, GICL_TEAM_WORLD, nullptr), "team");
  EXPECT_BAD_ARG(gicl_comm_get_team(comm_, static_cast<gicl_team_kind_t>(9), &world), "kind");
  ASSERT_EQ(gicl_comm_get_team(comm_, GICL_TEAM_WORLD, &world), GICL_SUCCESS);
  EXPECT_BAD_ARG(gicl_team_split_strided(nullptr, 0, 1, 1, &t), "parent");
  EXPECT_BAD_ARG(gicl_team_split_strided(world, 0, 1, 1, nullptr), "team");
  EXPECT_BAD_ARG(gicl_team_split_strided(world, 1, 1, 1, &t), "start");
  EXPECT_BAD_ARG(gicl_team_split_strided(world, 0, 0, 1, &t), "stride");
  EXPECT_BAD_ARG(gicl_team_split_strided(world, 0, 1, 0, &t), "size");
  EXPECT_BAD_ARG(gicl_team_split_strided(world, 0, 1, 2, &t), "size");
  EXPECT_BAD_ARG(gicl_team_rank(nullptr, &x), "team");
  EXPECT_BAD_ARG(gicl_team_rank(world, nullptr), "rank");
  EXPECT_BAD_ARG(gicl_team_size(nullptr, &x), "team");
  EXPECT_BAD_ARG(gicl_team_size(world, nullptr), "size");
  EXPECT_BAD_ARG(gicl_team_translate_rank(nullptr, 0, world, &x), "src");
  EXPECT_BAD_ARG(gicl_team_translate_rank(world, 0, nullptr, &x), "dst");
  EXPECT_BAD_ARG(gicl_team_translate_rank(world, 0, world, nullptr), "dst_rank");
  EXPECT_BAD_ARG(gicl_team_translate_rank(world, 5, world, &x), "rank");
  EXPECT_BAD_ARG(gicl_team_destroy(nullptr), "team");
  EXPECT_BAD_ARG(gicl_team_destroy(world), "predefined");
}

TEST_F(ApiArgs, Memory) {
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_BAD_ARG(gicl_mem_alloc(nullptr, 16, &p), "comm");
  EXPECT_EQ(p, nullptr);
  EXPECT_BAD_ARG(gicl_mem_alloc(comm_, 16, nullptr), "ptr");
  EXPECT_BAD_ARG(gicl_mem_free(nullptr, p), "comm");
  EXPECT_BAD_ARG(gicl_mem_peer_ptr(nullptr, p, 0, &p), "comm");
  void* h = reinterpret_cast<void*>(0x1);
  EXPECT_BAD_ARG(gicl_comm_register(nullptr, p, 16, &h), "comm");
  EXPECT_EQ(h, nullptr);
  EXPECT_BAD_ARG(gicl_comm_register(comm_, p, 16, nullptr), "handle");
  EXPECT_BAD_ARG(gicl_comm_deregister(nullptr, h), "comm");
  int dev = -1;
  ASSERT_EQ(gicl_comm_device(comm_, &dev), GICL_SUCCESS);
  if (dev < 0) {
    // Without a GPU the heap does not exist: a clear UNSUPPORTED, not a crash.
    EXPECT_EQ(gicl_mem_alloc(comm_, 16, &p), GICL_UNSUPPORTED);
    EXPECT_NE(std::string(gicl_get_last_error()).find("CUDA device"), std::string::npos);
    EXPECT_EQ(gicl_comm_register(comm_, p, 16, &h), GICL_UNSUPPORTED);
    EXPECT_EQ(gicl_comm_deregister(comm_, h), GICL_UNSUPPORTED);
  }
}

TEST_F(ApiArgs, DeviceApiHostCalls) {
  gicl_device_comm_t dc;
  gicl_device_team_t dt;
  gicl_qp_t qps[4];
  gicl_team_t world;
  ASSERT_EQ(gicl_comm_get_team(comm_, GICL_TEAM_WORLD, &world), GICL_SUCCESS);
  EXPECT_BAD_ARG(gicl_comm_get_device_comm(nullptr, &dc), "comm");
  EXPECT_BAD_ARG(gicl_comm_get_device_comm(comm_, nullptr), "dcomm");
  EXPECT_BAD_ARG(gicl_team_get_device(nullptr, &dt), "team");
  EXPECT_BAD_ARG(gicl_team_get_device(world, nullptr), "dteam");
  EXPECT_BAD_ARG(gicl_qp_create(nullptr, 1, qps), "comm");
  EXPECT_BAD_ARG(gicl_qp_create(comm_, 0, qps), "n=");
  EXPECT_BAD_ARG(gicl_qp_create(comm_, 1, nullptr), "qps");
  // One rank: every peer is itself, so queue pairs are the default one.
  qps[0].id = 99;
  EXPECT_EQ(gicl_qp_create(comm_, 2, qps), GICL_SUCCESS) << gicl_get_last_error();
  EXPECT_EQ(qps[0].id, GICL_QP_DEFAULT_ID);
  uint64_t word = 0;
  EXPECT_BAD_ARG(gicl_put_on_stream(nullptr, &word, &word, 8, 0, nullptr), "comm");
  EXPECT_BAD_ARG(gicl_signal_on_stream(comm_, &word, 1, 9, 0, nullptr), "op");
  EXPECT_BAD_ARG(gicl_wait_signal_on_stream(comm_, &word, 99, 1, nullptr), "cmp");
  EXPECT_BAD_ARG(gicl_barrier_on_stream(nullptr, nullptr), "comm");
  EXPECT_BAD_ARG(gicl_quiet_on_stream(nullptr, nullptr), "comm");
  int dev = -1;
  ASSERT_EQ(gicl_comm_device(comm_, &dev), GICL_SUCCESS);
  if (dev < 0) {
    EXPECT_EQ(gicl_comm_get_device_comm(comm_, &dc), GICL_UNSUPPORTED);
    EXPECT_EQ(gicl_put_on_stream(comm_, &word, &word, 8, 0, nullptr), GICL_UNSUPPORTED);
  }
}

TEST_F(ApiArgs, Collectives) {
  char b[64] = {};
  const auto bad_t = static_cast<gicl_datatype_t>(12);
  const auto bad_op = static_cast<gicl_redop_t>(5);
  EXPECT_BAD_ARG(gicl_allreduce(b, b, 4, gicl_float32, gicl_sum, nullptr, nullptr), "comm");
  EXPECT_BAD_ARG(gicl_allreduce(b, b, 4, bad_t, gicl_sum, comm_, nullptr), "datatype");
  EXPECT_BAD_ARG(gicl_allreduce(b, b, 4, gicl_float32, bad_op, comm_, nullptr), "op");
  EXPECT_BAD_ARG(gicl_allreduce(nullptr, b, 4, gicl_float32, gicl_sum, comm_, nullptr), "sendbuff");
  EXPECT_BAD_ARG(gicl_allreduce(b, nullptr, 4, gicl_float32, gicl_sum, comm_, nullptr), "recvbuff");
  EXPECT_BAD_ARG(gicl_allreduce(b, b, SIZE_MAX / 2, gicl_float32, gicl_sum, comm_, nullptr),
                 "count");
  EXPECT_BAD_ARG(gicl_reduce_scatter(b, b, 4, gicl_int8, bad_op, comm_, nullptr), "op");
  EXPECT_BAD_ARG(gicl_allgather(b, nullptr, 4, gicl_int8, comm_, nullptr), "recvbuff");
  EXPECT_BAD_ARG(gicl_broadcast(b, b, 4, gicl_int8, 1, comm_, nullptr), "root");
  EXPECT_BAD_ARG(gicl_reduce(b, b, 4, gicl_int8, gicl_max, -1, comm_, nullptr), "root");
  EXPECT_BAD_ARG(gicl_alltoall(b, b, 4, bad_t, comm_, nullptr), "datatype");
  EXPECT_BAD_ARG(gicl_send(b, 4, gicl_int8, 1, comm_, nullptr), "peer");
  EXPECT_BAD_ARG(gicl_recv(nullptr, 4, gicl_int8, 0, comm_, nullptr), "recvbuff");
  EXPECT_BAD_ARG(gicl_barrier(nullptr, nullptr), "comm");
  // Nothing to move: success without a GPU.
  EXPECT_EQ(gicl_allreduce(nullptr, nullptr, 0, gicl_float32, gicl_sum, comm_, nullptr),
            GICL_SUCCESS);
  // Valid arguments on a communicator without a GPU: unsupported, said plainly.
  EXPECT_EQ(gicl_allgather(b, b, 4, gicl_int8, comm_, nullptr), GICL_UNSUPPORTED);
  EXPECT_NE(std::string(gicl_get_last_error()).find("no GPU"), std::string::npos);
  EXPECT_EQ(gicl_group_end(), GICL_INVALID_USAGE);
  // A group defers the calls; an argument error is still reported at the call.
  EXPECT_EQ(gicl_group_start(), GICL_SUCCESS);
  EXPECT_BAD_ARG(gicl_send(b, 4, gicl_int8, 3, comm_, nullptr), "peer");
  EXPECT_EQ(gicl_group_end(), GICL_SUCCESS);
}

TEST(ApiErrors, EveryResultHasAString) {
  for (int r = 0; r < GICL_NUM_RESULTS; ++r)
    EXPECT_GT(std::strlen(gicl_get_error_string(static_cast<gicl_result_t>(r))), 3u);
  EXPECT_STREQ(gicl_get_error_string(static_cast<gicl_result_t>(1000)), "unknown result code");
}

}  // namespace
