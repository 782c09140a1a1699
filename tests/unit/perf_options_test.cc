// SPDX-License-Identifier: Apache-2.0
// The collective benchmarks' command line and bandwidth factors (perf/coll/options.cc).
#include <gtest/gtest.h>

#include "collectives/common/dtypes.cuh"
#include "options.hpp"
#include "values.hpp"

namespace perf {
namespace {

bool parse(std::vector<const char*> args, CollOptions* o, std::string* err) {
  args.insert(args.begin(), "all_reduce_perf");
  return parse_coll_options(static_cast<int>(args.size()), const_cast<char**>(args.data()), o, err);
}

TEST(PerfOptions, NcclTestsFlags) {
  CollOptions o;
  std::string err;
  ASSERT_TRUE(parse({"-b",
                     "8",
                     "-e",
                     "128M",
                     "-f",
                     "2",
                     "-g",
                     "2",
                     "-n",
                     "50",
                     "-w",
                     "3",
                     "-c",
                     "0",
                     "-d",
                     "bfloat16",
                     "-o",
                     "max",
                     "-r",
                     "1",
                     "-z",
                     "1",
                     "-G",
                     "10",
                     "-a",
                     "3",
                     "-R",
                     "2",
                     "--algo",
                     "one_shot",
                     "--compare-nccl",
                     "--p2p",
                     "--json",
                     "out.json"},
                    &o, &err))
      << err;
  EXPECT_EQ(o.min_bytes, 8u);
  EXPECT_EQ(o.max_bytes, 128u << 20);
  EXPECT_EQ(o.gpus, 2);
  EXPECT_EQ(o.iters, 50);
  EXPECT_EQ(o.warmup, 3);
  EXPECT_EQ(o.check, 0);
  EXPECT_EQ(o.dtypes, std::vector{gicl_bfloat16});
  EXPECT_EQ(o.ops, std::vector{gicl_max});
  EXPECT_EQ(o.root, 1);
  EXPECT_FALSE(o.all_roots);
  EXPECT_TRUE(o.blocking);
  EXPECT_EQ(o.graph_iters, 10);
  EXPECT_EQ(o.average, 3);
  EXPECT_EQ(o.registration, 2);
  EXPECT_EQ(o.algo, "one_shot");
  EXPECT_TRUE(o.compare_nccl);
  EXPECT_EQ(o.nccl_configs, kNcclSymmetric | kNcclDefault);  // the best of both by default
  EXPECT_TRUE(o.p2p);
  EXPECT_EQ(o.json, "out.json");
  CollOptions plain;
  ASSERT_TRUE(parse({"-b", "8"}, &plain, &err)) << err;
  EXPECT_FALSE(plain.p2p);
}

TEST(PerfOptions, CompareNcclNamesItsConfigurations) {
  std::string err;
  CollOptions sym, def, best, bad;
  ASSERT_TRUE(parse({"--compare-nccl=sym"}, &sym, &err)) << err;
  EXPECT_TRUE(sym.compare_nccl);
  EXPECT_EQ(sym.nccl_configs, kNcclSymmetric);
  ASSERT_TRUE(parse({"--compare-nccl=default"}, &def, &err)) << err;
  EXPECT_EQ(def.nccl_configs, kNcclDefault);
  ASSERT_TRUE(parse({"--compare-nccl=best"}, &best, &err)) << err;
  EXPECT_EQ(best.nccl_configs, kNcclSymmetric | kNcclDefault);
  EXPECT_FALSE(parse({"--compare-nccl=fast"}, &bad, &err));
  EXPECT_NE(err.find("--compare-nccl"), std::string::npos) << err;
  EXPECT_NE(err.find("best, sym or default"), std::string::npos) << err;
}

TEST(PerfOptions, AllTypesOpsAndRoots) {
  CollOptions o;
  std::string err;
  ASSERT_TRUE(parse({"-d", "all", "-o", "all", "-r", "all", "-c", "3"}, &o, &err)) << err;
  ASSERT_EQ(o.dtypes.size(), static_cast<size_t>(gicl_num_datatypes));
  for (int d = 0; d < gicl_num_datatypes; ++d) EXPECT_EQ(o.dtypes[d], d);
  ASSERT_EQ(o.ops.size(), static_cast<size_t>(gicl_num_redops));
  for (int r = 0; r < gicl_num_redops; ++r) EXPECT_EQ(o.ops[r], r);
  EXPECT_TRUE(o.all_roots);
  EXPECT_EQ(o.root, 0);
  EXPECT_EQ(o.check, 3);
  // A later single value replaces "all".
  ASSERT_TRUE(parse({"-d", "all", "-d", "half", "-r", "all", "-r", "2"}, &o, &err)) << err;
  EXPECT_EQ(o.dtypes, std::vector{gicl_float16});
  EXPECT_FALSE(o.all_roots);
  EXPECT_EQ(o.root, 2);
}

TEST(PerfOptions, NcclTestsLongFlags) {
  CollOptions o;
  std::string err;
  ASSERT_TRUE(parse(
      {"--minbytes", "1K",  "--maxbytes",     "1M", "--stepfactor", "4", "--ngpus",     "2",
       "--iters",    "7",   "--warmup_iters", "2",  "--check",      "0", "--datatype",  "int32",
       "--op",       "min", "--root",         "1",  "--blocking",   "1", "--cudagraph", "3",
       "--average",  "2",   "--agg_iters",    "4"},
      &o, &err))
      << err;
  EXPECT_EQ(o.min_bytes, 1024u);
  EXPECT_EQ(o.max_bytes, 1u << 20);
  EXPECT_EQ(o.factor, 4);
  EXPECT_EQ(o.gpus, 2);
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.warmup, 2);
  EXPECT_EQ(o.check, 0);
  EXPECT_EQ(o.dtypes, std::vector{gicl_int32});
  EXPECT_EQ(o.ops, std::vector{gicl_min});
  EXPECT_EQ(o.root, 1);
  EXPECT_TRUE(o.blocking);
  EXPECT_EQ(o.graph_iters, 3);
  EXPECT_EQ(o.average, 2);
  EXPECT_EQ(o.agg_iters, 4);
  ASSERT_TRUE(parse({"--stepbytes", "64K", "-t", "1", "--nthreads", "1"}, &o, &err)) << err;
  EXPECT_EQ(o.increment, 64u << 10);
  EXPECT_FALSE(parse({"--datatype", "float7"}, &o, &err));
  EXPECT_NE(err.find("--datatype"), std::string::npos) << err;
}

TEST(PerfOptions, BadFlagsNameTheFlag) {
  for (auto args : std::vector<std::vector<const char*>>{{"-d", "float7"},
                                                         {"-o", "xor"},
                                                         {"-f", "1"},
                                                         {"-n", "0"},
                                                         {"-b", "1G", "-e", "1M"},
                                                         {"-x", "1"},
                                                         {"-b"},
                                                         {"-a", "9"},
                                                         {"-r", "any"},
                                                         {"-c", "-1"},
                                                         {"-m", "0"},
                                                         {"-t", "2"},
                                                         {"-d", "All"}}) {
    CollOptions o;
    std::string err;
    EXPECT_FALSE(parse(args, &o, &err)) << args[0];
    EXPECT_FALSE(err.empty());
  }
}

// The public element sizes the harness and the NCCL library use (gicl/types.h) agree with the
// kernels' type table for every type.
TEST(PerfOptions, ElementSizesMatchTheLibrary) {
  for (int d = 0; d < gicl_num_datatypes; ++d) {
    const auto t = static_cast<gicl_datatype_t>(d);
    EXPECT_EQ(gicl_datatype_size(t), gicl::coll::dtype_size(t)) << dtype_label(t);
    EXPECT_NE(gicl_datatype_size(t), 0u) << dtype_label(t);
  }
  EXPECT_EQ(gicl_datatype_size(gicl_num_datatypes), 0u);
}

TEST(PerfOptions, Sweep) {
  CollOptions o;
  o.min_bytes = 8;
  o.max_bytes = 64;
  EXPECT_EQ(sweep(o, 4), (std::vector<size_t>{8, 16, 32, 64}));
  o.min_bytes = 1;
  o.max_bytes = 3;
  o.increment = 1;
  EXPECT_EQ(sweep(o, 2), (std::vector<size_t>{2}));  // rounded to whole elements, no repeats
}

}  // namespace
}  // namespace perf
