// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

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
  unlink(path);
}

}  // namespace
}  // namespace gicl
