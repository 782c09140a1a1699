// SPDX-License-Identifier: Apache-2.0
// The proxy thread's side of the copy queue (device/gicl/device/detail/copy_queue.h): taking a
// request a kernel has published.
#pragma once

#include "gicl/device/detail/copy_queue.h"

namespace gicl {

/// What the proxy finds in the slot of the request it expects next.
enum class CopyTake { kEmpty, kReady, kOverrun };

/// Host side: takes request `next` from the ring into *out once the kernel has published it.
/// kOverrun: the slot holds a later request, so request `next` was overwritten before it was
/// taken (a poster that did not wait for copy_reuse_after).
inline CopyTake copy_take(const CopyRequest* ring, uint32_t slots, uint64_t next,
                          CopyRequest* out) {
  const CopyRequest& slot = ring[copy_slot(next, slots)];
  const uint64_t seq = __atomic_load_n(&slot.seq, __ATOMIC_ACQUIRE);
  if (seq != next) return seq > next ? CopyTake::kOverrun : CopyTake::kEmpty;
  *out = {__atomic_load_n(&slot.dst, __ATOMIC_RELAXED),
          __atomic_load_n(&slot.src, __ATOMIC_RELAXED),
          __atomic_load_n(&slot.bytes, __ATOMIC_RELAXED), seq};
  return CopyTake::kReady;
}

}  // namespace gicl
