// SPDX-License-Identifier: Apache-2.0
// gicl_comm_init_env with the launchers' variables: torchrun's alone (RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT) in real processes, and the order in which the variables of
// several launchers are read (GICL_* first, then torchrun's, then Open MPI / PMI / Slurm).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "bootstrap/unique_id.hpp"
#include "gicl/gicl.h"
#include "mp/fork_ranks.hpp"

namespace gicl {
namespace {

const char* const kLauncherVariables[] = {"GICL_RANK",
                                          "GICL_WORLD_SIZE",
                                          "GICL_LOCAL_RANK",
                                          "GICL_ROOT_ADDR",
                                          "RANK",
                                          "WORLD_SIZE",
                                          "LOCAL_RANK",
                                          "MASTER_ADDR",
                                          "MASTER_PORT",
                                          "OMPI_COMM_WORLD_RANK",
                                          "OMPI_COMM_WORLD_SIZE",
                                          "TORCHELASTIC_RUN_ID",
                                          "GICL_BOOTSTRAP_SECRET",
                                          "GICL_BOOTSTRAP_INSECURE",
                                          "GICL_BOOTSTRAP_ROOT_FD"};

// Each case starts from an environment without any launcher's variables.
class LauncherEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kLauncherVariables) unsetenv(v);
  }
  void TearDown() override { SetUp(); }
};

// A loopback port that was free a moment ago.
int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return -1;
  close(s);
  return ntohs(a.sin_port);
}

/// Sets torchrun's variables for rank r of n with its store at `master_port`.
void torchrun_env(int r, int n, const std::string& master_port) {
  setenv("RANK", std::to_string(r).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", master_port.c_str(), 1);
  setenv("TORCHELASTIC_RUN_ID", "launcher-env-test", 1);
}

/// torchrun's variables and GICL_BOOTSTRAP_INSECURE=1 (torchrun passes no secret): the job
/// starts, its secret derived from the run id and the root address.
TEST_F(LauncherEnv, TorchrunVariablesAloneStartAJob) {
  const int root_port = free_port();
  ASSERT_GT(root_port, 1);
  // torchrun's store would hold MASTER_PORT; the root takes the port after it.
  const std::string master_port = std::to_string(root_port - 1);
  const int n = 3;
  const auto results = test::fork_ranks(n, [&](int r) {
    torchrun_env(r, n, master_port);
    setenv("GICL_BOOTSTRAP_INSECURE", "1", 1);
    gicl_comm_t comm = nullptr;
    RANK_OK(gicl_comm_init_env(&comm));
    int rank = -1, size = -1;
    RANK_OK(gicl_comm_rank(comm, &rank));
    RANK_OK(gicl_comm_size(comm, &size));
    RANK_CHECK(rank == r && size == n, "rank %d size %d, expected %d of %d", rank, size, r, n);
    RANK_OK(gicl_comm_destroy(comm));
    return 0;
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

/// Without GICL_BOOTSTRAP_SECRET and without GICL_BOOTSTRAP_INSECURE=1 a launcher job does not
/// start: every rank fails at once with GICL_INVALID_USAGE naming both variables, before any
/// socket is opened.
TEST_F(LauncherEnv, ALauncherJobWithoutASecretIsRefused) {
  const int n = 2;
  const auto results = test::fork_ranks(n, [&](int r) {
    torchrun_env(r, n, "29500");
    gicl_comm_t comm = nullptr;
    const gicl_result_t rc = gicl_comm_init_env(&comm);
    const std::string msg = gicl_get_last_error();
    RANK_CHECK(rc == GICL_INVALID_USAGE &&
                   msg.find("GICL_BOOTSTRAP_SECRET is not set") != std::string::npos &&
                   msg.find("GICL_BOOTSTRAP_INSECURE=1") != std::string::npos,
               "no secret: %d '%s'", rc, msg.c_str());
    return 0;
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(results[r].code, 0) << "rank " << r;
    EXPECT_LT(results[r].seconds, 2.0) << "rank " << r;
  }
}

TEST_F(LauncherEnv, GiclVariablesComeFirstThenTorchrunThenMpi) {
  int rank = -1, size = -1, local = -1;
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  ASSERT_TRUE(bootstrap::launcher_ranks(&rank, &size, &local).ok());
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(size, 4);
  setenv("RANK", "2", 1);
  setenv("WORLD_SIZE", "8", 1);
  setenv("LOCAL_RANK", "2", 1);
  ASSERT_TRUE(bootstrap::launcher_ranks(&rank, &size, &local).ok());
  EXPECT_EQ(rank, 2);
  EXPECT_EQ(size, 8);
  EXPECT_EQ(local, 2);
  setenv("GICL_RANK", "3", 1);
  setenv("GICL_WORLD_SIZE", "5", 1);
  ASSERT_TRUE(bootstrap::launcher_ranks(&rank, &size, &local).ok());
  EXPECT_EQ(rank, 3);
  EXPECT_EQ(size, 5);
}

TEST_F(LauncherEnv, RootFromGiclRootAddrElseMasterPortPlusOne) {
  std::string root;
  const char* source = nullptr;
  EXPECT_EQ(bootstrap::launcher_root(&root, &source).code(), GICL_INVALID_USAGE);
  EXPECT_NE(std::string(gicl_get_last_error()).find("MASTER_ADDR"), std::string::npos);
  setenv("MASTER_ADDR", "node7", 1);
  setenv("MASTER_PORT", "29500", 1);
  ASSERT_TRUE(bootstrap::launcher_root(&root, &source).ok());
  EXPECT_EQ(root, "node7:29501");
  setenv("MASTER_ADDR", "fe80::1", 1);
  ASSERT_TRUE(bootstrap::launcher_root(&root, &source).ok());
  EXPECT_EQ(root, "[fe80::1]:29501");
  setenv("MASTER_PORT", "65535", 1);
  EXPECT_EQ(bootstrap::launcher_root(&root, &source).code(), GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gicl_get_last_error()).find("MASTER_PORT"), std::string::npos);
  setenv("GICL_ROOT_ADDR", "127.0.0.1:4000", 1);
  ASSERT_TRUE(bootstrap::launcher_root(&root, &source).ok());
  EXPECT_EQ(root, "127.0.0.1:4000");
  EXPECT_STREQ(source, "GICL_ROOT_ADDR");
}

}  // namespace
}  // namespace gicl
