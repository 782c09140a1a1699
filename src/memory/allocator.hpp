// SPDX-License-Identifier: Apache-2.0
// First-fit allocator over the symmetric heap's offset space. Pure bookkeeping (no memory is
// touched), deterministic: every rank that makes the same calls gets the same offsets, which is
// what makes the heap symmetric.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace gicl {

class RangeAllocator {
 public:
  /// Adds [offset, offset + size) as free space. Regions added separately coalesce only when
  /// `mergeable` (a VMM heap is contiguous; legacy IPC segments are not).
  void add_region(uint64_t offset, uint64_t size, bool mergeable);
  /// First fit with `align` (a power of two). Returns false when nothing fits.
  bool allocate(uint64_t size, uint64_t align, uint64_t* offset);
  /// Frees a block returned by allocate(); false if `offset` is not an allocated block start.
  bool release(uint64_t offset, uint64_t* size = nullptr);
  /// Size of the allocated block at `offset` (0 if none).
  uint64_t block_size(uint64_t offset) const;
  /// The allocated block containing `offset`, if any.
  bool find_block(uint64_t offset, uint64_t* start, uint64_t* size) const;

  uint64_t free_bytes() const;
  uint64_t largest_free() const;
  size_t free_ranges() const { return free_.size(); }
  size_t allocated_blocks() const { return used_.size(); }
  /// End of the highest region added.
  uint64_t end() const { return end_; }

 private:
  struct Free {
    uint64_t size;
    uint64_t region;  // start of the region it belongs to (coalescing never crosses regions)
  };
  void insert_free(uint64_t offset, uint64_t size, uint64_t region);
  std::map<uint64_t, Free> free_;                // offset -> free range
  std::map<uint64_t, uint64_t> used_;            // offset -> size
  std::map<uint64_t, uint64_t> region_of_used_;  // offset -> region
  uint64_t end_ = 0;
  uint64_t last_region_ = 0;
  bool have_region_ = false;
};

}  // namespace gicl
