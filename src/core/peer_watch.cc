// SPDX-License-Identifier: Apache-2.0
#include "core/peer_watch.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

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
                        std::function<void(int, const std::string&)> lost,
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
  while (!stop_.load(std::memory_order_acquire)) {
    const int n = ::poll(fds.data(), fds.size(), 100);
    if (n < 0 && errno != EINTR) {
      lost_(-1, std::string("the peer watch's poll failed: ") + std::strerror(errno));
      return;
    }
    for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
      const short ev = fds[i].revents;
      if ((ev & (POLLRDHUP | POLLHUP | POLLERR)) == 0) continue;
      if (stop_.load(std::memory_order_acquire)) return;
      int err = 0;
      socklen_t len = sizeof(err);
      (void)getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &err, &len);
      lost_(conns_[i].second,
            err != 0 ? std::string("its connection failed: ") + std::strerror(err)
                     : std::string("it closed its connection (its process ended, was killed or "
                                   "aborted the communicator)"));
      return;  // the first loss puts the communicator in error; later ones add nothing
    }
  }
}

}  // namespace gicl
