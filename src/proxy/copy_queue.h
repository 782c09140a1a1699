// The copy-engine proxy's command queue as kernels and the proxy thread both see it (plain data,
// shared by host and device code). A kernel that wants bytes moved by a copy engine posts a
// request into a ring in pinned host memory; the proxy thread (copy_proxy.hpp) issues it with
// cudaMemcpyAsync on a stream of its own and, stream-ordered after the copy, stores the
// request's number into `done` in device memory, which the kernel polls.
#pragma once

#include <cstdint>

namespace ccl {

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

}  // namespace ccl
