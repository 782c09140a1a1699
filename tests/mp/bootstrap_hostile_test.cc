// SPDX-License-Identifier: Apache-2.0
// The bootstrap under hostile or broken conditions: proofs without the secret, a forged rank, a
// process squatting the root's address, garbage, truncated and oversized messages, a port scan
// and a flood during init, a rank that never arrives, a rank that dies.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "bootstrap/auth.hpp"
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

/// A client that claims rank `rank` of `nranks` but holds `secret` (the wrong one): sends its
/// hello, reads the root's challenge and answers with a proof under its secret. Returns the
/// connection, or -1.
int forged_client(const UniqueIdData& id, const uint8_t* secret, int rank, int nranks) {
  const int fd = connect_root(id);
  if (fd < 0) return -1;
  bootstrap::Hello hello{};
  hello.version = bootstrap::kWireVersion;
  hello.rank = rank;
  hello.nranks = nranks;
  if (!bootstrap::auth_nonce(hello.nonce).ok()) return -1;
  bootstrap::WireHeader h{static_cast<uint32_t>(bootstrap::MsgType::kRootHello), 0,
                          sizeof(bootstrap::Hello)};
  send_bytes(fd, &h, sizeof(h));
  send_bytes(fd, &hello, sizeof(hello));
  bootstrap::Challenge c{};
  if (!recv_all(fd, &h, sizeof(h), Deadline::after_ms(3000), nullptr, "root").ok() ||
      h.type != static_cast<uint32_t>(bootstrap::MsgType::kChallenge) ||
      !recv_all(fd, &c, sizeof(c), Deadline::after_ms(3000), nullptr, "root").ok())
    return fd;
  bootstrap::Proof proof{};
  if (!bootstrap::auth_mac(secret, bootstrap::AuthRole::kClient, bootstrap::MsgType::kRootHello,
                           id.job, hello, c.nonce, proof.mac)
           .ok())
    return fd;
  h = {static_cast<uint32_t>(bootstrap::MsgType::kProof), 0, sizeof(proof)};
  send_bytes(fd, &h, sizeof(h));
  send_bytes(fd, &proof, sizeof(proof));
  return fd;
}

/// What the root sends on `fd` within `ms` (until it closes): a refused client gets nothing.
std::vector<char> drain(int fd, int ms) {
  std::vector<char> got;
  const Deadline d = Deadline::after_ms(ms);
  char buf[4096];
  while (!d.expired()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, d.poll_ms()) <= 0) continue;
    const ssize_t k = ::recv(fd, buf, sizeof(buf), 0);
    if (k <= 0) break;
    got.insert(got.end(), buf, buf + k);
  }
  return got;
}

