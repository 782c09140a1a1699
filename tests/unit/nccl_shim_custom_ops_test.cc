// SPDX-License-Identifier: Apache-2.0
// A communicator's PreMulSum reductions (shim/nccl/custom_ops): numbered from ncclNumOps, unique
// while live, a destroyed number reused, the scalar kept as NCCL keeps it (a host immediate's
// bytes at creation, a device scalar's address), bad arguments refused naming what was wrong.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "shim/nccl/custom_ops.hpp"

namespace gicl::nccl {
namespace {

TEST(NcclCustomOps, NumbersStartAtNumOpsAndAreReusedOnceDestroyed) {
  CustomOps ops;
  std::string why;
  double two = 2.0;
  ncclRedOp_t a, b, c;
  ASSERT_TRUE(ops.create(ncclFloat64, kScalarHostImmediate, &two, &a, &why)) << why;
  ASSERT_TRUE(ops.create(ncclFloat64, kScalarHostImmediate, &two, &b, &why)) << why;
  EXPECT_EQ(a, ncclNumOps);
  EXPECT_EQ(b, ncclNumOps + 1);
  EXPECT_TRUE(ops.destroy(a));
  EXPECT_FALSE(ops.destroy(a));
  PreMulSum p;
  EXPECT_FALSE(ops.find(a, &p));
  EXPECT_TRUE(ops.find(b, &p));
  ASSERT_TRUE(ops.create(ncclFloat64, kScalarHostImmediate, &two, &c, &why)) << why;
  EXPECT_EQ(c, ncclNumOps);
  EXPECT_FALSE(ops.find(ncclSum, &p));
  EXPECT_FALSE(ops.destroy(static_cast<ncclRedOp_t>(ncclNumOps + 7)));
}

TEST(NcclCustomOps, AHostScalarIsCopiedAtCreationADeviceOneByAddress) {
  CustomOps ops;
  std::string why;
  uint16_t half_two = 0x4000;  // 2.0 as IEEE half
  int8_t three = 3;
  float on_device = 0;  // stands for device memory: only its address is kept
  ncclRedOp_t h, i, d;
  ASSERT_TRUE(ops.create(ncclFloat16, kScalarHostImmediate, &half_two, &h, &why)) << why;
  ASSERT_TRUE(ops.create(ncclInt8, kScalarHostImmediate, &three, &i, &why)) << why;
  ASSERT_TRUE(ops.create(ncclFloat32, kScalarDevice, &on_device, &d, &why)) << why;
  half_two = 0;  // the caller's variable changes afterwards
  PreMulSum p;
  ASSERT_TRUE(ops.find(h, &p));
  EXPECT_EQ(p.type, ncclFloat16);
  EXPECT_EQ(p.host_bits, 0x4000u);  // two bytes copied, the rest zero
  EXPECT_EQ(p.device_scalar, nullptr);
  ASSERT_TRUE(ops.find(i, &p));
  EXPECT_EQ(p.host_bits, 3u);
  ASSERT_TRUE(ops.find(d, &p));
  EXPECT_EQ(p.device_scalar, &on_device);
}

TEST(NcclCustomOps, BadArgumentsAreNamed) {
  CustomOps ops;
  std::string why;
  float s = 1;
  ncclRedOp_t op;
  EXPECT_FALSE(ops.create(ncclFloat32, 2, &s, &op, &why));
  EXPECT_NE(why.find("residence 2"), std::string::npos) << why;
  EXPECT_FALSE(ops.create(static_cast<ncclDataType_t>(12), kScalarDevice, &s, &op, &why));
  EXPECT_NE(why.find("datatype 12"), std::string::npos) << why;
  EXPECT_FALSE(ops.create(ncclFloat32, kScalarDevice, nullptr, &op, &why));
  EXPECT_NE(why.find("scalar is NULL"), std::string::npos) << why;
  EXPECT_FALSE(ops.create(ncclFloat32, kScalarDevice, &s, nullptr, &why));
  EXPECT_NE(why.find("op is NULL"), std::string::npos) << why;
}

}  // namespace
}  // namespace gicl::nccl
