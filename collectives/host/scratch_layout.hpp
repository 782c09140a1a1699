// SPDX-License-Identifier: Apache-2.0
// The layout of a communicator's collective scratch, written once: each part of CollScratch
// (coll_args.h) with its element type, its element count and where it lives. From the one table
// come both the allocation's size and offsets (plan_scratch) and the kernels' pointers
// (place_scratch), so the two cannot drift apart.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/common/coll_args.h"

namespace gicl::coll {

/// What the parts' sizes depend on.
struct ScratchSizes {
  size_t nranks = 1;
  size_t stage = 0;           // bytes of each of the two staging buffers (GICL_COLL_SCRATCH_SIZE)
  size_t slot = 0;            // bytes of one pipe FIFO slot
  size_t ll_entries = 0;      // entries of one LL row
  size_t ll128_row = 0;       // bytes of one LL128 row
  size_t p2p_ll_entries = 0;  // entries of one point-to-point LL row
  bool network = false;       // some rank is on the network path: the pipe FIFOs' outbox exists
};
/// The sizes for `nranks` ranks and a staging of `stage_setting` bytes (rounded up to 4 KiB);
/// `network`: some rank is reached through the network proxy.
ScratchSizes scratch_sizes(int nranks, size_t stage_setting, bool network = false);

/// Where a part lives. Symmetric parts are in the heap (peers write them); local ones are this
/// rank's device memory. Zeroed parts hold flags, counters or sequence numbers that start at 0,
/// which no epoch or sequence number ever is.
enum class Place : uint8_t { kSymmetric, kSymmetricZeroed, kLocal, kLocalZeroed };

// X(CollScratch member, element type, element count (of sizes `z`), place), in layout order:
// each place's zeroed parts sit together, so that one range clears them.
#define GICL_SCRATCH_PARTS(X)                                                                     \
  X(stage, char, 2 * z.stage, Place::kSymmetric)                                                  \
  X(ready, Ready, 2 * kMaxBlocks * z.nranks, Place::kSymmetricZeroed)                             \
  X(done, uint64_t, kMaxBlocks* z.nranks, Place::kSymmetricZeroed)                                \
  X(pushed, uint64_t, kMaxBlocks* z.nranks, Place::kSymmetricZeroed)                              \
  X(swapped, uint64_t, kMaxBlocks* z.nranks, Place::kSymmetricZeroed)                             \
  X(epoch, uint64_t, z.nranks, Place::kSymmetricZeroed)                                           \
  X(head, uint64_t, z.nranks* kPipeChannels, Place::kSymmetricZeroed)                             \
  X(tail, uint64_t, z.nranks* kPipeChannels, Place::kSymmetricZeroed)                             \
  X(offers, P2pOffer, z.nranks* kMaxP2pOps, Place::kSymmetricZeroed)                              \
  X(offers_read, uint64_t, z.nranks, Place::kSymmetricZeroed)                                     \
  X(zc_bytes, uint64_t, z.nranks, Place::kSymmetricZeroed)                                        \
  X(ll, uint64_t, 2 * z.nranks * z.ll_entries, Place::kSymmetricZeroed)                           \
  X(ll128, char, 2 * z.nranks * z.ll128_row, Place::kSymmetricZeroed)                             \
  X(p2p_ll, uint64_t, kP2pLLSlots* z.nranks* z.p2p_ll_entries, Place::kSymmetricZeroed)           \
  X(p2p_ll_credit, uint64_t, kP2pLLSlots* z.nranks, Place::kSymmetricZeroed)                      \
  X(p2p_sizes, uint64_t, z.nranks* kPipeChannels* kPipeSlots, Place::kSymmetricZeroed)            \
  X(arrived, uint64_t, z.nranks* kPipeChannels* kPipeSlots, Place::kSymmetricZeroed)              \
  X(inbox, char, z.nranks* kPipeChannels* kPipeSlots* z.slot, Place::kSymmetric)                  \
  X(outbox, char, z.network ? z.nranks* kPipeChannels* kPipeSlots* z.slot : 0, Place::kSymmetric) \
  X(finished, uint32_t, 1, Place::kLocalZeroed)                                                   \
  X(p2p_readers, uint32_t, kMaxP2pOps, Place::kLocalZeroed)                                       \
  X(p2p_ll_done, uint32_t, 1, Place::kLocalZeroed)                                                \
  X(p2p_ll_read, uint32_t, kMaxP2pOps, Place::kLocalZeroed)                                       \
  X(seq, uint64_t, z.nranks* kPipeChannels * 2, Place::kLocalZeroed)                              \
  X(p2p, P2pCounts, z.nranks, Place::kLocalZeroed)                                                \
  X(temp, char, z.stage, Place::kLocal)

/// One part as laid out: byte offset in its allocation (symmetric or local) and size.
struct ScratchPart {
  const char* name;
  Place place;
  size_t offset;
  size_t bytes;
};

/// The two allocations: every part's offset (256-byte aligned) and size, each allocation's size,
/// and the byte range of each that must be zeroed.
struct ScratchPlan {
  static constexpr int kParts = 0
#define GICL_SCRATCH_COUNT(member, type, count, place) +1
      GICL_SCRATCH_PARTS(GICL_SCRATCH_COUNT)
#undef GICL_SCRATCH_COUNT
      ;
  ScratchPart parts[kParts];
  size_t symmetric_bytes = 0, local_bytes = 0;
  size_t symmetric_zero_from = 0, symmetric_zero_to = 0;
  size_t local_zero_from = 0, local_zero_to = 0;
};

ScratchPlan plan_scratch(const ScratchSizes& z);
/// Fills every part's pointer of `s` (and the sizes it carries) for allocations at `symmetric`
/// and `local` laid out as `plan`.
void place_scratch(const ScratchSizes& z, const ScratchPlan& plan, char* symmetric, char* local,
                   CollScratch* s);

}  // namespace gicl::coll