TEST(BootstrapHostile, WrongSecretGarbageAndOversizeAreRejectedJobCompletes) {
  UniqueIdData id;
  ASSERT_TRUE(bootstrap::make_unique_id(&id).ok());
  // Hostile connections first, so they are in the root's queue before the real ranks.
  std::vector<int> fds;
  {  // a well-formed hello claiming rank 0, proved under a secret one bit off
    uint8_t wrong[bootstrap::kSecretBytes];
    std::memcpy(wrong, id.secret, sizeof(wrong));
    wrong[3] ^= 0x40;
    const int fd = forged_client(id, wrong, 0, 3);
    ASSERT_GE(fd, 0);
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
    send_bytes(fd, id.job, 8);
    fds.push_back(fd);
  }
  auto results = fork_ranks(
      3, [&](int r) { return normal_rank(id, r, 3); }, 60000);
  for (int fd : fds) close(fd);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

/// A forged hello as rank 2 of 3 that arrives before the real rank 2, from a process that knows
/// the root's address and job id but not the secret: its proof fails, the root closes the
/// connection without a byte of the address table, and the real rank 2 takes its place.
TEST(BootstrapHostile, AForgedRankIsRefusedAndTheRealRankJoins) {
  UniqueIdData id;
  ASSERT_TRUE(bootstrap::make_unique_id(&id).ok());
  uint8_t guess[bootstrap::kSecretBytes] = {};
  const int fd = forged_client(id, guess, 2, 3);
  ASSERT_GE(fd, 0);
  const std::vector<char> got = drain(fd, 1500);
  close(fd);
  EXPECT_TRUE(got.empty()) << "the forged rank received " << got.size() << " bytes";
  auto results = fork_ranks(
      3, [&](int r) { return normal_rank(id, r, 3); }, 60000);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

/// A process that listens at the root's address instead of the root (a squatter): it records
/// every byte the ranks send and answers their hellos with made-up challenges. The ranks fail at
/// once naming the root's address as failing authentication, and no byte sequence of the secret
/// reaches the squatter.
TEST(BootstrapHostile, ASquatterAtTheRootLearnsNoSecretAndRanksRefuseIt) {
  UniqueIdData id{};
  id.version = bootstrap::kWireVersion;
  ASSERT_TRUE(bootstrap::random_secret(id.secret).ok());
  ASSERT_TRUE(bootstrap::auth_nonce(id.job).ok());
  SockAddr local, bound;
  std::string ifname;
  ASSERT_TRUE(find_interface_address(&local, &ifname).ok());
  int lfd = -1;
  ASSERT_TRUE(listen_on(local, 64, &lfd, &bound).ok());
  id.root = bootstrap::to_wire(bound);
  std::atomic<bool> stop{false};
  std::vector<char> heard;
  std::thread squatter([&] {
    std::vector<int> conns;
    while (!stop.load()) {
      std::vector<pollfd> p{{lfd, POLLIN, 0}};
      for (int c : conns) p.push_back({c, POLLIN, 0});
      if (::poll(p.data(), p.size(), 20) <= 0) continue;
      if (p[0].revents & POLLIN) {
        const int c = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c >= 0) conns.push_back(c);
      }
      for (size_t k = 1; k < p.size(); ++k) {
        if (!(p[k].revents & POLLIN)) continue;
        char buf[4096];
        const ssize_t n = ::recv(p[k].fd, buf, sizeof(buf), 0);
        if (n <= 0) continue;
        heard.insert(heard.end(), buf, buf + n);
        // Whatever came, a challenge of the right shape with a made-up nonce and MAC.
        bootstrap::WireHeader h{static_cast<uint32_t>(bootstrap::MsgType::kChallenge), 0,
                                sizeof(bootstrap::Challenge)};
        bootstrap::Challenge c{};
        for (size_t i = 0; i < sizeof(c.mac); ++i) c.mac[i] = static_cast<uint8_t>(i * 7);
        send_bytes(p[k].fd, &h, sizeof(h));
        send_bytes(p[k].fd, &c, sizeof(c));
      }
    }
    for (int c : conns) close(c);
  });
  auto results = fork_ranks(
      2,
      [&](int r) {
        std::unique_ptr<Bootstrap> b;
        Status s = Bootstrap::create(id, r, 2, nullptr, 10000, &b);
        const std::string msg = last_error();
        RANK_CHECK(s.code() == GICL_REMOTE_ERROR &&
                       msg.find("failed authentication") != std::string::npos &&
                       msg.find(bound.str()) != std::string::npos,
                   "a squatting root: %d '%s'", s.code(), msg.c_str());
        return 0;
      },
      30000);
  stop = true;
  squatter.join();
  close(lfd);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].code, 0) << "rank " << r;
    EXPECT_LT(results[r].seconds, 3.0) << "rank " << r << " did not refuse the squatter at once";
  }
  EXPECT_FALSE(heard.empty()) << "the ranks never reached the squatter";
  const auto secret_at =
      std::search(heard.begin(), heard.end(), id.secret, id.secret + bootstrap::kSecretBytes);
  EXPECT_EQ(secret_at, heard.end()) << "the secret reached the squatter";
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
