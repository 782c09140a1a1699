// SPDX-License-Identifier: Apache-2.0
// Leveled, per-subsystem logging (GICL_DEBUG, GICL_DEBUG_SUBSYS, GICL_DEBUG_FILE).
#pragma once

#include <cstdint>

namespace gicl {

/// NCCL's order: GICL_DEBUG=VERSION shows the banner alone, WARN and above show problems.
enum class LogLevel : int { kNone = 0, kVersion = 1, kWarn = 2, kInfo = 3, kTrace = 4 };

/// Subsystems, selectable with GICL_DEBUG_SUBSYS (names as in kSubsysNames).
enum Subsys : uint32_t {
  kSubsysInit = 1u << 0,
  kSubsysBootstrap = 1u << 1,
  kSubsysTopo = 1u << 2,
  kSubsysMem = 1u << 3,
  kSubsysNet = 1u << 4,
  kSubsysProxy = 1u << 5,
  kSubsysColl = 1u << 6,
  kSubsysEnv = 1u << 7,
  kSubsysAll = ~0u,
};

/// Parses a GICL_DEBUG_SUBSYS value ("INIT,MEM", "^TOPO", "ALL"); false if a name is unknown.
bool parse_subsys_mask(const char* text, uint32_t* mask);

/// True when a message of this level and subsystem would be written (cheap: two loads).
bool log_enabled(LogLevel level, uint32_t subsys);
void log_message(LogLevel level, uint32_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
/// Re-reads the GICL_DEBUG* settings (tests change them between cases).
void log_reload();
/// The level in effect (GICL_DEBUG).
LogLevel log_level();
/// The CUDA device this thread works for, shown in its log lines as NCCL shows it (`[device]`);
/// -1 until the library makes a device current on the thread. Returns the previous value.
int log_set_device(int device);

}  // namespace gicl

#define GICL_LOG_AT(level, subsys, ...)                                        \
  do {                                                                         \
    if (::gicl::log_enabled((level), (subsys)))                                \
      ::gicl::log_message((level), (subsys), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define GICL_WARN(subsys, ...) GICL_LOG_AT(::gicl::LogLevel::kWarn, (subsys), __VA_ARGS__)
#define GICL_INFO(subsys, ...) GICL_LOG_AT(::gicl::LogLevel::kInfo, (subsys), __VA_ARGS__)
#define GICL_TRACE(subsys, ...) GICL_LOG_AT(::gicl::LogLevel::kTrace, (subsys), __VA_ARGS__)
