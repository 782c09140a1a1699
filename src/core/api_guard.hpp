// The one boundary between the C API and the C++ inside: clears the last error, turns a Status
// into a ccl_result_t, and keeps C++ exceptions from crossing into C callers.
#pragma once

#include <exception>
#include <new>

#include "common/status.hpp"

namespace ccl {

template <typename Fn>
ccl_result_t api_call(Fn&& fn) noexcept {
  clear_last_error();
  try {
    return fn().code();
  } catch (const std::bad_alloc&) {
    return CCL_FAIL(CCL_SYSTEM_ERROR, "out of host memory").code();
  } catch (const std::exception& e) {
    return CCL_FAIL(CCL_INTERNAL_ERROR, "unexpected exception: %s", e.what()).code();
  } catch (...) {
    return CCL_FAIL(CCL_INTERNAL_ERROR, "unexpected exception").code();
  }
}

}  // namespace ccl
