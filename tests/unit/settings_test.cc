// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/build_info.hpp"
#include "common/log.hpp"
#include "common/settings.hpp"

namespace gicl {
namespace {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? (void)setenv(name_, old_.c_str(), 1) : (void)unsetenv(name_); }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST(Settings, ParseSizeAcceptsSuffixesAndRejectsGarbage) {
  int64_t v = 0;
  EXPECT_TRUE(parse_size("0", &v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(parse_size("4096", &v));
  EXPECT_EQ(v, 4096);
  EXPECT_TRUE(parse_size("2K", &v));
  EXPECT_EQ(v, 2048);
  EXPECT_TRUE(parse_size("3m", &v));
  EXPECT_EQ(v, 3 << 20);
  EXPECT_TRUE(parse_size("64G", &v));
  EXPECT_EQ(v, 64ll << 30);
  EXPECT_TRUE(parse_size("1TB", &v));
  EXPECT_EQ(v, 1ll << 40);
  for (const char* bad : {"", "-1", "12Q", "1.5G", "G", "1GG", "99999999999999999999", "16777216T"})
    EXPECT_FALSE(parse_size(bad, &v)) << bad;
}

TEST(Settings, ParseBoolAndInt) {
  bool b = false;
  EXPECT_TRUE(parse_bool("yes", &b));
  EXPECT_TRUE(b);
  EXPECT_TRUE(parse_bool("OFF", &b));
  EXPECT_FALSE(b);
  EXPECT_FALSE(parse_bool("2", &b));
  int64_t i = 0;
  EXPECT_TRUE(parse_int64("-17", &i));
  EXPECT_EQ(i, -17);
  EXPECT_FALSE(parse_int64("17x", &i));
  EXPECT_FALSE(parse_int64("", &i));
  EXPECT_FALSE(parse_int64("99999999999999999999", &i));
}

TEST(Settings, ChoiceIsCaseInsensitiveAndExact) {
  EXPECT_EQ(parse_choice("NONE|WARN|INFO", "info"), 2);
  EXPECT_EQ(parse_choice("NONE|WARN|INFO", "WARN"), 1);
  EXPECT_EQ(parse_choice("NONE|WARN|INFO", "WAR"), -1);
  EXPECT_EQ(parse_choice("NONE|WARN|INFO", ""), -1);
}

TEST(Settings, EveryDefaultIsValid) {
  for (int i = 0; i < setting_count(); ++i) {
    const auto s = static_cast<Setting>(i);
    const SettingDef& d = setting_def(s);
    unsetenv(d.name);
    std::string str;
    int64_t v = 0;
    SettingSource src;
    Status st =
        d.type == SettingType::kString ? setting_string(s, &str, &src) : setting_int(s, &v, &src);
    EXPECT_TRUE(st.ok()) << d.name << ": " << last_error();
    EXPECT_EQ(src, SettingSource::kDefault) << d.name;
    EXPECT_EQ(std::string(d.name).rfind("GICL_", 0), 0u) << d.name;
    EXPECT_GT(std::string(d.doc).size(), 10u) << d.name << " needs a real description";
  }
}

TEST(Settings, BadValuesNameTheVariable) {
  struct Case {
    Setting s;
    const char* value;
  } cases[] = {
      {Setting::kBootstrapTimeout, "soon"},  {Setting::kBootstrapTimeout, "0"},
      {Setting::kSymmetricSize, "12Q"},      {Setting::kSymmetricSize, "1K"},
      {Setting::kHeapHandle, "shm"},         {Setting::kDebug, "LOUD"},
      {Setting::kSocketFamily, "ipx"},       {Setting::kRank, "-5"},
      {Setting::kDebugSubsys, "INIT,BOGUS"},
  };
  for (const auto& c : cases) {
    const SettingDef& d = setting_def(c.s);
    ScopedEnv env(d.name, c.value);
    int64_t v = 0;
    std::string str;
    Status st = d.type == SettingType::kString ? setting_string(c.s, &str) : setting_int(c.s, &v);
    EXPECT_EQ(st.code(), GICL_INVALID_ARGUMENT) << d.name << "=" << c.value;
    EXPECT_NE(std::string(last_error()).find(d.name), std::string::npos)
        << "message does not name " << d.name << ": " << last_error();
  }
}

TEST(Settings, EnvironmentOverridesDefaultAndReportsSource) {
  ScopedEnv env("GICL_HEAP_CHUNK_SIZE", "64M");
  int64_t v = 0;
  SettingSource src;
  ASSERT_TRUE(setting_int(Setting::kHeapChunkSize, &v, &src).ok());
  EXPECT_EQ(v, 64 << 20);
  EXPECT_EQ(src, SettingSource::kEnvironment);
  ScopedEnv env2("GICL_HEAP_HANDLE", "legacy_ipc");
  std::string s;
  ASSERT_TRUE(setting_string(Setting::kHeapHandle, &s).ok());
  EXPECT_EQ(s, "LEGACY_IPC");
}

TEST(Logging, SubsystemMask) {
  uint32_t m = 0;
  ASSERT_TRUE(parse_subsys_mask("INIT,MEM", &m));
  EXPECT_EQ(m, kSubsysInit | kSubsysMem);
  ASSERT_TRUE(parse_subsys_mask("^TOPO", &m));
  EXPECT_EQ(m & kSubsysTopo, 0u);
  EXPECT_NE(m & kSubsysInit, 0u);
  EXPECT_FALSE(parse_subsys_mask("INIT,NOPE", &m));
}

TEST(Logging, LevelAndFileFollowSettings) {
  char path[] = "/tmp/gicl-log-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    ScopedEnv lvl("GICL_DEBUG", "INFO");
    ScopedEnv sub("GICL_DEBUG_SUBSYS", "MEM");
    ScopedEnv file("GICL_DEBUG_FILE", path);
    log_reload();
    EXPECT_TRUE(log_enabled(LogLevel::kInfo, kSubsysMem));
    EXPECT_FALSE(log_enabled(LogLevel::kInfo, kSubsysTopo));
    EXPECT_FALSE(log_enabled(LogLevel::kTrace, kSubsysMem));
    EXPECT_TRUE(log_enabled(LogLevel::kWarn, kSubsysTopo));  // warnings are never filtered
    GICL_INFO(kSubsysMem, "marker %d", 4242);
    GICL_INFO(kSubsysTopo, "hidden %d", 1);
  }
  log_reload();
  FILE* f = std::fopen(path, "r");
  ASSERT_NE(f, nullptr);
  char buf[4096] = {};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  std::string text(buf, n);
  EXPECT_NE(text.find("marker 4242"), std::string::npos) << text;
  EXPECT_EQ(text.find("hidden"), std::string::npos) << text;
  EXPECT_NE(text.find("GICL INFO"), std::string::npos) << text;
  // NCCL's layout: host:pid:tid [device] GICL LEVEL file:line message, the file relative to the
  // source tree.
  const std::regex line(
      R"(^[^:\s]+:\d+:\d+ \[-?\d+\] GICL INFO tests/unit/settings_test\.cc:\d+ marker 4242$)");
  bool found = false;
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);) found = found || std::regex_match(l, line);
  EXPECT_TRUE(found) << text;
  unlink(path);
}

