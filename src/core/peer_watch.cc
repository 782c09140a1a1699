// SPDX-License-Identifier: Apache-2.0
#include "core/peer_watch.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/deadline.hpp"

namespace gicl {
namespace {

/// Probes after 1 s without traffic, 1 s apart, 3 unanswered: a peer's node that stops
/// answering breaks the connection within about 4 s (a process that ends does at once).
void keep_alive(int fd) {
  int on = 1, idle = 1, interval = 1, count = 3;
  (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

}  // namespace

Status PeerWatch::start(std::vector<std::pair<int, int>> conns,
                        std::function<void(const std::vector<int>&, const std::string&)> lost,
                        std::unique_ptr<PeerWatch>* out) {
  std::unique_ptr<PeerWatch> w(new PeerWatch());
  w->conns_ = std::move(conns);
  w->lost_ = std::move(lost);
  for (const auto& [fd, peer] : w->conns_) keep_alive(fd);
  try {
    w->thread_ = std::thread([p = w.get()] { p->run(); });
  } catch (const std::system_error& e) {
    return GICL_FAIL(GICL_SYSTEM_ERROR, "cannot start the peer watch thread: %s", e.what());
  }
  *out = std::move(w);
  return GICL_SUCCESS;
}

PeerWatch::~PeerWatch() {
  stop();
}

void PeerWatch::stop() {
  stop_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
}

void PeerWatch::run() {
  (void)pthread_setname_np(pthread_self(), "gicl-watch");
  // Only hang-ups are asked for: POLLIN is not, so the bootstrap's messages are left for the
  // thread that reads them, and a connection with data waiting does not wake this one.
  std::vector<pollfd> fds;
  for (const auto& [fd, peer] : conns_) fds.push_back({fd, POLLRDHUP, 0});
  std::vector<int> ranks;
  std::string failure;  // a connection error rather than an orderly close, when one is seen
  Clock::time_point report_at{};
  while (!stop_.load(std::memory_order_acquire)) {
    int wait = 100;
    if (!ranks.empty()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(report_at - Clock::now());
      if (left.count() <= 0) break;
      wait = static_cast<int>(left.count());
    }
    const int n = ::poll(fds.data(), fds.size(), wait);
    if (n < 0 && errno != EINTR) {
      lost_({}, std::string("the peer watch's poll failed: ") + std::strerror(errno));
      return;
    }
    for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0) continue;
      const int peer = conns_[i].second;
      if (std::find(ranks.begin(), ranks.end(), peer) == ranks.end()) ranks.push_back(peer);
      int err = 0;
      socklen_t len = sizeof(err);
      if (getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0 &&
          failure.empty())
        failure = std::strerror(err);
      fds[i].fd = -1;  // seen: poll leaves it out from now on
    }
    if (!ranks.empty() && report_at == Clock::time_point{}) report_at = Clock::now() + kGather;
  }
  if (stop_.load(std::memory_order_acquire) || ranks.empty()) return;
  std::sort(ranks.begin(), ranks.end());
  lost_(ranks, failure.empty() ? "closed (a process ended, was killed or aborted the communicator)"
                               : "failed: " + failure);
}

}  // namespace gicl
