// SPDX-License-Identifier: Apache-2.0
// The bootstrap under hostile or broken conditions: wrong secrets, garbage, truncated and
// oversized messages, a port scan during init, a rank that never arrives, a rank that dies.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/root.hpp"
#include "bootstrap/unique_id.hpp"
#include "mp/fork_ranks.hpp"

namespace gicl {
namespace {

using bootstrap::Bootstrap;
using bootstrap::UniqueIdData;
using test::fork_ranks;

/// Entries of /proc/self/fd: this process's open descriptors.
int open_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

int connect_root(const UniqueIdData& id) {
  SockAddr a;
  if (!bootstrap::from_wire(id.root, &a)) return -1;
  int fd = -1;
  if (!connect_to(a, Deadline::after_ms(2000), nullptr, "root", &fd).ok()) return -1;
  return fd;
}

void send_bytes(int fd, const void* p, size_t n) {
  send_all(fd, p, n, Deadline::after_ms(1000), nullptr, "root").ignore();
}

int normal_rank(const UniqueIdData& id, int r, int n) {
  std::unique_ptr<Bootstrap> b;
  RANK_OK(Bootstrap::create(id, r, n, nullptr, 20000, &b));
  std::vector<int> v(n);
  v[r] = r * 10;
  RANK_OK(b->allgather(v.data(), sizeof(int)));
  for (int i = 0; i < n; ++i) RANK_CHECK(v[i] == i * 10, "slot %d", i);
  RANK_OK(b->barrier());
  return 0;
}

TEST(BootstrapHostile, WrongSecretGarbageAndOversizeAreRejectedJobCompletes) {
  UniqueIdData id;
  ASSERT_TRUE(bootstrap::make_unique_id(&id).ok());
  // Hostile connections first, so they are in the root's queue before the real ranks.
  std::vector<int> fds;
  {  // a well-formed hello with the wrong secret, claiming rank 0
    int fd = connect_root(id);
    ASSERT_GE(fd, 0);
    bootstrap::WireHeader h{static_cast<uint32_t>(bootstrap::MsgType::kRootHello), 0,
                            sizeof(bootstrap::Hello)};
    bootstrap::Hello hello{};
    hello.version = bootstrap::kWireVersion;
    std::memcpy(hello.secret, id.secret, sizeof(hello.secret));
    hello.secret[3] ^= 0x40;
    hello.rank = 0;
    hello.nranks = 3;
    send_bytes(fd, &h, sizeof(h));
    send_bytes(fd, &hello, sizeof(hello));
    fds.push_back(fd);
  }
  {  // garbage
    int fd = connect_root(id);
    char junk[200];
    for (size_t i = 0; i < sizeof(junk); ++i) junk[i] = static_cast<char>(i * 37);
    send_bytes(fd, junk, sizeof(junk));
    fds.push_back(fd);
  }
  {  // an oversized header: must be dropped on the header alone
    int fd = connect_root(id);
    bootstrap::WireHeader h{static_cast<uint32_t>(bootstrap::MsgType::kRootHello), 0, 1ull << 40};
    send_bytes(fd, &h, sizeof(h));
    fds.push_back(fd);
  }
  {  // truncated: half a hello, then silence
    int fd = connect_root(id);
    bootstrap::WireHeader h{static_cast<uint32_t>(bootstrap::MsgType::kRootHello), 0,
                            sizeof(bootstrap::Hello)};
    send_bytes(fd, &h, sizeof(h));
    send_bytes(fd, id.secret, 8);
    fds.push_back(fd);
  }
  auto results = fork_ranks(
      3, [&](int r) { return normal_rank(id, r, 3); }, 60000);
  for (int fd : fds) close(fd);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

/// 10,000 silent connections to the root while a 3-rank job starts: the root holds at most 1024
/// waiting for their hello (the oldest silent one goes for a new one), every real rank's hello is
/// read, the job completes, and once the flood's connections close the process holds no more
/// descriptors than before.
TEST(BootstrapHostile, ATenThousandConnectionFloodDoesNotStopInit) {
  constexpr int kFlood = 10000;
  rlimit l{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &l), 0);
  if (l.rlim_max < kFlood + 2048)
    GTEST_SKIP() << "the hard limit on open files (" << l.rlim_max << ") is below "
                 << kFlood + 2048;
  l.rlim_cur = l.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &l), 0);
  const int fds0 = open_fds();
  UniqueIdData id;
  ASSERT_TRUE(bootstrap::make_unique_id(&id).ok());
  std::vector<int> flood;
  for (int i = 0; i < kFlood; ++i) {
    const int fd = connect_root(id);
    if (fd < 0) break;
    flood.push_back(fd);
  }
  EXPECT_EQ(static_cast<int>(flood.size()), kFlood) << "connections made";
  auto results = fork_ranks(
      3, [&](int r) { return normal_rank(id, r, 3); }, 60000);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
  for (int fd : flood) close(fd);
  bootstrap::reap_roots(true);
  EXPECT_EQ(open_fds(), fds0) << "descriptors held after the job and the flood";
}

