// SPDX-License-Identifier: Apache-2.0
// A group's pairs with the rank itself as lists of copies (collectives/schedule/copy_lists.hpp):
// which copies share a kernel, and a model of the list kernel (collectives/direct/copy.cu) that
// runs its two loops, every thread of every block, with the kernel's own arithmetic
// (copy_list_layout, copy_list_word) over host buffers, checking every byte and the guard bytes
// around each destination.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/schedule/copy_lists.hpp"

namespace gicl::coll {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

CopySpec at(uintptr_t dst, uintptr_t src, size_t bytes) {
  return {dst, src, bytes};
}

TEST(CopyLists, SmallAlignedCopiesShareOneListInOrder) {
  std::vector<CopySpec> c;
  for (int i = 0; i < 40; ++i) c.push_back(at(0x100000 + 0x1000 * i, 0x900000 + 0x1000 * i, 8));
  const auto lists = copy_lists(c, 32 * kMiB);
  ASSERT_EQ(lists.size(), 1u);
  ASSERT_EQ(lists[0].size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(lists[0][i], i);
}

TEST(CopyLists, AListHoldsAtMostItsLimit) {
  std::vector<CopySpec> c;
  for (int i = 0; i < 2 * kMaxCopyList + 6; ++i) c.push_back(at(0x10000 * (i + 1), 0x10, 64));
  const auto lists = copy_lists(c, 32 * kMiB);
  ASSERT_EQ(lists.size(), 3u);
  EXPECT_EQ(lists[0].size(), static_cast<size_t>(kMaxCopyList));
  EXPECT_EQ(lists[1].size(), static_cast<size_t>(kMaxCopyList));
  EXPECT_EQ(lists[2].size(), 6u);
  EXPECT_EQ(lists[2].front(), 2 * kMaxCopyList);
}

TEST(CopyLists, ATotalReachingTheCutoffStartsANewList) {
  // 12 MiB each below 32: two fit (24), a third would make 36.
  std::vector<CopySpec> c;
  for (int i = 0; i < 5; ++i) c.push_back(at(0x10000000 * (i + 1), 0x100, 12 * kMiB));
  const auto lists = copy_lists(c, 32 * kMiB);
  ASSERT_EQ(lists.size(), 3u);
  EXPECT_EQ(lists[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(lists[1], (std::vector<int>{2, 3}));
  EXPECT_EQ(lists[2], (std::vector<int>{4}));
}

TEST(CopyLists, UnalignedLargeAndEmptyCopiesStandApart) {
  const std::vector<CopySpec> c = {
      at(0x1000, 0x2000, 100),        // 0: listable
      at(0x3001, 0x4000, 100),        // 1: destination not 16-byte aligned
      at(0x5000, 0x6008, 100),        // 2: source not 16-byte aligned
      at(0x7000, 0x8000, 32 * kMiB),  // 3: as large as the cutoff
      at(0x9000, 0x9000, 100),        // 4: its own buffer: nothing to move
      at(0xa000, 0xb000, 0),          // 5: empty
      at(0xc000, 0xd000, 17),         // 6: listable, joins 0
  };
  const auto lists = copy_lists(c, 32 * kMiB);
  ASSERT_EQ(lists.size(), 4u);
  EXPECT_EQ(lists[0], (std::vector<int>{0, 6}));
  EXPECT_EQ(lists[1], (std::vector<int>{1}));
  EXPECT_EQ(lists[2], (std::vector<int>{2}));
  EXPECT_EQ(lists[3], (std::vector<int>{3}));
}

TEST(CopyLists, RandomCopiesFallIntoListsOnceEach) {
  std::mt19937 rng(7);
  for (int round = 0; round < 500; ++round) {
    std::vector<CopySpec> c(1 + rng() % 200);
    for (CopySpec& x : c) {
      const size_t sizes[] = {0, 1, 15, 16, 4096, 100000, 3 * kMiB, 20 * kMiB, 40 * kMiB};
      x.bytes = sizes[rng() % 9];
      x.dst = 0x1000000 * (1 + rng() % 64) + 16 * (rng() % 4) + (rng() % 8 == 0 ? 4 : 0);
      x.src = rng() % 16 == 0 ? x.dst : 0x80000000 + 16 * (rng() % 4);
    }
    const size_t below = 32 * kMiB;
    const int most = 1 + static_cast<int>(rng() % kMaxCopyList);
    std::vector<int> seen(c.size(), 0);
    for (const auto& list : copy_lists(c, below, most)) {
      ASSERT_FALSE(list.empty());
      ASSERT_LE(list.size(), static_cast<size_t>(most));
      ASSERT_TRUE(std::is_sorted(list.begin(), list.end()));
      size_t total = 0;
      for (int i : list) {
        ++seen[i];
        total += c[i].bytes;
        if (list.size() > 1) {
          ASSERT_TRUE(copy_listable(c[i], below));
        }
      }
      if (list.size() > 1) {
        ASSERT_LT(total, below);
      }
    }
    for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(seen[i], copy_moves(c[i]) ? 1 : 0) << i;
  }
}

/// The list kernel's two loops over `grid` blocks of `threads` threads: the words, then the tails.
void run_list_kernel(const std::vector<CopySpec>& list, int grid, int threads) {
  const int n = static_cast<int>(list.size());
  size_t end[kMaxCopyList];
  uint8_t tail[kMaxCopyList];
  copy_list_layout(list.data(), n, end, tail);
  const size_t words = end[n - 1];
  const size_t stride = static_cast<size_t>(grid) * threads;
  for (int b = 0; b < grid; ++b)
    for (int t = 0; t < threads; ++t) {
      int c = 0;
      for (size_t i = static_cast<size_t>(b) * threads + t; i < words; i += stride) {
        const size_t j = copy_list_word(end, &c, i);
        std::memcpy(reinterpret_cast<char*>(list[c].dst) + 16 * j,
                    reinterpret_cast<const char*>(list[c].src) + 16 * j, 16);
      }
    }
  for (int b = 0; b < grid; ++b)
    for (int t = 0; t < threads; ++t)
      for (int k = b; k < n; k += grid)
        if (t < tail[k]) {
          const size_t w = end[k] - copy_list_begin(end, k);
          reinterpret_cast<char*>(list[k].dst)[16 * w + t] =
              reinterpret_cast<const char*>(list[k].src)[16 * w + t];
        }
}

TEST(CopyLists, TheKernelsLoopsCopyEveryByteAndNoOther) {
  std::mt19937 rng(11);
  constexpr size_t kGuard = 32;
  for (int round = 0; round < 300; ++round) {
    const int n = 1 + static_cast<int>(rng() % kMaxCopyList);
    std::vector<size_t> bytes(n);
    size_t total = 0;
    for (size_t& b : bytes) {
      const size_t pick[] = {1, 7, 15, 16, 17, 31, 48, 100, 1000, 4099, 16384};
      b = pick[rng() % 11];
      total += b + 2 * kGuard + 16;
    }
    // Destinations with guard bytes between them, 16-byte aligned as lists require.
    std::vector<uint8_t> src(total + 16), dst(total + 16, 0xee);
    const uintptr_t src0 = (reinterpret_cast<uintptr_t>(src.data()) + 15) & ~uintptr_t{15};
    const uintptr_t dst0 = (reinterpret_cast<uintptr_t>(dst.data()) + 15) & ~uintptr_t{15};
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + round);
    std::vector<CopySpec> list;
    size_t off = kGuard;
    for (size_t b : bytes) {
      list.push_back({dst0 + off, src0 + off, b});
      off = (off + b + kGuard + 15) & ~size_t{15};
    }
    // At least 16 threads a block, as the kernel's 512: one thread a tail byte.
    const int grid = 1 + static_cast<int>(rng() % 9), threads = 16 + static_cast<int>(rng() % 40);
    run_list_kernel(list, grid, threads);
    std::vector<bool> inside(dst.size(), false);
    for (const CopySpec& c : list)
      for (size_t j = 0; j < c.bytes; ++j) {
        const auto* d = reinterpret_cast<const uint8_t*>(c.dst) + j;
        ASSERT_EQ(*d, *(reinterpret_cast<const uint8_t*>(c.src) + j))
            << "round " << round << ", byte " << j << " of " << c.bytes;
        inside[static_cast<size_t>(d - dst.data())] = true;
      }
    for (size_t i = 0; i < dst.size(); ++i)
      if (!inside[i]) {
        ASSERT_EQ(dst[i], 0xee) << "round " << round << ": byte " << i << " written";
      }
  }
}

// Words and tail of one odd length: 21 bytes are one word and 5 tail bytes, and byte 21 stays.
TEST(CopyLists, AnOddLengthIsWordsThenItsTail) {
  alignas(16) uint8_t src[64], dst[64];
  for (int i = 0; i < 64; ++i) src[i] = static_cast<uint8_t>(i + 1), dst[i] = 0;
  const std::vector<CopySpec> list = {
      {reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), 21}};
  size_t end[1];
  uint8_t tail[1];
  copy_list_layout(list.data(), 1, end, tail);
  EXPECT_EQ(end[0], 1u);
  EXPECT_EQ(tail[0], 5u);
  run_list_kernel(list, 1, 16);
  EXPECT_EQ(std::memcmp(dst, src, 21), 0);
  EXPECT_EQ(dst[21], 0);
}

}  // namespace
}  // namespace gicl::coll
