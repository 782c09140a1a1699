// SPDX-License-Identifier: Apache-2.0
#include "memory/allocator.hpp"

namespace gicl {

void RangeAllocator::add_region(uint64_t offset, uint64_t size, bool mergeable) {
  if (size == 0) return;
  // A mergeable region that continues the previous one joins it, so blocks may span both.
  uint64_t region = offset;
  if (mergeable && have_region_ && offset == end_) region = last_region_;
  last_region_ = region;
  have_region_ = true;
  if (offset + size > end_) end_ = offset + size;
  insert_free(offset, size, region);
}

void RangeAllocator::insert_free(uint64_t offset, uint64_t size, uint64_t region) {
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->second.region == region && offset + size == next->first) {
    size += next->second.size;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->second.region == region && prev->first + prev->second.size == offset) {
      prev->second.size += size;
      return;
    }
  }
  free_.emplace(offset, Free{size, region});
}

bool RangeAllocator::allocate(uint64_t size, uint64_t align, uint64_t* offset) {
  if (size == 0 || align == 0 || (align & (align - 1)) != 0) return false;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const uint64_t start = it->first, len = it->second.size, region = it->second.region;
    const uint64_t aligned = (start + align - 1) & ~(align - 1);
    if (aligned < start || aligned - start > len || len - (aligned - start) < size) continue;
    free_.erase(it);
    if (aligned > start) free_.emplace(start, Free{aligned - start, region});
    const uint64_t tail = start + len - (aligned + size);
    if (tail > 0) free_.emplace(aligned + size, Free{tail, region});
    used_.emplace(aligned, size);
    region_of_used_.emplace(aligned, region);
    *offset = aligned;
    return true;
  }
  return false;
}

bool RangeAllocator::release(uint64_t offset, uint64_t* size) {
  auto it = used_.find(offset);
  if (it == used_.end()) return false;
  const uint64_t len = it->second;
  auto rit = region_of_used_.find(offset);
  const uint64_t region = rit->second;
  used_.erase(it);
  region_of_used_.erase(rit);
  insert_free(offset, len, region);
  if (size) *size = len;
  return true;
}

uint64_t RangeAllocator::block_size(uint64_t offset) const {
  auto it = used_.find(offset);
  return it == used_.end() ? 0 : it->second;
}

bool RangeAllocator::find_block(uint64_t offset, uint64_t* start, uint64_t* size) const {
  auto it = used_.upper_bound(offset);
  if (it == used_.begin()) return false;
  --it;
  if (offset >= it->first + it->second) return false;
  *start = it->first;
  *size = it->second;
  return true;
}

uint64_t RangeAllocator::free_bytes() const {
  uint64_t total = 0;
  for (auto& f : free_) total += f.second.size;
  return total;
}

uint64_t RangeAllocator::largest_free() const {
  uint64_t best = 0;
  for (auto& f : free_) best = f.second.size > best ? f.second.size : best;
  return best;
}

}  // namespace gicl
