// SPDX-License-Identifier: Apache-2.0
// C API: the version, the size parser every tool shares, and the log for header-inline code.
#include "common/log.hpp"
#include "common/settings.hpp"
#include "core/api_guard.hpp"

using gicl::Status;

extern "C" {

gicl_result_t gicl_get_version(int* version) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(version != nullptr, "version must not be NULL");
    *version = GICL_VERSION_CODE;
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_parse_size(const char* text, size_t* bytes) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(text != nullptr, "text must not be NULL");
    GICL_ARG_CHECK(bytes != nullptr, "bytes must not be NULL");
    int64_t v = 0;
    GICL_ARG_CHECK(gicl::parse_size(text, &v),
                   "text='%s' is not a size (digits with an optional K, M, G or T suffix)", text);
    *bytes = static_cast<size_t>(v);
    return GICL_SUCCESS;
  });
}

void gicl_log_warning(const char* message) {
  GICL_WARN(gicl::kSubsysAll, "%s", message ? message : "(null)");
}

}  // extern "C"
