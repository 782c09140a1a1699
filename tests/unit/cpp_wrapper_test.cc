// SPDX-License-Identifier: Apache-2.0
// The C++ wrapper over the installed C API: RAII, move, errors as exceptions.
#include <gtest/gtest.h>

#include <thread>

#include "gicl/gicl.hpp"

namespace {

TEST(CppWrapper, CommunicatorLifecycleAndErrors) {
  const gicl_unique_id_t id = gicl::make_unique_id();
  gicl::Communicator other(nullptr);
  std::thread t([&] { other = gicl::Communicator(2, id, 1); });
  gicl::Communicator comm(2, id, 0);
  t.join();
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(other.rank(), 1);
  EXPECT_EQ(comm.size(), 2);
  gicl::Communicator moved(std::move(comm));
  EXPECT_FALSE(comm);
  EXPECT_TRUE(moved);
  try {
    gicl::Communicator bad(0, id, 0);
    FAIL() << "no exception";
  } catch (const gicl::Error& e) {
    EXPECT_EQ(e.code(), GICL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("nranks"), std::string::npos);
  }
  std::thread d([&] { other.abort(); });
  moved.abort();
  d.join();
  EXPECT_FALSE(moved);
}

}  // namespace
