// SPDX-License-Identifier: Apache-2.0
// What the tests of programmatic dependent launch (PDL) put before a library call: a kernel that
// lets the next kernel of its stream launch at once and writes only later, so that a call which
// acted before waiting for it would see the old data.
#pragma once

#include <cstdint>

namespace gicl::test {

/// The PDL trigger as the first statement, then a sleep of `delay_ns`; the caller writes after.
__device__ __forceinline__ void trigger_dependents_then_sleep(uint64_t delay_ns) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < delay_ns);
}

}  // namespace gicl::test
