// SPDX-License-Identifier: Apache-2.0
// Kernel side of the copy-engine proxy (detail/copy_queue.h): post a copy, await its completion.
// One thread of a launch posts and awaits; the launches that share a queue run one after another (a
// communicator's point-to-point launches are stream-ordered).
#pragma once

#include "gicl/device/detail/copy_queue.h"
#include "gicl/device/wait.cuh"

namespace gicl {

/// Posts the copy of `bytes` from `src` to `dst` and returns its number, or 0 when the wait for
/// a free slot failed (reported). A slot is free once the request `slots` before it completed.
__device__ __noinline__ inline uint64_t copy_post(dev::detail::Reporter r, const CopyQueue& q,
                                                  void* dst, const void* src, uint64_t bytes,
                                                  int peer) {
  const uint64_t seq = *q.posted + 1, free_after = copy_reuse_after(seq, q.slots);
  if (free_after > 0 && !dev::detail::wait(r, GICL_OP_PUT, q.done, dev::Cmp::kAtLeast, free_after,
                                           peer, static_cast<uint64_t*>(nullptr)))
    return 0;
  CopyRequest* slot = q.ring + copy_slot(seq, q.slots);
  dev::detail::store_relaxed_sys(&slot->dst, reinterpret_cast<uint64_t>(dst));
  dev::detail::store_relaxed_sys(&slot->src, reinterpret_cast<uint64_t>(src));
  dev::detail::store_relaxed_sys(&slot->bytes, bytes);
  dev::detail::fence_system();  // the fields before the number that publishes them
  dev::detail::store_relaxed_sys(&slot->seq, seq);
  *q.posted = seq;
  return seq;
}

/// Waits until copy `seq` (and every one before it) is complete: its bytes are in place. False
/// when the proxy failed (reported as GICL_DEVICE_ERROR_PROXY, the proxy logs why), the
/// communicator was aborted or the wait passed GICL_WAIT_TIMEOUT.
__device__ __noinline__ inline bool copy_wait(dev::detail::Reporter r, const CopyQueue& q,
                                              uint64_t seq, int peer) {
  dev::detail::Deadline deadline;
  for (uint32_t spin = 0;; ++spin) {
    const uint64_t seen = dev::detail::load_acquire_sys(q.done);
    if (dev::compare(seen, dev::Cmp::kAtLeast, seq)) return true;
    if ((spin & 1023) != 1023) continue;
    if (*q.failed)
      return dev::detail::report(r, GICL_DEVICE_ERROR_PROXY, GICL_OP_PUT, peer, q.done, seq, seen,
                                 GICL_CMP_AT_LEAST);
    if (deadline.expired(r, GICL_OP_PUT, peer, q.done, seq, seen, GICL_CMP_AT_LEAST)) return false;
  }
}

}  // namespace gicl
