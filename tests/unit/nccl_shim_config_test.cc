// SPDX-License-Identifier: Apache-2.0
// NCCL's C ABI as the drop-in library reads it: an ncclConfig_t from the headers of NCCL 2.27
// (72 bytes), 2.28 (80), 2.29 (88) and 2.30 (96) is read as far as the caller's struct reaches,
// unset fields take NCCL's defaults, a struct that is not initialized (size, magic) or holds a
// value out of range is refused naming the field; results, types and reductions map to gicl's
// numbers and back.
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <vector>

#include "shim/nccl/config.hpp"
#include "shim/nccl/mapping.hpp"

namespace gicl::nccl {
namespace {

/// What NCCL_CONFIG_INITIALIZER gives, for a header whose struct is `bytes` long: the known
/// fields, then the newer headers' fields (ints, left unset) up to `bytes`.
std::vector<char> initialized(size_t bytes) {
  std::vector<char> raw(bytes, 0);
  ncclConfig_t c;
  c.size = bytes;
  c.magic = NCCL_API_MAGIC;
  c.version = 22809;
  c.blocking = c.cgaClusterSize = c.minCTAs = c.maxCTAs = NCCL_CONFIG_UNDEF_INT;
  c.netName = nullptr;
  c.splitShare = c.trafficClass = NCCL_CONFIG_UNDEF_INT;
  c.commName = nullptr;
  c.collnetEnable = c.CTAPolicy = c.shrinkShare = c.nvlsCTAs = NCCL_CONFIG_UNDEF_INT;
  c.nChannelsPerNetPeer = c.nvlinkCentricSched = NCCL_CONFIG_UNDEF_INT;
  std::memcpy(raw.data(), &c, bytes < sizeof(c) ? bytes : sizeof(c));
  for (size_t at = sizeof(c); at + 4 <= bytes; at += 4) {
    const int undef = INT_MIN;
    std::memcpy(raw.data() + at, &undef, 4);
  }
  return raw;
}

ncclConfig_t* as_config(std::vector<char>& raw) {
  return reinterpret_cast<ncclConfig_t*>(raw.data());
}

TEST(NcclShimConfig, EveryHeaderSizeFrom227To230IsReadWithItsDefaults) {
  for (size_t bytes : {size_t{72}, size_t{80}, size_t{88}, size_t{96}}) {
    auto raw = initialized(bytes);
    CommConfig out;
    std::string why;
    ASSERT_EQ(read_config(as_config(raw), &out, &why), ncclSuccess) << bytes << ": " << why;
    EXPECT_TRUE(out.blocking);
    EXPECT_EQ(out.min_ctas, 0);
    EXPECT_EQ(out.max_ctas, 0);
    EXPECT_TRUE(out.comm_name.empty());
    EXPECT_EQ(out.caller_bytes, bytes);
    EXPECT_EQ(out.caller_version, 22809u);
  }
}

TEST(NcclShimConfig, SetFieldsAreTakenAndABlockingZeroIsNonBlocking) {
  auto raw = initialized(96);  // a newer header: its tail is ignored
  ncclConfig_t* c = as_config(raw);
  c->blocking = 0;
  c->minCTAs = 4;
  c->maxCTAs = 16;
  c->commName = "trainer";
  c->splitShare = 1;
  const int newer = 7;
  std::memcpy(raw.data() + 80, &newer, 4);
  CommConfig out;
  std::string why;
  ASSERT_EQ(read_config(c, &out, &why), ncclSuccess) << why;
  EXPECT_FALSE(out.blocking);
  EXPECT_EQ(out.min_ctas, 4);
  EXPECT_EQ(out.max_ctas, 16);
  EXPECT_EQ(out.comm_name, "trainer");
  EXPECT_TRUE(out.split_share);
}

TEST(NcclShimConfig, ANullConfigIsEveryDefault) {
  CommConfig out;
  out.blocking = false;
  std::string why;
  ASSERT_EQ(read_config(nullptr, &out, &why), ncclSuccess);
  EXPECT_TRUE(out.blocking);
  EXPECT_EQ(out.caller_bytes, 0u);
}

TEST(NcclShimConfig, AnUninitializedOrOutOfRangeConfigIsRefusedNamingTheField) {
  struct Case {
    const char* field;
    void (*spoil)(std::vector<char>&);
  };
  const Case cases[] = {
      {"size", [](std::vector<char>& r) { as_config(r)->size = 16; }},
      {"magic", [](std::vector<char>& r) { as_config(r)->magic = 0; }},
      {"blocking", [](std::vector<char>& r) { as_config(r)->blocking = 2; }},
      {"minCTAs", [](std::vector<char>& r) { as_config(r)->minCTAs = -3; }},
      {"minCTAs",
       [](std::vector<char>& r) {
         as_config(r)->minCTAs = 8;
         as_config(r)->maxCTAs = 2;
       }},
  };
  for (const Case& k : cases) {
    auto raw = initialized(80);
    k.spoil(raw);
    CommConfig out;
    std::string why;
    EXPECT_EQ(read_config(as_config(raw), &out, &why), ncclInvalidArgument) << k.field;
    EXPECT_NE(why.find(k.field), std::string::npos) << k.field << ": " << why;
  }
}

TEST(NcclShimMapping, ResultsTypesAndReductionsMap) {
  EXPECT_EQ(to_nccl(GICL_SUCCESS), ncclSuccess);
  EXPECT_EQ(to_nccl(GICL_INVALID_ARGUMENT), ncclInvalidArgument);
  EXPECT_EQ(to_nccl(GICL_IN_PROGRESS), ncclInProgress);
  EXPECT_EQ(to_nccl(GICL_TIMEOUT), ncclRemoteError);  // NCCL 2.28 has no timeout code
  EXPECT_EQ(to_nccl(GICL_UNSUPPORTED), ncclInvalidUsage);
  EXPECT_EQ(to_nccl(GICL_ABORTED), ncclInvalidUsage);
  for (int r = 0; r < GICL_NUM_RESULTS; ++r)
    EXPECT_LT(static_cast<int>(to_nccl(static_cast<gicl_result_t>(r))), ncclNumResults) << r;
  for (int t = 0; t < ncclNumTypes; ++t) {
    gicl_datatype_t g;
    ASSERT_TRUE(to_gicl(static_cast<ncclDataType_t>(t), &g));
    EXPECT_EQ(static_cast<int>(g), t);
  }
  gicl_datatype_t g;
  EXPECT_FALSE(to_gicl(static_cast<ncclDataType_t>(ncclNumTypes), &g));
  EXPECT_FALSE(to_gicl(static_cast<ncclDataType_t>(-1), &g));
  gicl_redop_t op;
  ASSERT_TRUE(to_gicl(ncclAvg, &op));
  EXPECT_EQ(op, gicl_avg);
  EXPECT_FALSE(to_gicl(static_cast<ncclRedOp_t>(ncclNumOps), &op));  // a custom op
}

}  // namespace
}  // namespace gicl::nccl
