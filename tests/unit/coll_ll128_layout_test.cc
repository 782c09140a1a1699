// SPDX-License-Identifier: Apache-2.0
// The LL128 line layout (collectives/schedule/ll128.hpp) on CPU: a rank block written lane by
// lane as the kernel's warps write it, then read back line by line as receivers read it, must
// give every byte back, with each line's flag in its last 8 bytes and the row inside its bound.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
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

// The roles, run on CPU: each rank stores what its role sends into its peers' rows, then makes
// of its rows what its role receives. The outcome must be each collective's result (integer sum,
// so any order is exact), for every rank count and root.
TEST(LL128Roles, EveryCollectiveComputesItsResult) {
  const size_t b = 3;  // elements of a rank block
  for (int n = 1; n <= 5; ++n)
    for (int root = 0; root < n; ++root)
      for (int ci = 0; ci < kNumCollectives; ++ci) {
        const auto k = static_cast<Collective>(ci);
        SCOPED_TRACE(std::string(collective_name(k)) + " n=" + std::to_string(n) +
                     " root=" + std::to_string(root));
        const size_t in_len = send_splits(k) ? b * n : b, out_len = recv_splits(k) ? b * n : b;
        std::vector<std::vector<long>> in(n, std::vector<long>(in_len)), out(n);
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < in_len; ++i) in[r][i] = 1000 * r + static_cast<long>(i) + 1;
        // rows[to][from]: the rank block `from` stored into `to`'s row.
        std::vector<std::vector<std::vector<long>>> rows(n, std::vector<std::vector<long>>(n));
        auto part = [&](int r, int j) {
          const LL128Role role = ll128_role(k, r, root);
          const size_t at = role.blocked_src ? b * j : 0;
          return std::vector<long>(in[r].begin() + at, in[r].begin() + at + b);
        };
        for (int r = 0; r < n; ++r) {
          const LL128Role role = ll128_role(k, r, root);
          if (!role.sends) continue;
          for (int j = 0; j < n; ++j)
            if (j != r && (role.only_peer < 0 || role.only_peer == j)) rows[j][r] = part(r, j);
        }
        for (int r = 0; r < n; ++r) {
          const LL128Role role = ll128_role(k, r, root);
          auto from = [&](int q) { return q == r ? part(r, r) : rows[r][q]; };
          out[r].assign(out_len, -1);
          switch (role.receive) {
            case LL128Receive::kNone:
              break;
            case LL128Receive::kReduce:
              for (size_t i = 0; i < b; ++i) {
                out[r][i] = 0;
                for (int q = 0; q < n; ++q) {
                  ASSERT_EQ(from(q).size(), b) << "rank " << r << " has nothing from " << q;
                  out[r][i] += from(q)[i];
                }
              }
              break;
            case LL128Receive::kGather:
              for (int q = 0; q < n; ++q) {
                ASSERT_EQ(from(q).size(), b) << "rank " << r << " has nothing from " << q;
                for (size_t i = 0; i < b; ++i) out[r][q * b + i] = from(q)[i];
              }
              break;
            case LL128Receive::kFromRoot:
              ASSERT_EQ(rows[r][root].size(), b);
              for (size_t i = 0; i < b; ++i) out[r][i] = rows[r][root][i];
              break;
            case LL128Receive::kCopyOwn:
              for (size_t i = 0; i < b; ++i) out[r][i] = in[r][i];
              break;
          }
        }
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < out_len; ++i) {
            long want = -1;
            const size_t blk = i / b, e = i % b;
            switch (k) {
              case Collective::kAllReduce:
                want = 0;
                for (int q = 0; q < n; ++q) want += in[q][i];
                break;
              case Collective::kReduceScatter:
                want = 0;
                for (int q = 0; q < n; ++q) want += in[q][b * r + i];
                break;
              case Collective::kReduce:
                if (r == root) {
                  want = 0;
                  for (int q = 0; q < n; ++q) want += in[q][i];
                }
                break;
              case Collective::kAllGather:
                want = in[blk][e];
                break;
              case Collective::kAllToAll:
                want = in[blk][b * r + e];
                break;
              case Collective::kBroadcast:
                want = in[root][i];
                break;
            }
            EXPECT_EQ(out[r][i], want) << "rank " << r << " element " << i;
          }
      }
}

}  // namespace
}  // namespace gicl::coll
