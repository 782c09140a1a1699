// SPDX-License-Identifier: Apache-2.0
// The one boundary between the C API and the C++ inside: clears the last error, turns a Status
// into a gicl_result_t, and keeps C++ exceptions from crossing into C callers.
#pragma once

#include <exception>
#include <new>

#include "common/status.hpp"

namespace gicl {

template <typename Fn>
gicl_result_t api_call(Fn&& fn) noexcept {
  clear_last_error();
  try {
    return fn().code();
  } catch (const std::bad_alloc&) {
    return GICL_FAIL(GICL_SYSTEM_ERROR, "out of host memory").code();
  } catch (const std::exception& e) {
    return GICL_FAIL(GICL_INTERNAL_ERROR, "unexpected exception: %s", e.what()).code();
  } catch (...) {
    return GICL_FAIL(GICL_INTERNAL_ERROR, "unexpected exception").code();
  }
}

}  // namespace gicl
