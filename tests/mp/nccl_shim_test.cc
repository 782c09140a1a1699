// SPDX-License-Identifier: Apache-2.0
// The drop-in libnccl.so.2 through NCCL's own entry points, on real processes (no GPU needed:
// a communicator without a device bootstraps): unique id, init, rank and count, async error,
// destroy; PreMulSum reductions' numbers and refusals; two communicators created by one thread
// inside a group, initialized at its end; bad arguments and what gicl's NCCL ABI does not offer
// refused with a message, never a success.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "mp/fork_ranks.hpp"
#include "shim/nccl/nccl_abi.h"

typedef struct ncclComm* ncclComm_t;
extern "C" {
ncclResult_t ncclGetVersion(int*);
ncclResult_t ncclGetUniqueId(ncclUniqueId*);
ncclResult_t ncclCommInitRank(ncclComm_t*, int, ncclUniqueId, int);
ncclResult_t ncclCommInitRankConfig(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*);
ncclResult_t ncclCommCount(const ncclComm_t, int*);
ncclResult_t ncclCommUserRank(const ncclComm_t, int*);
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t*);
ncclResult_t ncclCommDestroy(ncclComm_t);
ncclResult_t ncclCommShrink(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int);
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();
ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                           void*);
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t*, void*, ncclDataType_t, int, ncclComm_t);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t, ncclComm_t);
const char* ncclGetLastError(ncclComm_t);
const char* ncclGetErrorString(ncclResult_t);
}

