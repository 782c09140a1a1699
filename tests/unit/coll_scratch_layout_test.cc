// SPDX-License-Identifier: Apache-2.0
// The scratch layout table: parts aligned and disjoint, the zeroed ranges covering exactly the
// zeroed parts, and the kernels' pointers placed where the plan says, for many rank counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "collectives/host/scratch_layout.hpp"

namespace gicl::coll {
namespace {

bool symmetric(Place p) {
  return p == Place::kSymmetric || p == Place::kSymmetricZeroed;
}
bool zeroed(Place p) {
  return p == Place::kSymmetricZeroed || p == Place::kLocalZeroed;
}

TEST(ScratchLayout, PartsAreAlignedDisjointAndZeroedExactly) {
  for (int n : {1, 2, 3, 4, 8, 17, 64}) {
    for (size_t stage : {size_t{1} << 20, size_t{12345}, size_t{8} << 20})
      for (bool network : {false, true}) {
        const ScratchSizes z = scratch_sizes(n, stage, network);
        const ScratchPlan plan = plan_scratch(z);
        for (bool sym : {true, false}) {
          std::vector<ScratchPart> parts;
          for (const ScratchPart& p : plan.parts)
            if (symmetric(p.place) == sym) parts.push_back(p);
          std::sort(parts.begin(), parts.end(),
                    [](const ScratchPart& a, const ScratchPart& b) { return a.offset < b.offset; });
          const size_t total = sym ? plan.symmetric_bytes : plan.local_bytes;
          const size_t zfrom = sym ? plan.symmetric_zero_from : plan.local_zero_from;
          const size_t zto = sym ? plan.symmetric_zero_to : plan.local_zero_to;
          for (size_t i = 0; i < parts.size(); ++i) {
            const ScratchPart& p = parts[i];
            SCOPED_TRACE(std::string(p.name) + " n=" + std::to_string(n));
            // The outbox exists only where some rank is on the network path, as large as the inbox.
            if (std::string(p.name) == "outbox") {
              EXPECT_EQ(p.bytes, network ? n * kPipeChannels * kPipeSlots * z.slot : 0u);
            } else {
              EXPECT_GT(p.bytes, 0u);
            }
            EXPECT_EQ(p.offset % 256, 0u);
            EXPECT_LE(p.offset + p.bytes, total);
            if (i + 1 < parts.size()) {
              EXPECT_LE(p.offset + p.bytes, parts[i + 1].offset);
            }
            const bool inside = p.offset >= zfrom && p.offset + p.bytes <= zto;
            const bool outside = p.offset + p.bytes <= zfrom || p.offset >= zto;
            EXPECT_TRUE(zeroed(p.place) ? inside : outside);
          }
        }
      }
  }
}

TEST(ScratchLayout, PointersLandWhereThePlanSays) {
  const ScratchSizes z = scratch_sizes(4, 1 << 20, /*network=*/true);
  const ScratchPlan plan = plan_scratch(z);
  std::vector<char> sym(plan.symmetric_bytes), local(plan.local_bytes);
  CollScratch s{};
  place_scratch(z, plan, sym.data(), local.data(), &s);
  auto at = [&](const char* name) {
    for (const ScratchPart& p : plan.parts)
      if (std::string(p.name) == name)
        return (symmetric(p.place) ? sym.data() : local.data()) + p.offset;
    ADD_FAILURE() << "no part " << name;
    return static_cast<char*>(nullptr);
  };
  EXPECT_EQ(s.stage[0], at("stage"));
  EXPECT_EQ(s.stage[1], at("stage") + z.stage);
  EXPECT_EQ(reinterpret_cast<char*>(s.ready), at("ready"));
  EXPECT_EQ(reinterpret_cast<char*>(s.epoch), at("epoch"));
  EXPECT_EQ(s.ll128, at("ll128"));
  EXPECT_EQ(s.inbox, at("inbox"));
  EXPECT_EQ(s.outbox, at("outbox"));
  EXPECT_EQ(reinterpret_cast<char*>(s.arrived), at("arrived"));
  EXPECT_EQ(reinterpret_cast<char*>(s.p2p), at("p2p"));
  EXPECT_EQ(s.temp, at("temp"));
  EXPECT_EQ(s.stage_bytes, z.stage);
  EXPECT_EQ(s.slot_bytes, z.slot);
  EXPECT_EQ(s.ll128_row, z.ll128_row);
  // Every pointer the kernels read is set (regs is the launch's, set per launch).
  const void* pointers[] = {
      s.ready,         s.done,        s.pushed,      s.swapped,     s.epoch,
      s.finished,      s.inbox,       s.p2p_sizes,   s.head,        s.tail,
      s.seq,           s.temp,        s.ll,          s.ll128,       s.offers,
      s.offers_read,   s.zc_bytes,    s.p2p,         s.p2p_readers, s.p2p_ll,
      s.p2p_ll_credit, s.p2p_ll_done, s.p2p_ll_read, s.outbox,      s.arrived};
  for (const void* p : pointers) EXPECT_NE(p, nullptr);
  // The FIFO slots fill the staging budget, at least 4 KiB each.
  EXPECT_GE(z.slot, 4096u);
  EXPECT_EQ(z.slot % 256, 0u);
}

}  // namespace
}  // namespace gicl::coll
