// SPDX-License-Identifier: Apache-2.0
// The C++ wrapper over the installed C API: RAII, move, errors as exceptions, typed collectives
// and the destructors' log line when a release fails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "gicl/gicl.hpp"

namespace {

static_assert(gicl::datatype_v<float> == gicl_float32);
static_assert(gicl::datatype_v<const double> == gicl_float64);
static_assert(gicl::datatype_v<__nv_bfloat16> == gicl_bfloat16);
static_assert(gicl::datatype_v<__half> == gicl_float16);
static_assert(gicl::datatype_v<uint8_t> == gicl_uint8);
static_assert(gicl::datatype_v<__nv_fp8_e5m2> == gicl_float8_e5m2);
static_assert(gicl::Element<int64_t> && !gicl::Element<char*>);

// Two ranks of one process, one per thread (a communicator's init is collective).
struct Pair {
  gicl::Communicator a{nullptr}, b{nullptr};
  Pair() {
    const gicl_unique_id_t id = gicl::make_unique_id();
    std::thread t([&] { b = gicl::Communicator(2, id, 1); });
    a = gicl::Communicator(2, id, 0);
    t.join();
  }
};

TEST(CppWrapper, CommunicatorLifecycleAndErrors) {
  Pair p;
  EXPECT_EQ(p.a.rank(), 0);
  EXPECT_EQ(p.b.rank(), 1);
  EXPECT_EQ(p.a.size(), 2);
  gicl::Communicator moved(std::move(p.a));
  EXPECT_FALSE(p.a);
  EXPECT_TRUE(moved);
  try {
    gicl::Communicator bad(0, gicl::make_unique_id(), 0);
    FAIL() << "no exception";
  } catch (const gicl::Error& e) {
    EXPECT_EQ(e.code(), GICL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("nranks"), std::string::npos);
  }
  std::thread d([&] { p.b.abort(); });
  moved.abort();
  d.join();
  EXPECT_FALSE(moved);
}

TEST(CppWrapper, TypedCollectivesCheckTheirSpansBeforeTheCall) {
  Pair p;
  std::vector<float> four(4), eight(8), three(3);
  auto expect_invalid = [](auto&& call, const char* name) {
    try {
      call();
      ADD_FAILURE() << name << ": no exception";
    } catch (const gicl::Error& e) {
      EXPECT_EQ(e.code(), GICL_INVALID_ARGUMENT) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  const std::span<const float> c4(four), c8(eight);
  expect_invalid([&] { p.a.allreduce(c4, std::span<float>(eight), gicl_sum, nullptr); },
                 "allreduce");
  expect_invalid([&] { p.a.reduce_scatter(c4, std::span<float>(four), gicl_sum, nullptr); },
                 "reduce_scatter");
  expect_invalid([&] { p.a.allgather(c4, std::span<float>(four), nullptr); }, "allgather");
  expect_invalid(
      [&] { p.a.alltoall(std::span<const float>(three), std::span<float>(three), nullptr); },
      "alltoall");
  expect_invalid([&] { p.a.broadcast(c8, std::span<float>(four), 0, nullptr); }, "broadcast");
  // Spans that agree reach the library, which refuses the call itself (this communicator has no
  // GPU where CI runs, and host memory is no collective buffer where it has one).
  try {
    p.a.allgather(c4, std::span<float>(eight), nullptr);
    ADD_FAILURE() << "host buffers accepted";
  } catch (const gicl::Error& e) {
    EXPECT_NE(e.code(), GICL_SUCCESS);
  }
  std::thread d([&] { p.b.abort(); });
  p.a.abort();
  d.join();
}

TEST(CppWrapper, GroupEndsInItsDestructorWhenNotEnded) {
  { gicl::Group g; }  // left without end(): the destructor ends it
  EXPECT_EQ(gicl_group_end(), GICL_INVALID_USAGE) << "the destructor left the group open";
  gicl::Group g;
  g.end();
  g.end();  // ending twice is a no-op
  EXPECT_EQ(gicl_group_end(), GICL_INVALID_USAGE);
}

TEST(CppWrapper, AFailedReleaseInADestructorIsLogged) {
  char path[] = "/tmp/gicl-wrapper-log-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  setenv("GICL_DEBUG_FILE", path, 1);
  gicl::log_reload();
  {
    Pair p;
    p.b.abort();  // rank 1 gone: rank 0's collective destroy cannot meet it
    setenv("GICL_BOOTSTRAP_TIMEOUT", "2000", 1);
  }  // ~Communicator of rank 0: gicl_comm_destroy fails and must say so
  unsetenv("GICL_BOOTSTRAP_TIMEOUT");
  unsetenv("GICL_DEBUG_FILE");
  gicl::log_reload();
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  unlink(path);
  EXPECT_NE(text.str().find("gicl_comm_destroy failed in a destructor"), std::string::npos)
      << text.str();
}

}  // namespace
