// SPDX-License-Identifier: Apache-2.0
// The staged path's staging area (proxy/staged_delivery.hpp): every part of it, the host FIFOs'
// slots and counters and the barrier arrivals' words included, lies inside bytes() and overlaps
// no other part; FIFO slots are 4 KiB aligned; geometries the immediate cannot name are refused
// naming them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "proxy/staged_delivery.hpp"

namespace gicl::proxy {
namespace {

using Range = std::pair<size_t, size_t>;  // [first, second)

/// Every part of the area as byte ranges, in no particular order.
std::vector<Range> parts(const StagingLayout& l) {
  std::vector<Range> v;
  for (uint32_t s = 0; s < l.send_slots; ++s)
    v.push_back({l.send_offset(s), l.send_offset(s) + l.chunk});
  for (int src = 0; src < l.nranks; ++src)
    for (uint32_t k = 0; k < l.recv_slots; ++k)
      v.push_back({l.recv_offset(src, k), l.recv_offset(src, k) + l.chunk});
  for (int r = 0; r < l.nranks; ++r) {
    v.push_back({l.scratch_offset(r), l.scratch_offset(r) + 8});
    v.push_back({l.arrivals_offset(r), l.arrivals_offset(r) + 8});
  }
  for (int p = 0; p < l.nranks; ++p) {
    for (uint32_t k = 0; k < l.fifo_slots(); ++k) {
      v.push_back({l.fifo_out_offset(p, k), l.fifo_out_offset(p, k) + l.fifo_slot});
      v.push_back({l.fifo_in_offset(p, k), l.fifo_in_offset(p, k) + l.fifo_slot});
      v.push_back({l.fifo_arrived_offset(p, k), l.fifo_arrived_offset(p, k) + 8});
    }
    for (uint32_t lane = 0; lane < l.fifo_lanes; ++lane)
      v.push_back({l.fifo_credit_offset(p, lane), l.fifo_credit_offset(p, lane) + 8});
  }
  return v;
}

TEST(StagingLayout, EveryPartIsInsideAndDisjointWithAlignedFifoSlots) {
  for (int n : {1, 2, 3, 8}) {
    for (uint32_t lanes : {0u, 1u, 16u}) {
      StagingLayout l;
      l.chunk = 8 << 10;
      l.send_slots = 4;
      l.recv_slots = 2;
      l.nranks = n;
      l.fifo_lanes = lanes;
      l.fifo_depth = lanes ? 4 : 0;
      l.fifo_slot = lanes ? 8192 : 0;
      SCOPED_TRACE("n=" + std::to_string(n) + " lanes=" + std::to_string(lanes));
      ASSERT_TRUE(l.check().ok());
      std::vector<Range> v = parts(l);
      std::sort(v.begin(), v.end());
      for (size_t i = 0; i < v.size(); ++i) {
        EXPECT_LE(v[i].second, l.bytes());
        if (i + 1 < v.size()) {
          EXPECT_LE(v[i].second, v[i + 1].first) << "part " << i;
        }
      }
      for (int p = 0; p < n && lanes; ++p) {
        EXPECT_EQ(l.fifo_out_offset(p, 0) % 4096, 0u);
        EXPECT_EQ(l.fifo_in_offset(p, 1) % 4096, 0u);
      }
      if (lanes == 0) {
        EXPECT_EQ(l.bytes(), (l.scratch_offset(n) + 4095) / 4096 * 4096 + 8 * size_t(n));
      }
    }
  }
}

TEST(StagingLayout, FifoGeometriesTheImmediateCannotNameAreRefused) {
  StagingLayout l;
  l.nranks = 2;
  l.fifo_lanes = 16;
  l.fifo_depth = 4;
  l.fifo_slot = 4096;
  EXPECT_TRUE(l.check().ok());
  l.fifo_slot = 6000;  // not a 4 KiB multiple
  EXPECT_EQ(l.check().code(), GICL_INVALID_ARGUMENT);
  l.fifo_slot = 4096;
  l.fifo_depth = 4096;  // 65536 slots per peer: beyond the immediate's 15 bits
  EXPECT_EQ(l.check().code(), GICL_INVALID_ARGUMENT);
  l.fifo_depth = 0;
  EXPECT_EQ(l.check().code(), GICL_INVALID_ARGUMENT);
  l.fifo_depth = 1;
  l.fifo_lanes = 255;
  EXPECT_TRUE(l.check().ok());
  l.fifo_lanes = 256;  // lane 255 is the barrier arrivals'
  EXPECT_EQ(l.check().code(), GICL_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace gicl::proxy
