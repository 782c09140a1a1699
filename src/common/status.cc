// SPDX-License-Identifier: Apache-2.0
#include "common/status.hpp"

#include <cstdio>
#include <string>

#include "common/log.hpp"

namespace gicl {
namespace {
thread_local std::string t_last_error;

const char* code_name(gicl_result_t code) {
  switch (code) {
    case GICL_SUCCESS:
      return "GICL_SUCCESS";
    case GICL_UNHANDLED_CUDA_ERROR:
      return "GICL_UNHANDLED_CUDA_ERROR";
    case GICL_SYSTEM_ERROR:
      return "GICL_SYSTEM_ERROR";
    case GICL_INTERNAL_ERROR:
      return "GICL_INTERNAL_ERROR";
    case GICL_INVALID_ARGUMENT:
      return "GICL_INVALID_ARGUMENT";
    case GICL_INVALID_USAGE:
      return "GICL_INVALID_USAGE";
    case GICL_REMOTE_ERROR:
      return "GICL_REMOTE_ERROR";
    case GICL_IN_PROGRESS:
      return "GICL_IN_PROGRESS";
    case GICL_TIMEOUT:
      return "GICL_TIMEOUT";
    case GICL_ABORTED:
      return "GICL_ABORTED";
    case GICL_UNSUPPORTED:
      return "GICL_UNSUPPORTED";
    default:
      return "unknown result";
  }
}
}  // namespace

Status fail(gicl_result_t code, const char* file, int line, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  t_last_error = buf;
  if (log_enabled(LogLevel::kWarn, kSubsysAll))
    log_message(LogLevel::kWarn, kSubsysAll, file, line, "%s: %s", code_name(code), buf);
  return code;
}

void note_propagation(gicl_result_t code, const char* file, int line, const char* expr) {
  if (log_enabled(LogLevel::kInfo, kSubsysAll))
    log_message(LogLevel::kInfo, kSubsysAll, file, line, "-> %s (%s)", code_name(code), expr);
}

Status relay(gicl_result_t code, const char* message) {
  t_last_error = message;
  return code;
}

const char* last_error() {
  return t_last_error.c_str();
}
void clear_last_error() {
  t_last_error.clear();
}

}  // namespace gicl

extern "C" const char* gicl_get_error_string(gicl_result_t result) {
  switch (result) {
    case GICL_SUCCESS:
      return "no error";
    case GICL_UNHANDLED_CUDA_ERROR:
      return "unhandled CUDA error";
    case GICL_SYSTEM_ERROR:
      return "system call failed";
    case GICL_INTERNAL_ERROR:
      return "internal error (a gicl bug)";
    case GICL_INVALID_ARGUMENT:
      return "invalid argument";
    case GICL_INVALID_USAGE:
      return "invalid usage";
    case GICL_REMOTE_ERROR:
      return "remote rank failed or disagreed";
    case GICL_IN_PROGRESS:
      return "operation in progress";
    case GICL_TIMEOUT:
      return "timed out";
    case GICL_ABORTED:
      return "communicator aborted";
    case GICL_UNSUPPORTED:
      return "unsupported on this build or machine";
    default:
      return "unknown result code";
  }
}

extern "C" const char* gicl_get_last_error(void) {
  return gicl::last_error();
}