TEST(Logging, VersionLevelShowsTheBannerAloneAsNcclDebugDoes) {
  {
    ScopedEnv lvl("GICL_DEBUG", "VERSION");
    log_reload();
    EXPECT_TRUE(log_enabled(LogLevel::kVersion, kSubsysInit));
    EXPECT_FALSE(log_enabled(LogLevel::kWarn, kSubsysInit));
  }
  {
    ScopedEnv lvl("GICL_DEBUG", "WARN");
    log_reload();
    EXPECT_FALSE(log_enabled(LogLevel::kVersion, kSubsysInit));
    EXPECT_TRUE(log_enabled(LogLevel::kWarn, kSubsysInit));
  }
  {
    ScopedEnv lvl("GICL_DEBUG", "INFO");
    log_reload();
    EXPECT_TRUE(log_enabled(LogLevel::kVersion, kSubsysInit));
  }
  log_reload();
  const std::string banner = version_banner();
  EXPECT_EQ(banner.rfind("gicl " + std::to_string(GICL_MAJOR) + "." + std::to_string(GICL_MINOR) +
                             "." + std::to_string(GICL_PATCH) + " (CUDA archs ",
                         0),
            0u)
      << banner;
  EXPECT_NE(banner.find("CUDA runtime"), std::string::npos) << banner;
  EXPECT_NE(banner.find("driver"), std::string::npos) << banner;
}

// A setting's doc is one or two sentences (gicl-info and docs/env.md print it); what a setting
// does in depth belongs to the docs it points to.
TEST(Settings, DocsAreOneOrTwoSentences) {
  const std::regex sentence_end(R"(\.(\s+[A-Z0-9(]|$))");
  for (int i = 0; i < setting_count(); ++i) {
    const SettingDef& d = setting_def(static_cast<Setting>(i));
    const std::string doc = d.doc;
    const auto n = std::distance(std::sregex_iterator(doc.begin(), doc.end(), sentence_end),
                                 std::sregex_iterator());
    EXPECT_GE(n, 1) << d.name << ": " << doc;
    EXPECT_LE(n, 2) << d.name << ": " << doc;
    EXPECT_LE(doc.size(), 320u) << d.name;
  }
}

TEST(Settings, UnknownGiclVariablesAreNamedWithTheClosestKnownName) {
  const char* env[] = {"GICL_SYMETRIC_SIZE=1G",
                       "GICL_DEBUG=INFO",
                       "GICL_TEST_JOBS=2",
                       "GICL_DEBUG_SUBSYSTEM=MEM",
                       "PATH=/bin",
                       "NCCL_DEBUG=INFO",
                       nullptr};
  const auto unknown = unknown_variables(env);
  ASSERT_EQ(unknown.size(), 2u);
  EXPECT_EQ(unknown[0].name, "GICL_SYMETRIC_SIZE");
  EXPECT_EQ(unknown[0].closest, "GICL_SYMMETRIC_SIZE");
  EXPECT_EQ(unknown[1].name, "GICL_DEBUG_SUBSYSTEM");
  EXPECT_EQ(unknown[1].closest, "GICL_DEBUG_SUBSYS");
  // Every registry row and tool variable is known.
  std::vector<std::string> rows;
  for (int i = 0; i < setting_count(); ++i)
    rows.push_back(std::string(setting_def(static_cast<Setting>(i)).name) + "=1");
  for (int i = 0; i < tool_variable_count(); ++i)
    rows.push_back(std::string(tool_variable(i).name) + "=1");
  std::vector<const char*> all;
  for (const auto& r : rows) all.push_back(r.c_str());
  all.push_back(nullptr);
  EXPECT_TRUE(unknown_variables(all.data()).empty());
}

}  // namespace
}  // namespace gicl
