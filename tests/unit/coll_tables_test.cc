// SPDX-License-Identifier: Apache-2.0
// The collective and algorithm tables (collectives/schedule/tables.hpp): their columns, the names
// GICL_ALGO parses and lists in its error, and the docs' algorithm table, which must list exactly
// each collective's algorithms.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "collectives/host/tuner.hpp"
#include "collectives/schedule/tables.hpp"

namespace gicl::coll {
namespace {

TEST(CollTables, CollectiveColumns) {
  EXPECT_TRUE(is_reduction(Collective::kAllReduce) && is_reduction(Collective::kReduce));
  EXPECT_FALSE(is_reduction(Collective::kAllGather) || is_reduction(Collective::kAllToAll));
  EXPECT_TRUE(has_root(Collective::kBroadcast) && has_root(Collective::kReduce));
  EXPECT_FALSE(has_root(Collective::kAllReduce));
  EXPECT_EQ(send_elems(Collective::kReduceScatter, 5, 4), 20u);
  EXPECT_EQ(recv_elems(Collective::kReduceScatter, 5, 4), 5u);
  EXPECT_EQ(send_elems(Collective::kAllGather, 5, 4), 5u);
  EXPECT_EQ(recv_elems(Collective::kAllGather, 5, 4), 20u);
  EXPECT_EQ(send_elems(Collective::kAllToAll, 5, 4), 20u);
  EXPECT_EQ(recv_elems(Collective::kAllToAll, 5, 4), 20u);
  EXPECT_EQ(recv_elems(Collective::kBroadcast, 5, 4), 5u);
  EXPECT_EQ(in_place_rule(Collective::kAllGather), InPlace::kSendIsOwnRecvBlock);
  EXPECT_EQ(in_place_rule(Collective::kReduceScatter), InPlace::kRecvIsOwnSendBlock);
}

TEST(CollTables, NamesAreUniqueAndParsedBack) {
  std::set<std::string> names;
  for (int i = 0; i < kNumAlgorithms; ++i) {
    const std::string name = algorithm_name(static_cast<Algorithm>(i));
    EXPECT_TRUE(names.insert(name).second) << name;
    TunerConfig cfg;
    ASSERT_TRUE(parse_algo_setting(name, &cfg).ok()) << name;
    for (int c = 0; c < kNumCollectives; ++c)
      EXPECT_EQ(cfg.forced[c], supported(static_cast<Collective>(c), static_cast<Algorithm>(i)));
  }
  // An unknown name fails and the message lists every algorithm.
  TunerConfig cfg;
  EXPECT_EQ(parse_algo_setting("one_shott", &cfg).code(), GICL_INVALID_ARGUMENT);
  const std::string msg = gicl_get_last_error();
  for (const auto& n : names) EXPECT_NE(msg.find(n), std::string::npos) << n << " in " << msg;
}

// docs/collectives.md, "## Algorithms": | `collective` | `algo`, `algo`, ... |
TEST(CollTables, TheDocsListEveryCollectivesAlgorithms) {
  const char* src = std::getenv("GICL_TEST_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  std::ifstream f(std::string(src) + "/docs/collectives.md");
  ASSERT_TRUE(f.good());
  bool in = false;
  int rows = 0;
  static const std::regex tick("`([^`]+)`");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("## ", 0) == 0) in = line == "## Algorithms";
    if (!in || line.rfind("| `", 0) != 0) continue;
    std::set<std::string> listed;
    std::string first;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), tick);
         it != std::sregex_iterator(); ++it) {
      if (first.empty())
        first = (*it)[1];
      else
        listed.insert((*it)[1]);
    }
    int c = -1;
    for (int i = 0; i < kNumCollectives; ++i)
      if (first == collective_name(static_cast<Collective>(i))) c = i;
    if (c < 0) continue;  // the second table describes algorithms, not collectives
    ++rows;
    std::set<std::string> want;
    for (int a = 0; a < kNumAlgorithms; ++a)
      if (supported(static_cast<Collective>(c), static_cast<Algorithm>(a)))
        want.insert(algorithm_name(static_cast<Algorithm>(a)));
    EXPECT_EQ(listed, want) << first;
  }
  EXPECT_EQ(rows, kNumCollectives);
}

}  // namespace
}  // namespace gicl::coll
