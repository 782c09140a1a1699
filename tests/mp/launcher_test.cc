// SPDX-License-Identifier: Apache-2.0
// gicl-run: environment, output prefixes, exit codes and failure propagation.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Launch {
  int code;
  std::string out;
  double seconds;
};

Launch launch(const std::string& args) {
  const char* bin = std::getenv("GICL_TEST_BINARY_DIR");
  const std::string cmd = std::string(bin) + "/src/tools/gicl-run " + args + " 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int status = p ? pclose(p) : -1;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, s};
}

std::string env_rank() {
  return std::string(std::getenv("GICL_TEST_BINARY_DIR")) + "/tests/env_rank";
}

// The line env_rank prints (snprintf: GCC 12 warns, falsely, on "[" + std::string).
std::string hello_line(int rank, int n) {
  char b[64];
  std::snprintf(b, sizeof(b), "[%d] hello from %d of %d", rank, rank, n);
  return b;
}

TEST(Launcher, StartsRanksThatBootstrapFromTheEnvironment) {
  Launch r = launch("-n 4 -- " + env_rank());
  EXPECT_EQ(r.code, 0) << r.out;
  for (int i = 0; i < 4; ++i) EXPECT_NE(r.out.find(hello_line(i, 4)), std::string::npos) << r.out;
}

TEST(Launcher, ReturnsTheFirstFailingCodeAndStopsTheOthers) {
  Launch r = launch("-n 3 " + env_rank() + " 1 7");
  EXPECT_EQ(r.code, 7) << r.out;
  EXPECT_LT(r.seconds, 30.0) << "the other ranks were not stopped";
  EXPECT_NE(r.out.find("rank 1 exited with code 7"), std::string::npos) << r.out;
}

TEST(Launcher, SignalDeathIsReportedAs128PlusSignal) {
  Launch r = launch("-n 2 -- /bin/sh -c 'if [ $GICL_RANK = 1 ]; then kill -SEGV $$; fi; sleep 30'");
  EXPECT_EQ(r.code, 128 + 11) << r.out;
  EXPECT_LT(r.seconds, 20.0);
}

TEST(Launcher, SetsTheEnvironmentAndPrefixesEveryLine) {
  Launch r =
      launch("-n 2 -- /bin/sh -c 'echo R=$GICL_RANK N=$GICL_WORLD_SIZE; echo second line >&2'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("[0] R=0 N=2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[1] R=1 N=2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[1] second line"), std::string::npos) << r.out;
}

TEST(Launcher, BadUsageAndMissingProgram) {
  EXPECT_EQ(launch("").code, 2);
  EXPECT_EQ(launch("-n 0 /bin/true").code, 2);
  EXPECT_EQ(launch("-n x /bin/true").code, 2);
  Launch r = launch("-n 2 /nonexistent/program");
  EXPECT_EQ(r.code, 127) << r.out;
  EXPECT_NE(r.out.find("cannot run"), std::string::npos);
}

TEST(Launcher, TimeoutStopsAHungJob) {
  Launch r = launch("-n 2 --timeout 1 -- /bin/sleep 60");
  EXPECT_EQ(r.code, 124) << r.out;
  EXPECT_LT(r.seconds, 15.0);
}

}  // namespace
