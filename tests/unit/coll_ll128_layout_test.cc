// SPDX-License-Identifier: Apache-2.0
// The LL128 line layout (collectives/schedule/ll128.hpp) on CPU: a rank block written lane by
// lane as the kernel's warps write it, then read back line by line as receivers read it, must
// give every byte back, with each line's flag in its last 8 bytes and the row inside its bound.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "collectives/common/coll_args.h"
#include "collectives/schedule/ll128.hpp"

namespace gicl::coll {
namespace {

uint64_t unit_of(const std::vector<uint8_t>& b, size_t u) {
  uint64_t v = 0;
  for (size_t k = 0; k < 8 && u * 8 + k < b.size(); ++k)
    v |= static_cast<uint64_t>(b[u * 8 + k]) << (8 * k);
  return v;
}

TEST(LL128Layout, RoundTripsEveryByteWithOneFlagPerLine) {
  const uint64_t flag = 0x1234567890abcdefull;
  for (size_t bytes : {size_t{1}, size_t{7}, size_t{8}, size_t{119}, size_t{120}, size_t{121},
                       size_t{480}, size_t{481}, size_t{4096}, size_t{100003}, ll128_capacity(8)}) {
    std::vector<uint8_t> in(bytes);
    for (size_t i = 0; i < bytes; ++i) in[i] = static_cast<uint8_t>(i * 31 + 7);
    const size_t lines = ll128_lines(bytes), groups = ll128_groups(bytes);
    ASSERT_GE(lines * kLL128LineUnits * 8, bytes);
    ASSERT_LT((lines - 1) * kLL128LineUnits * 8, bytes);
    std::vector<uint64_t> row(groups * kLL128LinesPerWarp * kLL128LineBytes / 8, 0);
    std::vector<int> written(row.size(), 0);
    // Senders: every lane of every group's warp.
    for (size_t g = 0; g < groups; ++g)
      for (int lane = 0; lane < 32; ++lane) {
        const LL128Slot s = ll128_slot(g, lane);
        if (s.line >= lines) continue;
        ASSERT_EQ(s.row_off % 16, 0u);
        ASSERT_EQ(s.row_off / kLL128LineBytes, s.line);
        const size_t w = s.row_off / 8;
        row[w] = unit_of(in, s.unit);
        row[w + 1] = s.flag_lane ? flag : unit_of(in, s.unit + 1);
        ++written[w];
        ++written[w + 1];
        // The flag word is the line's last: a receiver checks one place per line.
        if (s.flag_lane) {
          EXPECT_EQ(s.row_off + 8, (s.line + 1) * kLL128LineBytes - 8);
        }
      }
    for (size_t w = 0; w < lines * kLL128LineBytes / 8; ++w)
      ASSERT_EQ(written[w], 1) << bytes << " bytes: word " << w << " of the row";
    // Receivers: each line's flag, then its 15 data words in order.
    std::vector<uint8_t> out(lines * kLL128LineUnits * 8, 0);
    for (size_t l = 0; l < lines; ++l) {
      ASSERT_EQ(row[l * 16 + 15], flag) << "line " << l;
      std::memcpy(out.data() + l * kLL128LineUnits * 8, &row[l * 16], kLL128LineUnits * 8);
    }
    out.resize(bytes);
    EXPECT_EQ(out, in) << bytes << " bytes";
  }
}

TEST(LL128Layout, CapacityFitsTheRow) {
  for (int n : {1, 2, 3, 8, 64, 1000}) {
    const size_t cap = ll128_capacity(n), row = ll128_row_bytes(n);
    EXPECT_LE(ll128_lines(cap) * kLL128LineBytes, row) << n;
    EXPECT_GT(ll128_lines(cap + 8) * kLL128LineBytes, row) << n;  // nothing wasted
    EXPECT_EQ(row % 4096, 0u);
  }
}

}  // namespace
}  // namespace gicl::coll
