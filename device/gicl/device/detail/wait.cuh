// SPDX-License-Identifier: Apache-2.0
// Implementation of gicl/device/wait.cuh, which includes it inside namespace gicl::dev where
// it stands (after the types it uses). Not part of the contract; not self-contained.
#pragma once

namespace detail {

template <typename T>
__device__ __forceinline__ T load_acquire(const T* p) {
  if constexpr (sizeof(T) == 8) {
    return static_cast<T>(load_acquire_sys(reinterpret_cast<const uint64_t*>(p)));
  } else {
    static_assert(sizeof(T) == 4, "waits take 32- or 64-bit integers");
    return static_cast<T>(load_acquire_sys(reinterpret_cast<const uint32_t*>(p)));
  }
}

/// The bound of every device spin loop, checked every 1024 spins: true when the wait must end
/// because the communicator was aborted (reported), is already in error (reported by whoever
/// failed first, so one stuck rank does not leave the others spinning), or the wait has passed
/// wait_timeout_ns (GICL_WAIT_TIMEOUT; reported with rank, op, address, expected and last seen
/// value). The clock is first read at the first check: a wait that succeeds at once, as most of
/// a small collective's do, never reads it.
struct Deadline {
  uint64_t start = 0;
  __device__ __forceinline__ bool expired(Reporter c, uint32_t op, int peer, const void* addr,
                                          uint64_t expected, uint64_t seen, uint32_t cmp) {
    // Host-mapped words: read rarely, they cross PCIe.
    if (c.state->abort) {
      report(c, GICL_DEVICE_ERROR_ABORTED, op, peer, addr, expected, seen, cmp);
      return true;
    }
    if (c.state->error.state != 0) return true;
    const uint64_t now = global_ns();
    if (start == 0) start = now;
    if (c.wait_timeout_ns == 0 || now - start <= c.wait_timeout_ns) return false;
    report(c, GICL_DEVICE_ERROR_TIMEOUT, op, peer, addr, expected, seen, cmp);
    return true;
  }
};

/// Spins until *addr satisfies cmp with acquire loads: the satisfying load orders the loads that
/// follow after the writer's payload. Measured over NVLink on H200, acquire polling beats relaxed
/// polling followed by a system fence (+0.5 us one way) or by an acquire re-read (+0.2 us). False
/// when the Deadline ends it.
template <typename T>
__device__ __noinline__ bool wait(Reporter c, uint32_t op, const T* addr, Cmp cmp, T value,
                                  int peer, T* seen_out) {
  Deadline deadline;
  for (uint32_t spin = 0;; ++spin) {
    const T seen = load_acquire(addr);
    const bool done = compare(seen, cmp, value);
    if (done || ((spin & 1023) == 1023 &&
                 deadline.expired(c, op, peer, addr, static_cast<uint64_t>(value),
                                  static_cast<uint64_t>(seen), static_cast<uint32_t>(cmp)))) {
      if (seen_out) *seen_out = seen;
      return done;
    }
  }
}

}  // namespace detail
