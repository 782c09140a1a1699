// SPDX-License-Identifier: Apache-2.0
// The direct kernels' entry words (collectives/common/coll_args.h) on CPU: a rank's windows
// written word by word at an epoch come back whole, an entry counts as arrived only when every
// word carries that epoch (words of an older launch, a zeroed row, or a write still in flight do
// not), and no epoch a communicator can reach passes for another.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "collectives/common/coll_args.h"

namespace gicl::coll {
namespace {

std::vector<uint64_t> words_of(const Windows& w, uint64_t e) {
  std::vector<uint64_t> out(kReadyWords);
  for (int i = 0; i < kReadyWords; ++i) out[i] = ready_word(e, w, i);
  return out;
}

void expect_same(const Windows& a, const Windows& b) {
  EXPECT_EQ(a.src_off, b.src_off);
  EXPECT_EQ(a.src_ld, b.src_ld);
  EXPECT_EQ(a.dst_off, b.dst_off);
  EXPECT_EQ(a.dst_ld, b.dst_ld);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.swap_off, b.swap_off);
}

TEST(ReadyWords, WindowsRoundTripAtEveryEpoch) {
  std::mt19937_64 rng(7);
  const uint64_t max_epoch = (uint64_t{1} << 48) - 1;
  for (uint64_t e : {uint64_t{1}, uint64_t{2}, uint64_t{0xffff}, uint64_t{1} << 32,
                     (uint64_t{1} << 40) + 3, max_epoch}) {
    for (int k = 0; k < 200; ++k) {
      Windows w{rng(), rng(), kNoWindow, rng() >> 20, rng() >> (k % 64), k % 2 ? kNoWindow : 0};
      const std::vector<uint64_t> words = words_of(w, e);
      ASSERT_TRUE(ready_at(words.data(), e));
      expect_same(ready_windows(words.data()), w);
    }
  }
}

TEST(ReadyWords, OnlyTheEpochWrittenPasses) {
  const Windows w{0x123456789abcdef0ull, 17, kNoWindow, 0, 1000003, 42};
  for (uint64_t e : {uint64_t{3}, (uint64_t{1} << 32) + 5, (uint64_t{1} << 40) + 9}) {
    const std::vector<uint64_t> words = words_of(w, e);
    // The same row's earlier launches (parity: two back), a later one, and the 32-bit wrap an
    // LL flag would repeat at.
    for (uint64_t other :
         {e - 2, e + 2, e - 1, e + (uint64_t{1} << 32), e - 2 + (uint64_t{1} << 32)})
      EXPECT_FALSE(ready_at(words.data(), other)) << e << " read as " << other;
    const std::vector<uint64_t> zero(kReadyWords, 0);
    EXPECT_FALSE(ready_at(zero.data(), e));  // rows are zeroed at init; epochs start at 1
  }
}

TEST(ReadyWords, AnEntryHalfWrittenHasNotArrived) {
  // The peer's stores land in any order: every mix of this launch's words with the row's older
  // ones (two launches back) is refused until the last word lands, whichever it is.
  const Windows old_w{1, 2, 3, 4, 5, 6};
  const Windows new_w{0xfedcba9876543210ull, 8, 9, 10, 11, kNoWindow};
  const uint64_t e = 1001;
  const std::vector<uint64_t> before = words_of(old_w, e - 2), after = words_of(new_w, e);
  for (int missing = 0; missing < kReadyWords; ++missing) {
    std::vector<uint64_t> row = after;
    row[missing] = before[missing];
    EXPECT_FALSE(ready_at(row.data(), e)) << "word " << missing;
  }
  std::vector<uint64_t> row = before;
  for (int i = 0; i < kReadyWords; ++i) {
    EXPECT_FALSE(ready_at(row.data(), e));
    row[(i * 7) % kReadyWords] = after[(i * 7) % kReadyWords];  // 7 is prime to 24
  }
  ASSERT_TRUE(ready_at(row.data(), e));
  expect_same(ready_windows(row.data()), new_w);
}

}  // namespace
}  // namespace gicl::coll
