// SPDX-License-Identifier: Apache-2.0
// Path selection on one machine: by default two ranks on GPUs that map each other's memory are
// one node (P2P); GICL_P2P_DISABLE=1, or a different GICL_HOSTID per rank (node emulation), puts
// the peer on the network path, which the node team and the operations that need a transport
// show (with a network path open, queue pairs map to its ring; without, they are refused naming
// the peer). GICL_NET=VERBS on a machine without an RDMA device fails the communicator's init
// saying so on every rank.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/comm.hpp"
#include "gicl/gicl.h"
#include "gpu/gpu_ranks.cuh"
#include "topology/rdma_devices.hpp"

namespace gicl::test {
namespace {

enum class How { kDefault, kP2pDisable, kHostId };

int node_team_size(How how) {
  gicl_unique_id_t id;
  if (gicl_get_unique_id(&id) != GICL_SUCCESS) return -1;
  auto results = fork_ranks(2, [&](int r) {
    if (how == How::kP2pDisable) setenv("GICL_P2P_DISABLE", "1", 1);
    if (how == How::kHostId) setenv("GICL_HOSTID", r == 0 ? "node-a" : "node-b", 1);
    gicl_comm_t comm;
    if (init_on_gpu(id, 2, r, &comm)) return 1;
    gicl_team_t node;
    RANK_OK(gicl_comm_get_team(comm, GICL_TEAM_NODE, &node));
    int size = 0;
    RANK_OK(gicl_team_size(node, &size));
    gicl_qp_t qp;
    const gicl_result_t qp_rc = gicl_qp_create(comm, 1, &qp);
    if (size == 1 && !comm->net) {
      RANK_CHECK(qp_rc == GICL_UNSUPPORTED, "gicl_qp_create with a network peer: %d", qp_rc);
      RANK_CHECK(std::string(gicl_get_last_error()).find("rank " + std::to_string(1 - r)) !=
                     std::string::npos,
                 "the error does not name the peer: %s", gicl_get_last_error());
    } else {
      RANK_CHECK(qp_rc == GICL_SUCCESS, "gicl_qp_create: %s", gicl_get_last_error());
    }
    RANK_OK(gicl_comm_destroy(comm));
    return 10 + size;  // the node team's size, as the exit code
  });
  if (results[0].code != results[1].code) return -2;
  return results[0].code - 10;
}

TEST(NetworkPaths, P2pDisableAndHostIdPutThePeerOnTheNetwork) {
  REQUIRE_GPUS(1);  // on one GPU the two ranks share it as processes
  EXPECT_EQ(node_team_size(How::kDefault), 2);
  EXPECT_EQ(node_team_size(How::kP2pDisable), 1);
  EXPECT_EQ(node_team_size(How::kHostId), 1);
}

TEST(NetworkPaths, VerbsWithoutAnRdmaDeviceFailsInitSayingSo) {
  REQUIRE_GPUS(1);  // on one GPU the two ranks share it as processes
  std::vector<RdmaDevice> devs;
  ASSERT_TRUE(list_rdma_devices(&devs).ok());
  if (!devs.empty()) GTEST_SKIP() << "this machine has an RDMA device (" << devs[0].name << ")";
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(2, [&](int r) {
    setenv("GICL_P2P_DISABLE", "1", 1);
    setenv("GICL_NET", "VERBS", 1);
    RANK_CUDA(cudaSetDevice(r % cuda_device_count()));
    gicl_comm_t comm = nullptr;
    const gicl_result_t rc = gicl_comm_init_rank(&comm, 2, id, r);
    RANK_CHECK(rc == GICL_UNSUPPORTED || rc == GICL_REMOTE_ERROR, "init with GICL_NET=VERBS: %d",
               rc);
    const std::string why = gicl_get_last_error();
    RANK_CHECK(
        why.find("RDMA device") != std::string::npos || why.find("rdma-core") != std::string::npos,
        "the error does not say why: %s", why.c_str());
    return 0;
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

}  // namespace
}  // namespace gicl::test
