// SPDX-License-Identifier: Apache-2.0
// docs/env.md must be exactly what the registry generates (gicl-info --env-markdown).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

TEST(EnvDoc, DocsMatchTheRegistry) {
  const char* src = std::getenv("GICL_TEST_SOURCE_DIR");
  const char* bin = std::getenv("GICL_TEST_BINARY_DIR");
  ASSERT_NE(src, nullptr);
  ASSERT_NE(bin, nullptr);
  const std::string cmd = std::string(bin) + "/src/tools/gicl-info --env-markdown";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string generated;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) generated.append(buf, n);
  ASSERT_EQ(pclose(p), 0);
  std::ifstream f(std::string(src) + "/docs/env.md");
  ASSERT_TRUE(f.good()) << "docs/env.md is missing";
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), generated)
      << "docs/env.md is out of date: regenerate it with build/src/tools/gicl-info --env-markdown "
         "> docs/env.md";
}

}  // namespace
