// SPDX-License-Identifier: Apache-2.0
// The copy-engine proxy's command queue as kernels and the proxy thread both see it (plain data,
// shared by host and device code; internal to gicl, not part of the device API's contract). A
// kernel that wants bytes moved by a copy engine posts a request into a ring in pinned host memory;
// the proxy thread (copy_proxy.hpp) issues it with cudaMemcpyAsync on a stream of its own and,
// stream-ordered after the copy, stores the request's number into `done` in device memory, which
// the kernel polls.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GICL_QUEUE_HD __host__ __device__ __forceinline__
#else
#define GICL_QUEUE_HD inline
#endif

namespace gicl {

/// One copy. The kernel writes every field, then `seq` (system fence between), so the proxy
/// reads the fields only once `seq` says they are complete.
struct alignas(32) CopyRequest {
  uint64_t dst;  // address in the proxy process's view (a peer window mapped here)
  uint64_t src;
  uint64_t bytes;
  uint64_t seq;  // the request's number, 1-based
};

/// What a kernel needs to post and await copies. All null when there is no proxy.
struct CopyQueue {
  CopyRequest* ring;                // pinned host memory, device view: `slots` requests
  uint64_t* posted;                 // device memory: the last request number posted
  const uint64_t* done;             // device memory: the last request number completed
  const volatile uint32_t* failed;  // pinned host memory: nonzero once the proxy has failed
  uint32_t slots;
  uint32_t pad;
};

/// Slot of request `seq` (1-based) in a ring of `slots`.
GICL_QUEUE_HD uint32_t copy_slot(uint64_t seq, uint32_t slots) {
  return static_cast<uint32_t>((seq - 1) % slots);
}
/// The request that must be complete before request `seq` may overwrite its slot (0: none).
GICL_QUEUE_HD uint64_t copy_reuse_after(uint64_t seq, uint32_t slots) {
  return seq > slots ? seq - slots : 0;
}

static_assert(sizeof(CopyRequest) == 32, "CopyRequest is shared by kernels and the proxy thread");
static_assert(sizeof(CopyQueue) == 40, "CopyQueue is passed to kernels by value");

}  // namespace gicl
