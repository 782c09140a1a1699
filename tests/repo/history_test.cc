// SPDX-License-Identifier: Apache-2.0
// The product speaks of the product: no doc, comment, setting doc, test name or message in the
// tree tells how the code got here (work sessions, device calls, experiments, branches, dates as
// history, records outside the tree). Each line of every text file under the scanned folders is
// matched against the patterns below; tests/repo/history_allow.txt lists the legitimate uses
// ("path-regex<TAB>line-regex"), each with its reason.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string source_dir() {
  const char* s = std::getenv("GICL_TEST_SOURCE_DIR");
  return s ? s : ".";
}

const std::vector<std::pair<const char*, std::regex>>& patterns() {
  static const auto flags = std::regex::icase | std::regex::ECMAScript;
  static const std::vector<std::pair<const char*, std::regex>> p = {
      {"a work session", std::regex(R"(\bsessions?\b)", flags)},
      {"an experiment", std::regex(R"(\bexperiment(s|al)?\b)", flags)},
      {"a date", std::regex(R"(\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b)", flags)},
      {"a numbered call",
       std::regex(R"(\b(second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)\s+call\b)",
                  flags)},
      {"a device call", std::regex(R"(\bdevice[- ]calls?\b)", flags)},
      {"a branch", std::regex(R"(\bnext/[a-z]|\bbranch(es)? `)", flags)},
      {"a path outside the tree", std::regex(R"(\.\./shared\b)", flags)},
      {"the old results folder", std::regex(R"(perf/results\b)", flags)},
  };
  return p;
}

struct Allowed {
  std::regex path, line;
};

std::vector<Allowed> allow_list() {
  std::vector<Allowed> out;
  std::ifstream f(source_dir() + "/tests/repo/history_allow.txt");
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    out.push_back({std::regex(line.substr(0, tab)), std::regex(line.substr(tab + 1))});
  }
  return out;
}

TEST(History, NoDocCommentOrMessageTellsHowTheCodeGotHere) {
  const std::string src = source_dir();
  const auto allowed = allow_list();
  ASSERT_FALSE(allowed.empty()) << "tests/repo/history_allow.txt is missing";
  int files = 0;
  for (const char* top :
       {"docs", "src", "collectives", "device", "include", "net", "perf", "shim", "tests"}) {
    if (!fs::exists(src + "/" + top)) continue;
    for (const auto& e : fs::recursive_directory_iterator(src + "/" + top)) {
      if (!e.is_regular_file()) continue;
      const std::string ext = e.path().extension();
      if (ext == ".png" || ext == ".xml") continue;  // pictures, machine descriptions
      const std::string rel = fs::relative(e.path(), src).string();
      ++files;
      std::ifstream f(e.path());
      int n = 0;
      for (std::string line; std::getline(f, line);) {
        ++n;
        for (const auto& [what, re] : patterns()) {
          if (!std::regex_search(line, re)) continue;
          bool ok = false;
          for (const auto& a : allowed)
            ok = ok || (std::regex_search(rel, a.path) && std::regex_search(line, a.line));
          EXPECT_TRUE(ok) << rel << ":" << n << ": " << what << ": " << line;
        }
      }
    }
  }
  EXPECT_GT(files, 150);
}

}  // namespace
