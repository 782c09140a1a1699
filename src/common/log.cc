// SPDX-License-Identifier: Apache-2.0
#include "common/log.hpp"

#include <pthread.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "common/settings.hpp"

namespace gicl {
namespace {

constexpr struct {
  const char* name;
  uint32_t bit;
} kSubsysNames[] = {
    {"INIT", kSubsysInit}, {"BOOTSTRAP", kSubsysBootstrap},
    {"TOPO", kSubsysTopo}, {"MEM", kSubsysMem},
    {"NET", kSubsysNet},   {"PROXY", kSubsysProxy},
    {"COLL", kSubsysColl}, {"ENV", kSubsysEnv},
    {"ALL", kSubsysAll},
};

std::atomic<int> g_level{-1};  // -1: not read yet
std::atomic<uint32_t> g_mask{kSubsysAll};
std::mutex g_mutex;
FILE* g_file = nullptr;
char g_host[64] = "?";

thread_local int t_device = -1;

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kVersion:
      return "VERSION";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kTrace:
      return "TRACE";
    default:
      return "";
  }
}

std::string expand_path(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[++i];
      if (c == 'h') {
        out += g_host;
        continue;
      }
      if (c == 'p') {
        out += std::to_string(getpid());
        continue;
      }
      out += '%';
    }
    out += pattern[i];
  }
  return out;
}

// Reads the settings without going through fail(), which would log and recurse.
void load_locked() {
  gethostname(g_host, sizeof(g_host) - 1);
  int level = static_cast<int>(LogLevel::kWarn);
  SettingSource src;
  const std::string lv = setting_raw(Setting::kDebug, &src);
  int idx = parse_choice(setting_def(Setting::kDebug).choices, lv.c_str());
  if (idx >= 0) level = idx;
  uint32_t mask = kSubsysAll;
  const std::string subs = setting_raw(Setting::kDebugSubsys, &src);
  if (!parse_subsys_mask(subs.c_str(), &mask)) mask = kSubsysAll;
  if (g_file != nullptr && g_file != stderr) std::fclose(g_file);
  g_file = stderr;
  const std::string path = setting_raw(Setting::kDebugFile, &src);
  if (!path.empty()) {
    FILE* f = std::fopen(expand_path(path).c_str(), "a");
    if (f != nullptr) g_file = f;
  }
  g_mask.store(mask, std::memory_order_relaxed);
  g_level.store(level, std::memory_order_release);
  if (idx < 0)
    std::fprintf(g_file, "%s:%d:%ld [%d] GICL WARN GICL_DEBUG='%s' is not one of %s; using WARN\n",
                 g_host, getpid(), static_cast<long>(syscall(SYS_gettid)), t_device, lv.c_str(),
                 setting_def(Setting::kDebug).choices);
}

}  // namespace

bool parse_subsys_mask(const char* text, uint32_t* mask) {
  bool invert = false;
  if (*text == '^') invert = true, ++text;
  uint32_t m = 0;
  std::string s(text);
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    std::string tok = s.substr(pos, comma - pos);
    if (!tok.empty()) {
      bool found = false;
      for (const auto& n : kSubsysNames)
        if (strcasecmp(n.name, tok.c_str()) == 0) m |= n.bit, found = true;
      if (!found) return false;
    }
    pos = comma + 1;
  }
  *mask = invert ? ~m : m;
  return true;
}

// A fork while another thread writes a line must not leave the child's log mutex locked.
void lock_for_fork() {
  g_mutex.lock();
}
void unlock_after_fork() {
  g_mutex.unlock();
}

namespace {
int current_level() {
  int cur = g_level.load(std::memory_order_acquire);
  if (cur < 0) {
    static const int once = pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
    (void)once;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_level.load() < 0) load_locked();
    cur = g_level.load();
  }
  return cur;
}
}  // namespace

bool log_enabled(LogLevel level, uint32_t subsys) {
  const int cur = current_level();
  // The banner shows at VERSION and from INFO up; it is not a problem report, so WARN alone
  // (the default) stays quiet about it.
  if (level == LogLevel::kVersion)
    return cur == static_cast<int>(LogLevel::kVersion) || cur >= static_cast<int>(LogLevel::kInfo);
  if (static_cast<int>(level) > cur) return false;
  // Warnings are never filtered by subsystem: they are the one line a user reads.
  return level == LogLevel::kWarn || (g_mask.load(std::memory_order_relaxed) & subsys) != 0;
}

void log_message(LogLevel level, uint32_t subsys, const char* file, int line, const char* fmt,
                 ...) {
  (void)subsys;
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  // NCCL's layout, so the same greps and parsers work: host:pid:tid [device] GICL LEVEL file:line
  // message. Paths are relative to the source tree (-fmacro-prefix-map in CMakeLists.txt).
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(g_file, "%s:%d:%ld [%d] GICL %s %s:%d %s\n", g_host, getpid(),
               static_cast<long>(syscall(SYS_gettid)), t_device, level_name(level), file, line,
               msg);
  std::fflush(g_file);
}

void log_reload() {
  std::lock_guard<std::mutex> lock(g_mutex);
  load_locked();
}

LogLevel log_level() {
  return static_cast<LogLevel>(current_level());
}

int log_set_device(int device) {
  const int previous = t_device;
  t_device = device;
  return previous;
}

}  // namespace gicl
