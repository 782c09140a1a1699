// What a collective kernel receives besides the device communicator: the communicator's
// collective scratch (symmetric staging, per-block flags) and its device-side epoch counter.
// Shared by the host planner and the kernels: fixed layout.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ccl::coll {

inline constexpr int kMaxBlocks = 32;

struct CollScratch {
  char* stage[2];      // symmetric staging, double-buffered by epoch parity (local view)
  size_t stage_bytes;  // bytes of each staging buffer
  uint64_t* ready;     // symmetric [kMaxBlocks][nranks]: epoch whose input rank j has staged
  uint64_t* done;      // symmetric [kMaxBlocks][nranks]: epoch whose staging rank j has read
  uint64_t* epoch;     // local device: last completed epoch of this communicator
  uint32_t* finished;  // local device: blocks of the running kernel that finished
  uint32_t pad;
  uint32_t pad2;
};

}  // namespace ccl::coll
