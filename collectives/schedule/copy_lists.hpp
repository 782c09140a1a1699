// SPDX-License-Identifier: Apache-2.0
// Which of a group's local copies (send/recv pairs with the rank itself) share one kernel
// (collectives/host/local_copy.cc), shared with tests/unit/coll_copy_lists_test.cc. One launch a
// pair cost 0.5-0.6 x NCCL's time for 40 small pairs a group, which NCCL copies in one kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/schedule/step.hpp"

namespace gicl::coll {

/// The most copies one list kernel takes: its parameters hold them all (24 bytes a copy).
inline constexpr int kMaxCopyList = 64;

struct CopySpec {
  uintptr_t dst, src;
  size_t bytes;
};

/// Whether a copy does anything: a pair whose receive is its send's own buffer moves nothing.
inline bool copy_moves(const CopySpec& c) {
  return c.bytes != 0 && c.dst != c.src;
}

/// Whether both ends are 16-byte aligned: the copy kernels move 16-byte words.
inline bool copy_aligned(const CopySpec& c) {
  return ((c.dst | c.src) % 16) == 0;
}

/// Whether a copy can join a list: aligned and smaller than `below`, the size from which a copy
/// engine is as fast alone.
inline bool copy_listable(const CopySpec& c, size_t below) {
  return copy_moves(c) && copy_aligned(c) && c.bytes < below;
}

/// The copies as lists, in order: listable copies join the current list while it holds fewer
/// than `most` and its total stays below `below` (a larger total is a copy engine's work again);
/// every other copy that moves anything is a list of its own. Lists of one are copied alone
/// (local_copy's own rule); copies that move nothing are in no list.
inline std::vector<std::vector<int>> copy_lists(const std::vector<CopySpec>& copies, size_t below,
                                                int most = kMaxCopyList) {
  std::vector<std::vector<int>> lists;
  int open = -1;  // the list listable copies join
  size_t total = 0;
  for (size_t i = 0; i < copies.size(); ++i) {
    const CopySpec& c = copies[i];
    if (!copy_moves(c)) continue;
    if (!copy_listable(c, below)) {
      lists.push_back({static_cast<int>(i)});
      continue;
    }
    const bool join =
        open >= 0 && lists[open].size() < static_cast<size_t>(most) && total + c.bytes < below;
    if (!join) {
      open = static_cast<int>(lists.size());
      lists.emplace_back();
      total = 0;
    }
    lists[open].push_back(static_cast<int>(i));
    total += c.bytes;
  }
  return lists;
}

/// The list kernel's view of `n` copies: end[c] as copy_list_word reads it, and tail[c] the bytes
/// after copy c's words (a length not a multiple of 16), which one thread each copies.
inline void copy_list_layout(const CopySpec* copies, int n, size_t* end, uint8_t* tail) {
  size_t words = 0;
  for (int c = 0; c < n; ++c) {
    words += copies[c].bytes / 16;
    end[c] = words;
    tail[c] = static_cast<uint8_t>(copies[c].bytes % 16);
  }
}

/// The list kernel sees its copies as one range of 16-byte words, copy c holding words
/// [copy_list_begin(end, c), end[c]).
GICL_HD size_t copy_list_begin(const size_t* end, int c) {
  return c == 0 ? 0 : end[c - 1];
}

/// Where word i lies: advances *c to the copy holding it (a thread's words only grow, so its copy
/// only moves forward) and returns the word's place there.
GICL_HD size_t copy_list_word(const size_t* end, int* c, size_t i) {
  while (i >= end[*c]) ++*c;
  return i - copy_list_begin(end, *c);
}

}  // namespace gicl::coll
