// Internal result type and the one check macro every layer uses.
#pragma once

#include <cstdarg>

#include "ccl/ccl.h"

namespace ccl {

/// Internal result: a ccl_result_t that cannot be ignored. Errors carry their message in the
/// thread's last-error slot (set by fail()), so the type stays one word.
class [[nodiscard]] Status {
 public:
  constexpr Status() = default;
  constexpr Status(ccl_result_t code) : code_(code) {}  // NOLINT(google-explicit-constructor)
  constexpr bool ok() const { return code_ == CCL_SUCCESS; }
  constexpr ccl_result_t code() const { return code_; }
  void ignore() const {}

 private:
  ccl_result_t code_ = CCL_SUCCESS;
};

/// Records `code` with a printf-style message as this thread's last error, logs it at WARN and
/// returns it. Every error that leaves the library starts here.
Status fail(ccl_result_t code, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
/// Notes one frame of an error's way up (logged at INFO as "file:line -> code").
void note_propagation(ccl_result_t code, const char* file, int line, const char* expr);

/// Hands an error another thread recorded (its code and last_error()) to this thread as its own,
/// without logging it again.
Status relay(ccl_result_t code, const char* message);
/// This thread's last error message.
const char* last_error();
/// Clears the last error at the start of each public call.
void clear_last_error();

}  // namespace ccl

#define CCL_FAIL(code, ...) ::ccl::fail((code), __FILE__, __LINE__, __VA_ARGS__)

/// Propagates a failed Status, logging file:line -> code so a failure reads like a backtrace.
#define CCL_CHECK(expr)                                                             \
  do {                                                                              \
    ::ccl::Status ccl_check_status_ = (expr);                                       \
    if (!ccl_check_status_.ok()) {                                                  \
      ::ccl::note_propagation(ccl_check_status_.code(), __FILE__, __LINE__, #expr); \
      return ccl_check_status_;                                                     \
    }                                                                               \
  } while (0)

/// For OS calls that return -1 and set errno.
#define CCL_SYSCHECK(call, what)                                                     \
  do {                                                                               \
    if ((call) == -1) {                                                              \
      return CCL_FAIL(CCL_SYSTEM_ERROR, "%s failed: %s", (what), ::strerror(errno)); \
    }                                                                                \
  } while (0)

/// Argument validation: the message always names the argument.
#define CCL_ARG_CHECK(cond, ...)                                     \
  do {                                                               \
    if (!(cond)) return CCL_FAIL(CCL_INVALID_ARGUMENT, __VA_ARGS__); \
  } while (0)
