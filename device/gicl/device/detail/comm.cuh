// SPDX-License-Identifier: Apache-2.0
// Implementation of gicl/device/comm.cuh, which includes it inside namespace gicl::dev where
// it stands (after the types it uses). Not part of the contract; not self-contained.
#pragma once

namespace detail {

/// What the out-of-line paths (report, check_args, wait) read of the communicator, passed by
/// value. Given the handle by reference they would make every kernel that calls them copy the
/// whole handle to each thread's stack at entry, to have an address to pass; these few words
/// travel only with the calls.
struct Reporter {
  gicl_device_state_t* state;
  uint32_t* error_lock;
  const char* own;  // this rank's heap slot
  uint64_t slot_bytes;
  uint64_t wait_timeout_ns;
  int32_t rank;
  int32_t nranks;
};

__device__ __forceinline__ Reporter reporter(const DeviceComm& c) {
  return {c.state,
          c.error_lock,
          c.heap_base + static_cast<uint64_t>(c.own_slot) * c.slot_bytes,
          c.slot_bytes,
          c.wait_timeout_ns,
          c.rank,
          c.nranks};
}

/// Records the first device-side failure of the communicator (later ones are dropped) and
/// returns false so that callers can `return report(...)`.
__device__ __noinline__ inline bool report(Reporter c, uint32_t kind, uint32_t op, int peer,
                                           const void* addr, uint64_t expected, uint64_t seen,
                                           uint32_t cmp) {
  if (atomicCAS(c.error_lock, 0u, 1u) != 0u) return false;
  gicl_device_error_t* e = &c.state->error;
  e->op = op;
  e->rank = c.rank;
  e->peer = peer;
  e->address = reinterpret_cast<uint64_t>(addr);
  const char* own = c.own;
  const char* a = static_cast<const char*>(addr);
  e->offset = (a >= own && a < own + c.slot_bytes) ? static_cast<uint64_t>(a - own) : ~0ull;
  e->expected = expected;
  e->seen = seen;
  e->cmp = cmp;
  e->kind = kind;
  // The host reads `state` first and the fields after it: fields before the state word.
  fence_system();
  store_relaxed_sys(&e->state, 2u);
  if (kind == GICL_DEVICE_ERROR_BAD_ARGUMENT || kind == GICL_DEVICE_ERROR_NO_TRANSPORT)
    printf("gicl: rank %d: device op %u: %s (peer %d, address %p, value %llu)\n", c.rank, op,
           kind == GICL_DEVICE_ERROR_BAD_ARGUMENT ? "bad argument" : "no transport to peer", peer,
           addr, static_cast<unsigned long long>(expected));
  return false;
}

__device__ __forceinline__ bool checks_on(const DeviceComm& c) {
  return (c.flags & GICL_DEVICE_FLAG_CHECKS) != 0;
}

/// GICL_DEVICE_CHECKS: the address range lies in this rank's mapped slot and the rank is valid.
__device__ __noinline__ inline bool check_args(Reporter c, uint32_t op, const void* sym,
                                               size_t bytes, int pe) {
  if (pe < 0 || pe >= c.nranks)
    return report(c, GICL_DEVICE_ERROR_BAD_ARGUMENT, op, pe, sym, static_cast<uint64_t>(pe), 0, 0);
  const char* own = c.own;
  const char* a = static_cast<const char*>(sym);
  const uint64_t mapped = c.state->heap_mapped;
  if (a < own || a >= own + mapped)
    return report(c, GICL_DEVICE_ERROR_BAD_ARGUMENT, op, pe, sym, bytes, mapped, 0);
  if (bytes > mapped - static_cast<uint64_t>(a - own))
    return report(c, GICL_DEVICE_ERROR_BAD_ARGUMENT, op, pe, sym, bytes, mapped, 0);
  return true;
}

}  // namespace detail
