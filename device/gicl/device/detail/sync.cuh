// SPDX-License-Identifier: Apache-2.0
// Implementation of gicl/device/sync.cuh, which includes it inside namespace gicl::dev where
// it stands (after the types it uses). Not part of the contract; not self-contained.
#pragma once

namespace detail {

/// Counts one arrival of this rank at rank `to`: a relaxed add into its sync_in[c.rank] over P2P,
/// net_arrive through the proxy to a rank on the network path (where `to` waits on
/// arrival_word). Orders nothing before it: callers fence first (P2P) or add only after their
/// puts completed (network). False when it failed (reported).
__device__ __forceinline__ bool arrive(const DeviceComm& c, int to, uint32_t op) {
  if (net_ring(c, to) != nullptr) return net_arrive(c, to);
  uint64_t* remote = route(c, op, c.sync_in + c.rank, sizeof(uint64_t), to);
  if (remote == nullptr) return false;
  add_relaxed_sys(remote, 1);
  return true;
}

/// One dissemination round per power of two: notify the rank `d` ahead, wait for the rank `d`
/// behind (a rank on the network path is notified through the proxy). Arrivals are counted per
/// sender (arrival_word(sender) at the receiver, sync_expected[sender] locally), so barriers of
/// different teams may interleave as long as each pair of ranks meets its barriers in the same
/// order. Called by one thread.
template <typename Member>
__device__ __noinline__ bool dissemination(const DeviceComm& c, int n, int me, Member member,
                                           uint32_t op) {
  bool ok = true;
  for (int d = 1; d < n && ok; d <<= 1) {
    const int to = member((me + d) % n), from = member((me - d % n + n) % n);
    if (!arrive(c, to, op)) return false;  // barrier() fences (and quiets) before the first round
    const uint64_t expected = ++c.sync_expected[from];
    ok = wait(reporter(c), op, arrival_word(c, from), Cmp::kAtLeast, expected, from,
              static_cast<uint64_t*>(nullptr));
  }
  return ok;
}

/// The leader's result, given to every thread of the scope. A block learns it through the
/// barrier's own reduction rather than a shared variable, which the leader's next call could
/// overwrite while a slow warp still reads this one's (two block-scope syncs in a row).
template <Scope S>
__device__ __forceinline__ bool scope_broadcast(bool leader_result) {
  if constexpr (S == Scope::kBlock) {
    return __syncthreads_or(scope_leader<S>() && !leader_result) == 0;
  } else if constexpr (S == Scope::kWarp) {
    return __shfl_sync(0xffffffffu, leader_result, 0);
  } else {
    return leader_result;
  }
}

}  // namespace detail
