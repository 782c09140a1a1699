// SPDX-License-Identifier: Apache-2.0
// Device-API logic that runs on the host: the comparisons (wrap-safe counters included) and the
// shared struct layouts. Compiled by nvcc (the header is CUDA), runs without a GPU.
#include <gtest/gtest.h>

#include <type_traits>

#include "gicl/device.cuh"

namespace {

using gicl::dev::Cmp;
using gicl::dev::compare;

TEST(DeviceLogic, Comparisons) {
  EXPECT_TRUE(compare<int32_t>(5, Cmp::kEq, 5));
  EXPECT_TRUE(compare<int32_t>(5, Cmp::kNe, 4));
  EXPECT_TRUE(compare<int32_t>(-1, Cmp::kLt, 0));
  EXPECT_FALSE(compare<uint32_t>(0xffffffffu, Cmp::kLt, 0u));
  EXPECT_TRUE(compare<int64_t>(7, Cmp::kGe, 7));
  EXPECT_FALSE(compare<int64_t>(7, Cmp::kGt, 7));
  EXPECT_TRUE(compare<uint64_t>(3, Cmp::kLe, 3));
}

TEST(DeviceLogic, AtLeastIsWrapSafe) {
  // A counter that wrapped past the target still counts as "at least".
  EXPECT_TRUE(compare<uint64_t>(2, Cmp::kAtLeast, ~0ull));
  EXPECT_FALSE(compare<uint64_t>(2, Cmp::kGe, ~0ull));
  EXPECT_FALSE(compare<uint64_t>(~0ull, Cmp::kAtLeast, 2));
  EXPECT_TRUE(compare<uint32_t>(1u, Cmp::kAtLeast, 0xfffffff0u));
  EXPECT_TRUE(compare<uint64_t>(10, Cmp::kAtLeast, 10));
  EXPECT_FALSE(compare<uint64_t>(9, Cmp::kAtLeast, 10));
  // Half the range ahead is the limit.
  EXPECT_TRUE(compare<uint32_t>(0x7fffffffu, Cmp::kAtLeast, 0u));
  EXPECT_FALSE(compare<uint32_t>(0x80000000u, Cmp::kAtLeast, 0u));
}

TEST(DeviceLogic, HandlesAreTriviallyCopyable) {
  static_assert(std::is_trivially_copyable_v<gicl::dev::DeviceComm>);
  static_assert(std::is_trivially_copyable_v<gicl::dev::DeviceTeam>);
  static_assert(std::is_trivially_copyable_v<gicl::dev::Qp>);
  EXPECT_EQ(sizeof(gicl_device_comm_t), 120u);
  EXPECT_EQ(offsetof(gicl_device_comm_t, heap_base), 16u);
}

}  // namespace
