// Every C API function given bad arguments returns CCL_INVALID_ARGUMENT with a message that
// names the argument, and touches nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ccl/ccl.h"

namespace {

#define EXPECT_BAD_ARG(call, word)                                                      \
  do {                                                                                  \
    EXPECT_EQ((call), CCL_INVALID_ARGUMENT) << #call;                                   \
    EXPECT_NE(std::string(ccl_get_last_error()).find(word), std::string::npos)          \
        << #call << " message '" << ccl_get_last_error() << "' does not name " << word; \
  } while (0)

class ApiArgs : public ::testing::Test {
 protected:
  void SetUp() override {
    ccl_unique_id_t id;
    ASSERT_EQ(ccl_get_unique_id(&id), CCL_SUCCESS) << ccl_get_last_error();
    ASSERT_EQ(ccl_comm_init_rank(&comm_, 1, id, 0), CCL_SUCCESS) << ccl_get_last_error();
  }
  void TearDown() override {
    if (comm_) {
      EXPECT_EQ(ccl_comm_destroy(comm_), CCL_SUCCESS) << ccl_get_last_error();
    }
  }
  ccl_comm_t comm_ = nullptr;
};

TEST_F(ApiArgs, VersionAndIds) {
  EXPECT_BAD_ARG(ccl_get_version(nullptr), "version");
  EXPECT_BAD_ARG(ccl_get_unique_id(nullptr), "id");
  int v = 0;
  EXPECT_EQ(ccl_get_version(&v), CCL_SUCCESS);
  EXPECT_EQ(v, CCL_VERSION_CODE);
  EXPECT_EQ(std::string(ccl_get_last_error()), "");  // cleared by a successful call
}

TEST_F(ApiArgs, InitRank) {
  ccl_unique_id_t id;
  ASSERT_EQ(ccl_get_unique_id(&id), CCL_SUCCESS);
  ccl_comm_t c = nullptr;
  EXPECT_BAD_ARG(ccl_comm_init_rank(nullptr, 1, id, 0), "comm");
  EXPECT_BAD_ARG(ccl_comm_init_rank(&c, 0, id, 0), "nranks");
  EXPECT_BAD_ARG(ccl_comm_init_rank(&c, -3, id, 0), "nranks");
  EXPECT_BAD_ARG(ccl_comm_init_rank(&c, 2, id, 2), "rank");
  EXPECT_BAD_ARG(ccl_comm_init_rank(&c, 2, id, -1), "rank");
  ccl_unique_id_t junk;
  std::memset(&junk, 0xab, sizeof(junk));
  EXPECT_BAD_ARG(ccl_comm_init_rank(&c, 1, junk, 0), "id");
  EXPECT_EQ(c, nullptr);
  EXPECT_BAD_ARG(ccl_comm_init_all(nullptr, 1, nullptr), "comms");
  ccl_comm_t cs[2];
  EXPECT_BAD_ARG(ccl_comm_init_all(cs, 0, nullptr), "ndev");
  EXPECT_BAD_ARG(ccl_comm_init_env(nullptr), "comm");
}

TEST_F(ApiArgs, CommQueries) {
  int x;
  ccl_result_t e;
  EXPECT_BAD_ARG(ccl_comm_rank(nullptr, &x), "comm");
  EXPECT_BAD_ARG(ccl_comm_rank(comm_, nullptr), "rank");
  EXPECT_BAD_ARG(ccl_comm_size(nullptr, &x), "comm");
  EXPECT_BAD_ARG(ccl_comm_size(comm_, nullptr), "size");
  EXPECT_BAD_ARG(ccl_comm_device(nullptr, &x), "comm");
  EXPECT_BAD_ARG(ccl_comm_device(comm_, nullptr), "device");
  EXPECT_BAD_ARG(ccl_comm_get_async_error(nullptr, &e, nullptr), "comm");
  EXPECT_BAD_ARG(ccl_comm_get_async_error(comm_, nullptr, nullptr), "async_error");
  EXPECT_BAD_ARG(ccl_comm_destroy(nullptr), "comm");
  EXPECT_BAD_ARG(ccl_comm_abort(nullptr), "comm");
  ccl_comm_t nc;
  EXPECT_BAD_ARG(ccl_comm_split(nullptr, 0, 0, &nc), "comm");
  EXPECT_BAD_ARG(ccl_comm_split(comm_, 0, 0, nullptr), "newcomm");
  EXPECT_BAD_ARG(ccl_comm_split(comm_, -7, 0, &nc), "color");
  ASSERT_EQ(ccl_comm_rank(comm_, &x), CCL_SUCCESS);
  EXPECT_EQ(x, 0);
  ASSERT_EQ(ccl_comm_get_async_error(comm_, &e, nullptr), CCL_SUCCESS);
  EXPECT_EQ(e, CCL_SUCCESS);
}

TEST_F(ApiArgs, Teams) {
  ccl_team_t world, t;
  int x;
  EXPECT_BAD_ARG(ccl_comm_get_team(nullptr, CCL_TEAM_WORLD, &world), "comm");
  EXPECT_BAD_ARG(ccl_comm_get_team(comm_, CCL_TEAM_WORLD, nullptr), "team");
  EXPECT_BAD_ARG(ccl_comm_get_team(comm_, static_cast<ccl_team_kind_t>(9), &world), "kind");
  ASSERT_EQ(ccl_comm_get_team(comm_, CCL_TEAM_WORLD, &world), CCL_SUCCESS);
  EXPECT_BAD_ARG(ccl_team_split_strided(nullptr, 0, 1, 1, &t), "parent");
  EXPECT_BAD_ARG(ccl_team_split_strided(world, 0, 1, 1, nullptr), "team");
  EXPECT_BAD_ARG(ccl_team_split_strided(world, 1, 1, 1, &t), "start");
  EXPECT_BAD_ARG(ccl_team_split_strided(world, 0, 0, 1, &t), "stride");
  EXPECT_BAD_ARG(ccl_team_split_strided(world, 0, 1, 0, &t), "size");
  EXPECT_BAD_ARG(ccl_team_split_strided(world, 0, 1, 2, &t), "size");
  EXPECT_BAD_ARG(ccl_team_rank(nullptr, &x), "team");
  EXPECT_BAD_ARG(ccl_team_rank(world, nullptr), "rank");
  EXPECT_BAD_ARG(ccl_team_size(nullptr, &x), "team");
  EXPECT_BAD_ARG(ccl_team_size(world, nullptr), "size");
  EXPECT_BAD_ARG(ccl_team_translate_rank(nullptr, 0, world, &x), "src");
  EXPECT_BAD_ARG(ccl_team_translate_rank(world, 0, nullptr, &x), "dst");
  EXPECT_BAD_ARG(ccl_team_translate_rank(world, 0, world, nullptr), "dst_rank");
  EXPECT_BAD_ARG(ccl_team_translate_rank(world, 5, world, &x), "rank");
  EXPECT_BAD_ARG(ccl_team_destroy(nullptr), "team");
  EXPECT_BAD_ARG(ccl_team_destroy(world), "predefined");
}

TEST_F(ApiArgs, Memory) {
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_BAD_ARG(ccl_mem_alloc(nullptr, 16, &p), "comm");
  EXPECT_EQ(p, nullptr);
  EXPECT_BAD_ARG(ccl_mem_alloc(comm_, 16, nullptr), "ptr");
  EXPECT_BAD_ARG(ccl_mem_free(nullptr, p), "comm");
  EXPECT_BAD_ARG(ccl_mem_peer_ptr(nullptr, p, 0, &p), "comm");
  void* h = reinterpret_cast<void*>(0x1);
  EXPECT_BAD_ARG(ccl_comm_register(nullptr, p, 16, &h), "comm");
  EXPECT_EQ(h, nullptr);
  EXPECT_BAD_ARG(ccl_comm_register(comm_, p, 16, nullptr), "handle");
  EXPECT_BAD_ARG(ccl_comm_deregister(nullptr, h), "comm");
  int dev = -1;
  ASSERT_EQ(ccl_comm_device(comm_, &dev), CCL_SUCCESS);
  if (dev < 0) {
    // Without a GPU the heap does not exist: a clear UNSUPPORTED, not a crash.
    EXPECT_EQ(ccl_mem_alloc(comm_, 16, &p), CCL_UNSUPPORTED);
    EXPECT_NE(std::string(ccl_get_last_error()).find("CUDA device"), std::string::npos);
    EXPECT_EQ(ccl_comm_register(comm_, p, 16, &h), CCL_UNSUPPORTED);
    EXPECT_EQ(ccl_comm_deregister(comm_, h), CCL_UNSUPPORTED);
  }
}

TEST_F(ApiArgs, DeviceApiHostCalls) {
  ccl_device_comm_t dc;
  ccl_device_team_t dt;
  ccl_qp_t qps[4];
  ccl_team_t world;
  ASSERT_EQ(ccl_comm_get_team(comm_, CCL_TEAM_WORLD, &world), CCL_SUCCESS);
  EXPECT_BAD_ARG(ccl_comm_get_device_comm(nullptr, &dc), "comm");
  EXPECT_BAD_ARG(ccl_comm_get_device_comm(comm_, nullptr), "dcomm");
  EXPECT_BAD_ARG(ccl_team_get_device(nullptr, &dt), "team");
  EXPECT_BAD_ARG(ccl_team_get_device(world, nullptr), "dteam");
  EXPECT_BAD_ARG(ccl_qp_create(nullptr, 1, qps), "comm");
  EXPECT_BAD_ARG(ccl_qp_create(comm_, 0, qps), "n=");
  EXPECT_BAD_ARG(ccl_qp_create(comm_, 1, nullptr), "qps");
  // One rank: every peer is itself, so queue pairs are the default one.
  qps[0].id = 99;
  EXPECT_EQ(ccl_qp_create(comm_, 2, qps), CCL_SUCCESS) << ccl_get_last_error();
  EXPECT_EQ(qps[0].id, CCL_QP_DEFAULT_ID);
  uint64_t word = 0;
  EXPECT_BAD_ARG(ccl_put_on_stream(nullptr, &word, &word, 8, 0, nullptr), "comm");
  EXPECT_BAD_ARG(ccl_signal_on_stream(comm_, &word, 1, 9, 0, nullptr), "op");
  EXPECT_BAD_ARG(ccl_wait_signal_on_stream(comm_, &word, 99, 1, nullptr), "cmp");
  EXPECT_BAD_ARG(ccl_barrier_on_stream(nullptr, nullptr), "comm");
  EXPECT_BAD_ARG(ccl_quiet_on_stream(nullptr, nullptr), "comm");
  int dev = -1;
  ASSERT_EQ(ccl_comm_device(comm_, &dev), CCL_SUCCESS);
  if (dev < 0) {
    EXPECT_EQ(ccl_comm_get_device_comm(comm_, &dc), CCL_UNSUPPORTED);
    EXPECT_EQ(ccl_put_on_stream(comm_, &word, &word, 8, 0, nullptr), CCL_UNSUPPORTED);
  }
}

TEST_F(ApiArgs, Collectives) {
  char b[64] = {};
  const auto bad_t = static_cast<ccl_datatype_t>(12);
  const auto bad_op = static_cast<ccl_redop_t>(5);
  EXPECT_BAD_ARG(ccl_allreduce(b, b, 4, ccl_float32, ccl_sum, nullptr, nullptr), "comm");
  EXPECT_BAD_ARG(ccl_allreduce(b, b, 4, bad_t, ccl_sum, comm_, nullptr), "datatype");
  EXPECT_BAD_ARG(ccl_allreduce(b, b, 4, ccl_float32, bad_op, comm_, nullptr), "op");
  EXPECT_BAD_ARG(ccl_allreduce(nullptr, b, 4, ccl_float32, ccl_sum, comm_, nullptr), "sendbuff");
  EXPECT_BAD_ARG(ccl_allreduce(b, nullptr, 4, ccl_float32, ccl_sum, comm_, nullptr), "recvbuff");
  EXPECT_BAD_ARG(ccl_allreduce(b, b, SIZE_MAX / 2, ccl_float32, ccl_sum, comm_, nullptr), "count");
  EXPECT_BAD_ARG(ccl_reduce_scatter(b, b, 4, ccl_int8, bad_op, comm_, nullptr), "op");
  EXPECT_BAD_ARG(ccl_allgather(b, nullptr, 4, ccl_int8, comm_, nullptr), "recvbuff");
  EXPECT_BAD_ARG(ccl_broadcast(b, b, 4, ccl_int8, 1, comm_, nullptr), "root");
  EXPECT_BAD_ARG(ccl_reduce(b, b, 4, ccl_int8, ccl_max, -1, comm_, nullptr), "root");
  EXPECT_BAD_ARG(ccl_alltoall(b, b, 4, bad_t, comm_, nullptr), "datatype");
  EXPECT_BAD_ARG(ccl_send(b, 4, ccl_int8, 1, comm_, nullptr), "peer");
  EXPECT_BAD_ARG(ccl_recv(nullptr, 4, ccl_int8, 0, comm_, nullptr), "recvbuff");
  EXPECT_BAD_ARG(ccl_barrier(nullptr, nullptr), "comm");
  // Nothing to move: success without a GPU.
  EXPECT_EQ(ccl_allreduce(nullptr, nullptr, 0, ccl_float32, ccl_sum, comm_, nullptr), CCL_SUCCESS);
  // Valid arguments on a communicator without a GPU: unsupported, said plainly.
  EXPECT_EQ(ccl_allgather(b, b, 4, ccl_int8, comm_, nullptr), CCL_UNSUPPORTED);
  EXPECT_NE(std::string(ccl_get_last_error()).find("no GPU"), std::string::npos);
  EXPECT_EQ(ccl_group_end(), CCL_INVALID_USAGE);
  // A group defers the calls; an argument error is still reported at the call.
  EXPECT_EQ(ccl_group_start(), CCL_SUCCESS);
  EXPECT_BAD_ARG(ccl_send(b, 4, ccl_int8, 3, comm_, nullptr), "peer");
  EXPECT_EQ(ccl_group_end(), CCL_SUCCESS);
}

TEST(ApiErrors, EveryResultHasAString) {
  for (int r = 0; r < CCL_NUM_RESULTS; ++r)
    EXPECT_GT(std::strlen(ccl_get_error_string(static_cast<ccl_result_t>(r))), 3u);
  EXPECT_STREQ(ccl_get_error_string(static_cast<ccl_result_t>(1000)), "unknown result code");
}

}  // namespace
