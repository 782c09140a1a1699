// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/root.hpp"

#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/acceptor.hpp"
#include "common/hmac.hpp"
#include "common/log.hpp"
#include "common/rank_list.hpp"

namespace gicl::bootstrap {
namespace {

struct Root {
  int listen_fd = -1;
  uint8_t secret[kSecretBytes];
  uint8_t job[kJobBytes];
  int64_t timeout_ms;
  CancelFlag stop{false};
  std::atomic<bool> done{false};
  std::thread thread;
};

struct Registry {
  std::mutex mutex;
  std::list<std::unique_ptr<Root>> roots;
  ~Registry() {
    // Process exit: stop roots still waiting so that exit never hangs on them (joined outside
    // the lock, as in reap_roots).
    std::list<std::unique_ptr<Root>> all;
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (auto& r : roots) r->stop.store(true);
      all.splice(all.end(), roots);
    }
    for (auto& r : all)
      if (r->thread.joinable()) r->thread.join();
  }
};

// fork() copies only the calling thread: a child must neither join the parent's root threads
// (they do not exist there) nor find the registry locked by one of them.
void before_fork();
void after_fork_parent();
void after_fork_child();

Registry& registry() {
  static Registry r;
  static const int once = pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  (void)once;
  return r;
}

void before_fork() {
  registry().mutex.lock();
}
void after_fork_parent() {
  registry().mutex.unlock();
}
void after_fork_child() {
  Registry& r = registry();
  // The threads behind these objects live in the parent; leak the objects rather than join.
  for (auto& root : r.roots) {
    ::close(root->listen_fd);
    (void)root.release();
  }
  r.roots.clear();
  r.mutex.unlock();
}

void send_to(int fd, MsgType type, const void* payload, size_t len) {
  WireHeader h{static_cast<uint32_t>(type), 0, len};
  const Deadline d = Deadline::after_ms(5000);
  if (!send_all(fd, &h, sizeof(h), d, nullptr, "a rank").ok()) return;
  send_all(fd, payload, len, d, nullptr, "a rank").ignore();
}

/// "ip:port" of the other end of `fd`, for messages about a connection.
std::string peer_of(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "an unknown address";
  SockAddr a;
  std::memcpy(&a.storage, &ss, sizeof(ss));
  a.len = len;
  return a.str();
}

/// Every rank connected so far, and the one whose hello shows the misconfiguration, get `text`
/// as a refusal (each fails at once with it, GICL_INVALID_USAGE); the root stops serving.
void refuse_all(const std::vector<int>& fds, int offender, const std::string& text) {
  GICL_WARN(kSubsysBootstrap, "bootstrap root: %s", text.c_str());
  for (int fd : fds)
    if (fd >= 0) send_to(fd, MsgType::kRootRefuse, text.data(), text.size());
  send_to(offender, MsgType::kRootRefuse, text.data(), text.size());
  ::close(offender);
}

/// A rank whose connection to the root closed before the table went out has ended (the ranks
/// hold theirs until the table arrives): every other rank that arrived is told at once, naming
/// it, instead of waiting for the table until its timeout.
std::string lose_rank(std::vector<int>& fds, int lost) {
  int rank = -1;
  for (size_t r = 0; r < fds.size(); ++r)
    if (fds[r] == lost) rank = static_cast<int>(r);
  char text[256];
  std::snprintf(text, sizeof(text),
                "rank %d (from %s) closed its connection to the bootstrap root before every rank "
                "had arrived: its process ended or gave up",
                rank, peer_of(lost).c_str());
  GICL_WARN(kSubsysBootstrap, "bootstrap root: %s", text);
  for (int& fd : fds) {
    if (fd >= 0 && fd != lost) send_to(fd, MsgType::kRootLost, text, std::strlen(text));
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  return text;
}

/// Ranks still to come get `why` as a `type` answer, until the deadline or the process ends.
void answer_late(Acceptor* acceptor, Deadline deadline, Root* root, MsgType type,
                 const std::string& why) {
  int fd = -1;
  Hello hello{};
  while (acceptor->accept_one(deadline, &root->stop, &fd, &hello).ok()) {
    send_to(fd, type, why.data(), why.size());
    ::close(fd);
  }
}

void serve(Root* root) {
  // Rank counts are the root's to compare (the first hello sets the job's): the acceptor passes
  // every authenticated hello on, so that a mismatch is refused naming both sides.
  Acceptor acceptor(root->listen_fd, root->secret, root->job, MsgType::kRootHello, -1);
  const Deadline deadline = Deadline::after_ms(root->timeout_ms);
  int nranks = -1;
  std::vector<int> fds;
  std::vector<WireAddr> table;
  int arrived = 0;
  std::vector<int> held;  // the connections of ranks that arrived: a hang-up there is a loss
  while (nranks < 0 || arrived < nranks) {
    int fd = -1;
    Hello hello{};
    Status s = acceptor.accept_one(deadline, &root->stop, &fd, &hello, nullptr, &held);
    if (s.code() == GICL_REMOTE_ERROR) {
      const std::string why = lose_rank(fds, fd);
      answer_late(&acceptor, deadline, root, MsgType::kRootLost, why);
      nranks = 0;  // reported: nothing more to serve
      break;
    }
    if (!s.ok()) break;
    if (nranks < 0) {
      nranks = hello.nranks;
      acceptor.expect_ranks(nranks);
      fds.assign(nranks, -1);
      table.assign(nranks, WireAddr{});
    }
    char why[256] = "";
    if (hello.nranks != nranks)
      std::snprintf(why, sizeof(why),
                    "rank %d (from %s) says the job has %d ranks; the root has %d from the "
                    "first hello",
                    hello.rank, peer_of(fd).c_str(), hello.nranks, nranks);
    else if (fds[hello.rank] >= 0)
      std::snprintf(why, sizeof(why),
                    "two processes say they are rank %d of %d (the first from %s, the second "
                    "from %s)",
                    hello.rank, nranks, peer_of(fds[hello.rank]).c_str(), peer_of(fd).c_str());
    if (why[0] != '\0') {
      refuse_all(fds, fd, why);
      for (int& f : fds)
        if (f >= 0) ::close(f), f = -1;
      answer_late(&acceptor, deadline, root, MsgType::kRootRefuse, why);
      nranks = 0;  // refused: nothing more to serve
      break;
    }
    fds[hello.rank] = fd;
    held.push_back(fd);
    table[hello.rank] = hello.listen_addr;
    ++arrived;
  }
  if (nranks > 0 && arrived == nranks) {
    for (int r = 0; r < nranks; ++r)
      send_to(fds[r], MsgType::kRootTable, table.data(), table.size() * sizeof(WireAddr));
    GICL_INFO(kSubsysBootstrap, "bootstrap root: %d ranks connected", nranks);
  } else if (nranks > 0) {
    std::vector<int> missing;
    for (int r = 0; r < nranks; ++r)
      if (fds[r] < 0) missing.push_back(r);
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "%zu of %d ranks (%s) did not reach the bootstrap root within %lld ms",
                  missing.size(), nranks, rank_list(missing).c_str(),
                  static_cast<long long>(root->timeout_ms));
    std::string text = buf;
    if (root->stop.load()) text = "the bootstrap root was stopped";
    GICL_WARN(kSubsysBootstrap, "bootstrap root: %s", text.c_str());
    for (int fd : fds)
      if (fd >= 0) send_to(fd, MsgType::kRootAbort, text.data(), text.size());
  }
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
  ::close(root->listen_fd);
  root->done.store(true);
}

}  // namespace

