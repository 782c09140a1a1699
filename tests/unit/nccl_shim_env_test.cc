// SPDX-License-Identifier: Apache-2.0
// NCCL's environment variables as gicl settings (shim/nccl/env): what maps is set, a GICL_*
// variable the user set wins, and a value without a gicl meaning is left out and named.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "shim/nccl/env.hpp"

namespace gicl::nccl {
namespace {

std::map<std::string, std::string> mapped(const std::map<std::string, std::string>& env,
                                          std::vector<std::string>* ignored) {
  auto get = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  std::map<std::string, std::string> out;
  for (const auto& m : nccl_env_to_gicl(get, ignored)) out[m.name] = m.value;
  return out;
}

TEST(NcclShimEnv, NcclVariablesWithAGiclMeaningBecomeGiclSettings) {
  std::vector<std::string> ignored;
  const auto m = mapped({{"NCCL_DEBUG", "info"},
                         {"NCCL_SOCKET_IFNAME", "^docker,lo"},
                         {"NCCL_PROTO", "Simple"},
                         {"NCCL_ALGO", "ring"}},
                        &ignored);
  EXPECT_EQ(m.at("GICL_DEBUG"), "INFO");
  EXPECT_EQ(m.at("GICL_SOCKET_IFNAME"), "^docker,lo");
  EXPECT_EQ(m.at("GICL_PROTO"), "SIMPLE");
  EXPECT_EQ(m.at("GICL_ALGO"), "ring");
  EXPECT_TRUE(ignored.empty());
}

TEST(NcclShimEnv, TheUsersGiclVariableWinsAndUnmappedValuesAreNamed) {
  std::vector<std::string> ignored;
  const auto m = mapped({{"NCCL_PROTO", "LL128"},
                         {"GICL_PROTO", "LL"},
                         {"NCCL_ALGO", "Tree"},
                         {"NCCL_DEBUG", "ABORT"}},
                        &ignored);
  EXPECT_EQ(m.count("GICL_PROTO"), 0u);  // set by the user already
  EXPECT_EQ(m.count("GICL_ALGO"), 0u);
  EXPECT_EQ(m.count("GICL_DEBUG"), 0u);
  ASSERT_EQ(ignored.size(), 2u);
  EXPECT_NE(ignored[0].find("NCCL_DEBUG=ABORT"), std::string::npos) << ignored[0];
  EXPECT_NE(ignored[1].find("NCCL_ALGO=Tree"), std::string::npos) << ignored[1];
  EXPECT_TRUE(mapped({}, &ignored).empty());
}

}  // namespace
}  // namespace gicl::nccl
