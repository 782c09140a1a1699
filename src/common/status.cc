#include "common/status.hpp"

#include <cstdio>
#include <string>

#include "common/log.hpp"

namespace ccl {
namespace {
thread_local std::string t_last_error;

const char* code_name(ccl_result_t code) {
  switch (code) {
    case CCL_SUCCESS:
      return "CCL_SUCCESS";
    case CCL_UNHANDLED_CUDA_ERROR:
      return "CCL_UNHANDLED_CUDA_ERROR";
    case CCL_SYSTEM_ERROR:
      return "CCL_SYSTEM_ERROR";
    case CCL_INTERNAL_ERROR:
      return "CCL_INTERNAL_ERROR";
    case CCL_INVALID_ARGUMENT:
      return "CCL_INVALID_ARGUMENT";
    case CCL_INVALID_USAGE:
      return "CCL_INVALID_USAGE";
    case CCL_REMOTE_ERROR:
      return "CCL_REMOTE_ERROR";
    case CCL_IN_PROGRESS:
      return "CCL_IN_PROGRESS";
    case CCL_TIMEOUT:
      return "CCL_TIMEOUT";
    case CCL_ABORTED:
      return "CCL_ABORTED";
    case CCL_UNSUPPORTED:
      return "CCL_UNSUPPORTED";
    default:
      return "unknown result";
  }
}
}  // namespace

Status fail(ccl_result_t code, const char* file, int line, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  t_last_error = buf;
  CCL_LOG_AT(LogLevel::kWarn, kSubsysAll, "%s:%d %s: %s", file, line, code_name(code), buf);
  return code;
}

void note_propagation(ccl_result_t code, const char* file, int line, const char* expr) {
  CCL_INFO(kSubsysAll, "%s:%d -> %s (%s)", file, line, code_name(code), expr);
}

Status relay(ccl_result_t code, const char* message) {
  t_last_error = message;
  return code;
}

const char* last_error() {
  return t_last_error.c_str();
}
void clear_last_error() {
  t_last_error.clear();
}

}  // namespace ccl

extern "C" const char* ccl_get_error_string(ccl_result_t result) {
  switch (result) {
    case CCL_SUCCESS:
      return "no error";
    case CCL_UNHANDLED_CUDA_ERROR:
      return "unhandled CUDA error";
    case CCL_SYSTEM_ERROR:
      return "system call failed";
    case CCL_INTERNAL_ERROR:
      return "internal error (a ccl bug)";
    case CCL_INVALID_ARGUMENT:
      return "invalid argument";
    case CCL_INVALID_USAGE:
      return "invalid usage";
    case CCL_REMOTE_ERROR:
      return "remote rank failed or disagreed";
    case CCL_IN_PROGRESS:
      return "operation in progress";
    case CCL_TIMEOUT:
      return "timed out";
    case CCL_ABORTED:
      return "communicator aborted";
    case CCL_UNSUPPORTED:
      return "unsupported on this build or machine";
    default:
      return "unknown result code";
  }
}

extern "C" const char* ccl_get_last_error(void) {
  return ccl::last_error();
}
