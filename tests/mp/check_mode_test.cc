// CCL_CHECK_MODE=1 between real processes: matching calls pass, and a rank that calls with another
// count, type or op makes every rank fail with an error naming it (instead of a hang).
#include <gtest/gtest.h>

#include <string>

#include "ccl/ccl.h"
#include "mp/fork_ranks.hpp"

namespace ccl {
namespace {

using test::fork_ranks;

TEST(CheckMode, MismatchedCallsFailEveryRankNamingTheOdd) {
  ccl_unique_id_t id;
  ASSERT_EQ(ccl_get_unique_id(&id), CCL_SUCCESS);
  auto results = fork_ranks(3, [&](int r) {
    setenv("CCL_CHECK_MODE", "1", 1);
    ccl_comm_t comm;
    RANK_OK(ccl_comm_init_rank(&comm, 3, id, r));
    // Count 0 needs no buffers: a matching call passes the check and does nothing.
    RANK_OK(ccl_allreduce(nullptr, nullptr, 0, ccl_float32, ccl_sum, comm, nullptr));
    // Rank 2 asks for another count. The buffers are never touched: the check fails first.
    char dummy[16];
    ccl_result_t s =
        ccl_allreduce(dummy, dummy, r == 2 ? 2 : 1, ccl_float32, ccl_sum, comm, nullptr);
    RANK_CHECK(s == CCL_INVALID_USAGE, "count mismatch gave %d", s);
    std::string msg = ccl_get_last_error();
    RANK_CHECK(
        msg.find("ranks 2 differ") != std::string::npos && msg.find("count=2") != std::string::npos,
        "%s", msg.c_str());
    // Rank 1 uses another type, then another op.
    s = ccl_allreduce(dummy, dummy, 1, r == 1 ? ccl_int32 : ccl_float32, ccl_sum, comm, nullptr);
    RANK_CHECK(s == CCL_INVALID_USAGE &&
                   std::string(ccl_get_last_error()).find("int32") != std::string::npos,
               "type mismatch: %d %s", s, ccl_get_last_error());
    s = ccl_allreduce(dummy, dummy, 1, ccl_float32, r == 1 ? ccl_max : ccl_sum, comm, nullptr);
    RANK_CHECK(s == CCL_INVALID_USAGE &&
                   std::string(ccl_get_last_error()).find("max") != std::string::npos,
               "op mismatch: %d %s", s, ccl_get_last_error());
    // Rank 0 calls another collective; rank 2 broadcasts from another root.
    s = r == 0 ? ccl_allgather(dummy, dummy, 1, ccl_float32, comm, nullptr)
               : ccl_reduce_scatter(dummy, dummy, 1, ccl_float32, ccl_sum, comm, nullptr);
    RANK_CHECK(s == CCL_INVALID_USAGE &&
                   std::string(ccl_get_last_error()).find("ranks 0 differ") != std::string::npos,
               "collective mismatch: %d %s", s, ccl_get_last_error());
    s = ccl_broadcast(dummy, dummy, 1, ccl_float32, r == 2 ? 1 : 0, comm, nullptr);
    RANK_CHECK(s == CCL_INVALID_USAGE &&
                   std::string(ccl_get_last_error()).find("root=1") != std::string::npos,
               "root mismatch: %d %s", s, ccl_get_last_error());
    RANK_OK(ccl_comm_destroy(comm));
    return 0;
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

}  // namespace
}  // namespace ccl
