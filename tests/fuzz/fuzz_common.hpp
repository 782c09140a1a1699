// SPDX-License-Identifier: Apache-2.0
// What every libFuzzer harness shares: logging off (a rejected input logs a warning, which would
// drown the fuzzer's output), set once before the first input.
#pragma once

#include <cstdlib>

#include "common/log.hpp"

inline void fuzz_quiet_logs() {
  setenv("GICL_DEBUG", "NONE", 1);
  gicl::log_reload();
}