Status start_root(const SockAddr& bind_addr, const uint8_t* secret, const uint8_t* job,
                  int64_t timeout_ms, SockAddr* bound, int listen_fd) {
  reap_roots(false);
  auto root = std::make_unique<Root>();
  if (listen_fd >= 0) {
    root->listen_fd = listen_fd;
    bound->len = sizeof(bound->storage);
    if (::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound->storage), &bound->len) != 0) {
      const int err = errno;
      ::close(listen_fd);
      return GICL_FAIL(GICL_SYSTEM_ERROR, "bootstrap root: getsockname: %s", std::strerror(err));
    }
    GICL_CHECK(set_nonblocking(listen_fd));
  } else {
    GICL_CHECK(listen_on(bind_addr, 1024, &root->listen_fd, bound));
  }
  std::memcpy(root->secret, secret, kSecretBytes);
  std::memcpy(root->job, job, kJobBytes);
  root->timeout_ms = timeout_ms;
  Root* raw = root.get();
  try {
    raw->thread = std::thread([raw] {
      serve(raw);
      hmac_thread_done();
    });
  } catch (const std::system_error& e) {
    ::close(raw->listen_fd);
    return GICL_FAIL(GICL_SYSTEM_ERROR, "cannot start the bootstrap root thread: %s", e.what());
  }
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().roots.push_back(std::move(root));
  return GICL_SUCCESS;
}

void reap_roots(bool wait_all) {
  // Joined outside the registry's lock: fork() takes that lock, and an ending root thread takes
  // the MAC lock (hmac_thread_done) that fork() may hold already.
  std::list<std::unique_ptr<Root>> ending;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto& roots = registry().roots;
    for (auto it = roots.begin(); it != roots.end();) {
      auto next = std::next(it);
      if (wait_all || (*it)->done.load()) ending.splice(ending.end(), roots, it);
      it = next;
    }
  }
  for (auto& r : ending) r->thread.join();
}

int live_roots() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  int n = 0;
  for (auto& r : registry().roots) n += r->done.load() ? 0 : 1;
  return n;
}

}  // namespace gicl::bootstrap