/// Out of file descriptors, the root leaves its listener (which stays readable while a
/// connection waits in the backlog) out of the poll for a while instead of spinning on accept4;
/// once descriptors are free again it accepts, and a job completes.
TEST(BootstrapHostile, OutOfDescriptorsTheRootPausesAndRecovers) {
  auto rc = fork_ranks(1, [](int) {
    rlimit l{64, 64};
    RANK_CHECK(setrlimit(RLIMIT_NOFILE, &l) == 0, "setrlimit: %s", std::strerror(errno));
    UniqueIdData id;
    RANK_OK(bootstrap::make_unique_id(&id));
    SockAddr root;
    RANK_CHECK(bootstrap::from_wire(id.root, &root), "root address");
    const int client = ::socket(root.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    RANK_CHECK(client >= 0, "socket: %s", std::strerror(errno));
    std::vector<int> filler;  // every descriptor left, so that the root's accept4 has none
    for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) filler.push_back(fd);
    RANK_CHECK(errno == EMFILE, "open: %s", std::strerror(errno));
    RANK_CHECK(::connect(client, reinterpret_cast<const sockaddr*>(&root.storage), root.len) == 0,
               "connect: %s", std::strerror(errno));
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    getrusage(RUSAGE_SELF, &after);
    auto secs = [](const rusage& u) {
      return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
             1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
    };
    const double cpu = secs(after) - secs(before);
    std::printf("out of descriptors for 1 s: the process used %.3f s of CPU\n", cpu);
    RANK_CHECK(cpu < 0.25, "the root spun: %.3f s of CPU in 1 s", cpu);
    for (int fd : filler) ::close(fd);
    ::close(client);
    return normal_rank(id, 0, 1);
  });
  EXPECT_EQ(rc[0].code, 0);
}

TEST(BootstrapHostile, PortScanDuringInitDoesNotStopIt) {
  UniqueIdData id;
  ASSERT_TRUE(bootstrap::make_unique_id(&id).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> scans{0};
  std::thread scanner([&] {
    std::vector<int> silent;
    while (!stop.load()) {
      int fd = connect_root(id);
      if (fd < 0) break;  // root finished and closed its port
      if (silent.size() < 40)
        silent.push_back(fd);  // some stay open and say nothing
      else
        close(fd);
      ++scans;
    }
    for (int fd : silent) close(fd);
  });
  auto results = fork_ranks(
      4,
      [&](int r) {
        usleep(50000 * r);  // arrive while the scan is under way
        return normal_rank(id, r, 4);
      },
      60000);
  stop = true;
  scanner.join();
  EXPECT_GT(scans.load(), 10);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

TEST(BootstrapHostile, MissingRankTimesOutNamingIt) {
  setenv("GICL_BOOTSTRAP_TIMEOUT", "1500", 1);
  UniqueIdData id;
  ASSERT_TRUE(bootstrap::make_unique_id(&id).ok());
  unsetenv("GICL_BOOTSTRAP_TIMEOUT");
  // Ranks 0, 1 and 3 of 4 start; rank 2 never does.
  auto results = fork_ranks(
      3,
      [&](int i) {
        const int r = i == 2 ? 3 : i;
        std::unique_ptr<Bootstrap> b;
        Status s = Bootstrap::create(id, r, 4, nullptr, 1500, &b);
        RANK_CHECK(s.code() == GICL_TIMEOUT, "expected a timeout, got %d", s.code());
        const std::string msg = last_error();
        RANK_CHECK(msg.find("(2)") != std::string::npos, "message does not name rank 2: %s",
                   msg.c_str());
        return 0;
      },
      30000);
  for (auto& res : results) {
    EXPECT_EQ(res.code, 0);
    EXPECT_LT(res.seconds, 10.0) << "the timeout took too long";
  }
}

TEST(BootstrapHostile, DeadRankIsNamedByItsPeers) {
  UniqueIdData id;
  ASSERT_TRUE(bootstrap::make_unique_id(&id).ok());
  auto results = fork_ranks(
      3,
      [&](int r) {
        std::unique_ptr<Bootstrap> b;
        RANK_OK(Bootstrap::create(id, r, 3, nullptr, 3000, &b));
        RANK_OK(b->barrier());
        if (r == 2) _exit(0);  // dies without a word, connections and all
        Status s = Status();
        for (int i = 0; i < 3 && s.ok(); ++i) s = b->barrier();
        RANK_CHECK(!s.ok(), "barrier with a dead rank succeeded");
        const std::string msg = last_error();
        // Rank 0 waits on rank 2 first; rank 1 may instead see rank 0 leave after its failure.
        const std::string body = msg.substr(msg.find(':') + 1);
        const bool named = body.find("rank 2") != std::string::npos ||
                           (r == 1 && body.find("rank 0") != std::string::npos);
        RANK_CHECK(named, "message does not name the dead rank: %s", msg.c_str());
        return 0;
      },
      30000);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

}  // namespace
}  // namespace gicl
