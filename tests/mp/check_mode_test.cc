// SPDX-License-Identifier: Apache-2.0
// GICL_CHECK_MODE=1 between real processes: matching calls pass, and a rank that calls with another
// count, type or op makes every rank fail with an error naming it (instead of a hang).
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "gicl/gicl.h"
#include "mp/fork_ranks.hpp"

namespace gicl {
namespace {

using test::fork_ranks;

TEST(CheckMode, MismatchedCallsFailEveryRankNamingTheOdd) {
  gicl_unique_id_t id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(3, [&](int r) {
    setenv("GICL_CHECK_MODE", "1", 1);
    gicl_comm_t comm;
    RANK_OK(gicl_comm_init_rank(&comm, 3, id, r));
    // Count 0 needs no buffers: a matching call passes the check and does nothing.
    RANK_OK(gicl_allreduce(nullptr, nullptr, 0, gicl_float32, gicl_sum, comm, nullptr));
    // Rank 2 asks for another count. The buffers are never touched: the check fails first.
    char dummy[16];
    gicl_result_t s =
        gicl_allreduce(dummy, dummy, r == 2 ? 2 : 1, gicl_float32, gicl_sum, comm, nullptr);
    RANK_CHECK(s == GICL_INVALID_USAGE, "count mismatch gave %d", s);
    std::string msg = gicl_get_last_error();
    RANK_CHECK(
        msg.find("ranks 2 differ") != std::string::npos && msg.find("count=2") != std::string::npos,
        "%s", msg.c_str());
    // Rank 1 uses another type, then another op.
    s = gicl_allreduce(dummy, dummy, 1, r == 1 ? gicl_int32 : gicl_float32, gicl_sum, comm,
                       nullptr);
    RANK_CHECK(s == GICL_INVALID_USAGE &&
                   std::string(gicl_get_last_error()).find("int32") != std::string::npos,
               "type mismatch: %d %s", s, gicl_get_last_error());
    s = gicl_allreduce(dummy, dummy, 1, gicl_float32, r == 1 ? gicl_max : gicl_sum, comm, nullptr);
    RANK_CHECK(s == GICL_INVALID_USAGE &&
                   std::string(gicl_get_last_error()).find("max") != std::string::npos,
               "op mismatch: %d %s", s, gicl_get_last_error());
    // Rank 0 calls another collective; rank 2 broadcasts from another root.
    s = r == 0 ? gicl_allgather(dummy, dummy, 1, gicl_float32, comm, nullptr)
               : gicl_reduce_scatter(dummy, dummy, 1, gicl_float32, gicl_sum, comm, nullptr);
    RANK_CHECK(s == GICL_INVALID_USAGE &&
                   std::string(gicl_get_last_error()).find("ranks 0 differ") != std::string::npos,
               "collective mismatch: %d %s", s, gicl_get_last_error());
    s = gicl_broadcast(dummy, dummy, 1, gicl_float32, r == 2 ? 1 : 0, comm, nullptr);
    RANK_CHECK(s == GICL_INVALID_USAGE &&
                   std::string(gicl_get_last_error()).find("root=1") != std::string::npos,
               "root mismatch: %d %s", s, gicl_get_last_error());
    RANK_OK(gicl_comm_destroy(comm));
    return 0;
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

// One thread driving both ranks (as a harness with several GPUs per process does) must group its
// calls; their check-mode exchanges then run side by side, not one waiting for the other's.
TEST(CheckMode, AGroupOverTwoCommunicatorsOfOneThreadIsChecked) {
  gicl_unique_id_t id;
  ASSERT_TRUE(test::child_root_id(&id));
  auto results = fork_ranks(1, [&](int) {
    setenv("GICL_CHECK_MODE", "1", 1);
    setenv("GICL_BOOTSTRAP_TIMEOUT", "3000", 1);
    setenv("GICL_SHARED_GPU_THREADS", "1", 1);  // on a GPU machine both threads use GPU 0
    gicl_comm_t comms[2] = {nullptr, nullptr};
    gicl_result_t rc[2] = {GICL_INTERNAL_ERROR, GICL_INTERNAL_ERROR};
    {
      std::thread t([&] { rc[1] = gicl_comm_init_rank(&comms[1], 2, id, 1); });
      rc[0] = gicl_comm_init_rank(&comms[0], 2, id, 0);
      t.join();
    }
    RANK_CHECK(rc[0] == GICL_SUCCESS && rc[1] == GICL_SUCCESS, "init: %d %d", rc[0], rc[1]);
    auto group = [&](size_t count0, size_t count1) {
      char dummy[16];
      gicl_group_start();
      gicl_result_t a =
          gicl_allreduce(dummy, dummy, count0, gicl_float32, gicl_sum, comms[0], nullptr);
      gicl_result_t b =
          gicl_allreduce(dummy, dummy, count1, gicl_float32, gicl_sum, comms[1], nullptr);
      gicl_result_t end = gicl_group_end();
      return a != GICL_SUCCESS ? a : b != GICL_SUCCESS ? b : end;
    };
    for (int i = 0; i < 3; ++i) {
      gicl_result_t s = group(0, 0);
      RANK_CHECK(s == GICL_SUCCESS, "matching group %d: %d %s", i, s, gicl_get_last_error());
    }
    gicl_result_t s = group(1, 2);
    const std::string msg = gicl_get_last_error();
    RANK_CHECK(s == GICL_INVALID_USAGE && msg.find("count=2") != std::string::npos,
               "mismatched group: %d %s", s, msg.c_str());
    std::thread t([&] { rc[1] = gicl_comm_destroy(comms[1]); });
    rc[0] = gicl_comm_destroy(comms[0]);
    t.join();
    RANK_CHECK(rc[0] == GICL_SUCCESS && rc[1] == GICL_SUCCESS, "destroy: %d %d", rc[0], rc[1]);
    return 0;
  });
  EXPECT_EQ(results[0].code, 0);
}

}  // namespace
}  // namespace gicl
