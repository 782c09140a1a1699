// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "memory/allocator.hpp"

namespace gicl {
namespace {

TEST(RangeAllocator, FirstFitAndAlignment) {
  RangeAllocator a;
  a.add_region(0, 1 << 20, true);
  uint64_t o1, o2, o3;
  ASSERT_TRUE(a.allocate(100, 512, &o1));
  ASSERT_TRUE(a.allocate(100, 512, &o2));
  EXPECT_EQ(o1, 0u);
  EXPECT_EQ(o2, 512u);  // aligned past the first block
  ASSERT_TRUE(a.release(o1));
  ASSERT_TRUE(a.allocate(64, 64, &o3));
  EXPECT_EQ(o3, 0u);  // first fit reuses the hole
  EXPECT_FALSE(a.allocate(2 << 20, 512, &o3));
  EXPECT_FALSE(a.allocate(0, 512, &o3));
  EXPECT_FALSE(a.allocate(64, 48, &o3));  // not a power of two
  EXPECT_FALSE(a.release(12345));
}

TEST(RangeAllocator, CoalescesBackToOneRange) {
  RangeAllocator a;
  a.add_region(0, 1 << 20, true);
  std::vector<uint64_t> offs;
  for (int i = 0; i < 16; ++i) {
    uint64_t o;
    ASSERT_TRUE(a.allocate(4096, 4096, &o));
    offs.push_back(o);
  }
  // Free in an interleaved order: odd blocks, then even ones.
  for (size_t i = 1; i < offs.size(); i += 2) ASSERT_TRUE(a.release(offs[i]));
  for (size_t i = 0; i < offs.size(); i += 2) ASSERT_TRUE(a.release(offs[i]));
  EXPECT_EQ(a.free_ranges(), 1u);
  EXPECT_EQ(a.largest_free(), 1u << 20);
}

TEST(RangeAllocator, MergeableRegionsJoinButSeparateOnesDoNot) {
  RangeAllocator vmm;
  vmm.add_region(0, 4096, true);
  vmm.add_region(4096, 4096, true);
  uint64_t o;
  EXPECT_TRUE(vmm.allocate(8192, 512, &o));  // spans both: one contiguous virtual range

  RangeAllocator legacy;
  legacy.add_region(0, 4096, false);
  legacy.add_region(4096, 4096, false);
  EXPECT_FALSE(legacy.allocate(8192, 512, &o));  // separate cudaMallocs never join
  EXPECT_EQ(legacy.free_ranges(), 2u);
}

// Property test: random alloc/free sequences against a reference map of live blocks.
TEST(RangeAllocator, RandomSequencesNeverOverlapAndKeepAccounting) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    RangeAllocator a;
    const uint64_t total = 64ull << 20;
    const bool mergeable = seed % 2 == 0;
    a.add_region(0, total / 2, mergeable);
    a.add_region(total / 2, total / 2, mergeable);
    std::map<uint64_t, uint64_t> live;
    uint64_t live_bytes = 0;
    for (int step = 0; step < 4000; ++step) {
      if (live.empty() || rng() % 3 != 0) {
        const uint64_t size = 1 + rng() % (1 << 20);
        const uint64_t align = 1ull << (rng() % 13);
        uint64_t o;
        if (!a.allocate(size, align, &o)) continue;
        ASSERT_EQ(o % align, 0u) << "seed " << seed;
        ASSERT_LE(o + size, total);
        auto next = live.lower_bound(o);
        if (next != live.end()) {
          ASSERT_LE(o + size, next->first) << "overlap, seed " << seed;
        }
        if (next != live.begin()) {
          auto prev = std::prev(next);
          ASSERT_LE(prev->first + prev->second, o) << "overlap, seed " << seed;
        }
        if (!mergeable) {
          ASSERT_TRUE(o + size <= total / 2 || o >= total / 2) << "crossed regions";
        }
        live[o] = size;
        live_bytes += size;
        ASSERT_EQ(a.block_size(o), size);
      } else {
        auto it = live.begin();
        std::advance(it, rng() % live.size());
        uint64_t size = 0;
        ASSERT_TRUE(a.release(it->first, &size));
        ASSERT_EQ(size, it->second);
        live_bytes -= size;
        live.erase(it);
      }
      ASSERT_EQ(a.allocated_blocks(), live.size());
      ASSERT_EQ(a.free_bytes() + live_bytes, total);
    }
    for (auto& [o, s] : live) ASSERT_TRUE(a.release(o));
    EXPECT_EQ(a.free_ranges(), mergeable ? 1u : 2u) << "seed " << seed;
    EXPECT_EQ(a.free_bytes(), total);
  }
}

TEST(RangeAllocator, FindBlockLocatesInteriorAddresses) {
  RangeAllocator a;
  a.add_region(0, 1 << 20, true);
  uint64_t o;
  ASSERT_TRUE(a.allocate(1000, 512, &o));
  uint64_t start = 0, size = 0;
  ASSERT_TRUE(a.find_block(o + 999, &start, &size));
  EXPECT_EQ(start, o);
  EXPECT_EQ(size, 1000u);
  EXPECT_FALSE(a.find_block(o + 1000, &start, &size));
}

}  // namespace
}  // namespace gicl