namespace {

using gicl::test::fork_ranks;

// ncclGetUniqueId in a child process (test::child_made_id): its root thread runs there, not beside
// the ranks this process forks. The shim keeps gicl's bootstrap to itself, so the child cannot
// wait for its root: it stays until this process ends.
bool child_nccl_id(ncclUniqueId* id) {
  return gicl::test::child_made_id(
      id,
      [](ncclUniqueId* out) {
        if (ncclGetUniqueId(out) == ncclSuccess) return true;
        std::fprintf(stderr, "ncclGetUniqueId: %s\n", ncclGetLastError(nullptr));
        return false;
      },
      [] {
        for (;;) pause();
      });
}

TEST(NcclShim, ReportsTheVersionWhoseAbiItImplements) {
  int v = 0;
  ASSERT_EQ(ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, 22809);
  EXPECT_EQ(ncclGetVersion(nullptr), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("version"), std::string::npos);
  EXPECT_STREQ(ncclGetErrorString(ncclSuccess), "no error");
}

// NCCL's variables with a gicl meaning are set as the GICL_* ones when the library first makes a
// unique id or a communicator; a GICL_* variable already set wins.
TEST(NcclShim, NcclEnvironmentVariablesBecomeGiclSettings) {
  auto rc = fork_ranks(1, [](int) {
    unsetenv("GICL_SOCKET_IFNAME");
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    setenv("NCCL_PROTO", "LL", 1);
    setenv("GICL_PROTO", "SIMPLE", 1);
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
    const char* ifname = getenv("GICL_SOCKET_IFNAME");
    if (ifname == nullptr || std::string(ifname) != "lo") return 2;
    return std::string(getenv("GICL_PROTO")) == "SIMPLE" ? 0 : 3;
  });
  EXPECT_EQ(rc[0].code, 0);
}

TEST(NcclShim, RanksInitCountAndDestroyThroughNcclCalls) {
  ncclUniqueId id;
  ASSERT_TRUE(child_nccl_id(&id));
  auto results = fork_ranks(3, [&](int r) {
    ncclComm_t comm = nullptr;
    ncclConfig_t cfg;
    std::memset(&cfg, 0, sizeof(cfg));
    cfg.size = sizeof(cfg);
    cfg.magic = NCCL_API_MAGIC;
    cfg.version = 22809;
    cfg.blocking = 1;
    cfg.cgaClusterSize = cfg.minCTAs = cfg.maxCTAs = NCCL_CONFIG_UNDEF_INT;
    cfg.splitShare = cfg.trafficClass = cfg.collnetEnable = cfg.CTAPolicy = NCCL_CONFIG_UNDEF_INT;
    cfg.shrinkShare = cfg.nvlsCTAs = cfg.nChannelsPerNetPeer = cfg.nvlinkCentricSched =
        NCCL_CONFIG_UNDEF_INT;
    if (ncclCommInitRankConfig(&comm, 3, id, r, &cfg) != ncclSuccess) return 1;
    int n = 0, me = -1;
    if (ncclCommCount(comm, &n) != ncclSuccess || n != 3) return 2;
    if (ncclCommUserRank(comm, &me) != ncclSuccess || me != r) return 3;
    ncclResult_t async = ncclInternalError;
    if (ncclCommGetAsyncError(comm, &async) != ncclSuccess || async != ncclSuccess) return 4;
    // A type NCCL does not have refused with what was wrong.
    if (ncclAllReduce(nullptr, nullptr, 1, static_cast<ncclDataType_t>(12), ncclSum, comm,
                      nullptr) != ncclInvalidArgument ||
        std::string(ncclGetLastError(comm)).find("datatype 12") == std::string::npos)
      return 5;
    // PreMulSum reductions are numbered from ncclNumOps, a destroyed one's number reused; a call
    // with one of another datatype, or one destroyed, is refused before anything runs.
    ncclRedOp_t a, b, c;
    float scalar = 2;
    if (ncclRedOpCreatePreMulSum(&a, &scalar, ncclFloat32, 1, comm) != ncclSuccess || a != 5 ||
        ncclRedOpCreatePreMulSum(&b, &scalar, ncclFloat32, 0, comm) != ncclSuccess || b != 6)
      return 6;
    if (ncclAllReduce(nullptr, nullptr, 1, ncclInt32, a, comm, nullptr) != ncclInvalidArgument ||
        std::string(ncclGetLastError(comm)).find("created for datatype 7") == std::string::npos)
      return 7;
    if (ncclRedOpDestroy(a, comm) != ncclSuccess ||
        ncclRedOpDestroy(a, comm) != ncclInvalidArgument)
      return 8;
    if (ncclAllReduce(nullptr, nullptr, 1, ncclFloat32, a, comm, nullptr) != ncclInvalidArgument ||
        std::string(ncclGetLastError(comm)).find("reduction 5 was not created") ==
            std::string::npos)
      return 9;
    if (ncclRedOpCreatePreMulSum(&c, &scalar, ncclFloat32, 1, comm) != ncclSuccess || c != 5)
      return 10;
    if (ncclRedOpCreatePreMulSum(&c, &scalar, ncclFloat32, 7, comm) != ncclInvalidArgument ||
        std::string(ncclGetLastError(comm)).find("residence 7") == std::string::npos)
      return 11;
    return ncclCommDestroy(comm) == ncclSuccess ? 0 : 12;
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

// nccl-tests' way with -g: one thread creates every local rank's communicator inside a group;
// each init runs when the group ends; the same thread destroys them one after the other.
TEST(NcclShim, CommunicatorsCreatedInsideAGroupInitializeAtItsEnd) {
  auto results = fork_ranks(1, [](int) {
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
    ncclComm_t comms[2] = {nullptr, nullptr};
    if (ncclGroupStart() != ncclSuccess) return 2;
    for (int r = 0; r < 2; ++r)
      if (ncclCommInitRank(&comms[r], 2, id, r) != ncclSuccess) return 3;
    ncclResult_t pending = ncclSuccess;
    if (ncclCommGetAsyncError(comms[0], &pending) != ncclSuccess || pending != ncclInProgress)
      return 4;
    int n = 0;
    if (ncclCommCount(comms[0], &n) != ncclInvalidUsage) return 5;  // not initialized yet
    if (ncclGroupEnd() != ncclSuccess) return 6;
    for (int r = 0; r < 2; ++r) {
      int me = -1;
      if (ncclCommUserRank(comms[r], &me) != ncclSuccess || me != r) return 7;
    }
    // As nccl-tests does: one destroy after the other from this thread (NCCL's destroy is
    // local); the family's last one destroys both at once.
    if (ncclCommDestroy(comms[0]) != ncclSuccess) return 8;
    return ncclCommDestroy(comms[1]) == ncclSuccess ? 0 : 9;
  });
  EXPECT_EQ(results[0].code, 0);
}

// ncclCommShrink maps to gicl_comm_shrink: ranks 0, 1 and 3 of 4 leave rank 2 out (it does not
// call) and get a communicator of 3 in their old order; shrinkFlags other than NCCL's two and a
// negative count are refused naming them.
TEST(NcclShim, CommShrinkLeavesTheExcludedRankOut) {
  ncclUniqueId id;
  ASSERT_TRUE(child_nccl_id(&id));
  auto results = fork_ranks(4, [&](int r) {
    ncclComm_t comm = nullptr, small = nullptr;
    if (ncclCommInitRank(&comm, 4, id, r) != ncclSuccess) return 1;
    int out[1] = {2};
    if (ncclCommShrink(comm, out, 1, &small, nullptr, 5) != ncclInvalidArgument ||
        std::string(ncclGetLastError(comm)).find("shrinkFlags=5") == std::string::npos)
      return 2;
    if (ncclCommShrink(comm, out, -1, &small, nullptr, 0) != ncclInvalidArgument) return 3;
    if (r != 2) {
      if (ncclCommShrink(comm, out, 1, &small, nullptr, NCCL_SHRINK_DEFAULT) != ncclSuccess)
        return 4;
      int n = 0, me = -1;
      if (ncclCommCount(small, &n) != ncclSuccess || n != 3) return 5;
      if (ncclCommUserRank(small, &me) != ncclSuccess || me != (r < 2 ? r : r - 1)) return 6;
      if (ncclCommDestroy(small) != ncclSuccess) return 7;
    }
    return ncclCommDestroy(comm) == ncclSuccess ? 0 : 8;
  });
  for (int r = 0; r < 4; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

}  // namespace
