// SPDX-License-Identifier: Apache-2.0
// Internal result type and the one check macro every layer uses.
#pragma once

#include <cstdarg>

#include "gicl/gicl.h"

namespace gicl {

/// Internal result: a gicl_result_t that cannot be ignored. Errors carry their message in the
/// thread's last-error slot (set by fail()), so the type stays one word.
class [[nodiscard]] Status {
 public:
  constexpr Status() = default;
  constexpr Status(gicl_result_t code) : code_(code) {}  // NOLINT(google-explicit-constructor)
  constexpr bool ok() const { return code_ == GICL_SUCCESS; }
  constexpr gicl_result_t code() const { return code_; }
  void ignore() const {}

 private:
  gicl_result_t code_ = GICL_SUCCESS;
};

/// Records `code` with a printf-style message as this thread's last error, logs it at WARN and
/// returns it. Every error that leaves the library starts here.
Status fail(gicl_result_t code, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
/// Notes one frame of an error's way up (logged at INFO as "file:line -> code").
void note_propagation(gicl_result_t code, const char* file, int line, const char* expr);

/// Hands an error another thread recorded (its code and last_error()) to this thread as its own,
/// without logging it again.
Status relay(gicl_result_t code, const char* message);
/// This thread's last error message.
const char* last_error();
/// Clears the last error at the start of each public call.
void clear_last_error();

}  // namespace gicl

#define GICL_FAIL(code, ...) ::gicl::fail((code), __FILE__, __LINE__, __VA_ARGS__)

/// Propagates a failed Status, logging file:line -> code so a failure reads like a backtrace.
#define GICL_CHECK(expr)                                                              \
  do {                                                                                \
    ::gicl::Status gicl_check_status_ = (expr);                                       \
    if (!gicl_check_status_.ok()) {                                                   \
      ::gicl::note_propagation(gicl_check_status_.code(), __FILE__, __LINE__, #expr); \
      return gicl_check_status_;                                                      \
    }                                                                                 \
  } while (0)

/// For OS calls that return -1 and set errno.
#define GICL_SYSCHECK(call, what)                                                      \
  do {                                                                                 \
    if ((call) == -1) {                                                                \
      return GICL_FAIL(GICL_SYSTEM_ERROR, "%s failed: %s", (what), ::strerror(errno)); \
    }                                                                                  \
  } while (0)

/// Argument validation: the message always names the argument.
#define GICL_ARG_CHECK(cond, ...)                                      \
  do {                                                                 \
    if (!(cond)) return GICL_FAIL(GICL_INVALID_ARGUMENT, __VA_ARGS__); \
  } while (0)
