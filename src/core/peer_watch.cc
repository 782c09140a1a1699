// SPDX-License-Identifier: Apache-2.0
#include "core/peer_watch.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "common/deadline.hpp"
#include "common/hmac.hpp"

namespace gicl {
namespace {

using std::chrono::milliseconds;

/// Probes after 1 s without traffic, 1 s apart, 3 unanswered: with heartbeats off, a peer's
/// node that stops answering breaks the connection within about 4 s.
void keep_alive(int fd) {
  int on = 1, idle = 1, interval = 1, count = 3;
  (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

/// Every running watch, for stop_all_at_exit.
std::mutex g_watches_mutex;
std::set<PeerWatch*> g_watches;

/// A process that exits without destroying its communicators still has their watches running;
/// OpenSSL's own exit handler frees what their heartbeat MACs use. This one is registered after
/// OpenSSL's (at the first watch, when the bootstrap has used OpenSSL already), so it runs
/// before it and stops them.
void stop_all_at_exit() {
  std::lock_guard<std::mutex> lock(g_watches_mutex);
  for (PeerWatch* w : g_watches) w->halt();
}

int poll_ms(Clock::duration d) {
  const auto ms = std::chrono::ceil<milliseconds>(d).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 100));
}

}  // namespace

Status PeerWatch::start(std::vector<std::pair<int, int>> conns, Report lost,
                        std::unique_ptr<PeerWatch>* out) {
  std::unique_ptr<PeerWatch> w(new PeerWatch());
  w->conns_ = std::move(conns);
  w->lost_ = std::move(lost);
  for (const auto& [fd, peer] : w->conns_) keep_alive(fd);
  static std::once_flag at_exit;
  std::call_once(at_exit, [] { std::atexit(stop_all_at_exit); });
  try {
    w->thread_ = std::thread([p = w.get()] {
      p->run();
      hmac_thread_done();  // heartbeats are MACs
    });
  } catch (const std::system_error& e) {
    return GICL_FAIL(GICL_SYSTEM_ERROR, "cannot start the peer watch thread: %s", e.what());
  }
  {
    std::lock_guard<std::mutex> lock(g_watches_mutex);
    g_watches.insert(w.get());
  }
  *out = std::move(w);
  return GICL_SUCCESS;
}

PeerWatch::~PeerWatch() {
  stop();
}

void PeerWatch::quiet() {
  quiet_.store(true, std::memory_order_release);
}

void PeerWatch::halt() {
  stop_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
}

void PeerWatch::stop() {
  {
    std::lock_guard<std::mutex> lock(g_watches_mutex);
    g_watches.erase(this);
  }
  halt();
  if (plan_.fd >= 0) ::close(plan_.fd);
  plan_.fd = -1;
  if (next_plan_.fd >= 0) ::close(next_plan_.fd);
  next_plan_.fd = -1;
}

void PeerWatch::beat(HeartbeatPlan plan) {
  std::lock_guard<std::mutex> lock(plan_mutex_);
  if (next_plan_.fd >= 0) ::close(next_plan_.fd);
  next_plan_ = std::move(plan);
  plan_ready_.store(true, std::memory_order_release);
}

void PeerWatch::run() {
  (void)pthread_setname_np(pthread_self(), "gicl-watch");
  // Heartbeats start when beat() hands over a plan; until then only the connections are watched.
  bool beats = false;
  milliseconds interval{0}, silence{0};
  std::vector<bool> expected;
  std::vector<Clock::time_point> heard;
  std::vector<uint64_t> last_seq;
  auto adopt = [&] {
    {
      std::lock_guard<std::mutex> lock(plan_mutex_);
      plan_ = std::move(next_plan_);
      next_plan_ = HeartbeatPlan{};
      plan_ready_.store(false, std::memory_order_relaxed);
    }
    const HeartbeatPlan& hb = plan_;
    beats = hb.fd >= 0 && hb.timeout_ms > 0;
    const milliseconds timeout(hb.timeout_ms);
    // About four heartbeats missed in a row name a rank: with the gathering window it is named
    // within the timeout of its last heartbeat, and one or two lost datagrams never name it.
    interval = std::max(milliseconds(1), timeout / 5);
    silence = std::max<milliseconds>(timeout - interval - kGather, 3 * interval);
    expected.assign(hb.nranks, false);
    for (int r = 0; beats && r < hb.nranks && r < static_cast<int>(hb.to.size()); ++r)
      expected[r] = r != hb.rank && hb.to[r].port() != 0;
    heard.assign(hb.nranks, Clock::now());
    last_seq.assign(hb.nranks, 0);
  };
  const HeartbeatPlan& hb = plan_;

  // Only hang-ups are asked for on the connections: POLLIN is not, so the bootstrap's messages
  // are left for the thread that reads them, and a connection with data waiting does not wake
  // this one. The heartbeat socket, once there is one, is last.
  std::vector<pollfd> fds;
  for (const auto& [fd, peer] : conns_) fds.push_back({fd, POLLRDHUP, 0});
  const size_t nconns = conns_.size();

  std::vector<std::pair<int, PeerLoss>> ranks;
  std::string detail;  // the first failed connection's error
  Clock::time_point report_at{}, next_beat = Clock::now();
  uint64_t seq = 0;
  bool reported = false;
  auto note = [&](int peer, PeerLoss way) {
    for (const auto& [r, w] : ranks)
      if (r == peer) return;
    ranks.push_back({peer, way});
  };

  while (!stop_.load(std::memory_order_acquire)) {
    if (plan_ready_.load(std::memory_order_acquire)) {
      adopt();
      fds.resize(nconns);
      if (beats) fds.push_back({hb.fd, POLLIN, 0});
      next_beat = Clock::now();
    }
    Clock::time_point now = Clock::now();
    if (beats && now >= next_beat) {
      HeartbeatMsg m;
      if (heartbeat_encode(hb.key, hb.rank, hb.nranks, ++seq, &m).ok()) {
        for (int r = 0; r < hb.nranks; ++r) {
          if (!expected[r]) continue;
          // Unreachable peers and full buffers are what silence detection is for: ignored here.
          (void)::sendto(hb.fd, &m, sizeof(m), MSG_DONTWAIT,
                         reinterpret_cast<const sockaddr*>(&hb.to[r].storage), hb.to[r].len);
        }
      }
      next_beat = now + interval;
    }
    const bool listening = !reported && !quiet_.load(std::memory_order_acquire);
    if (listening && !ranks.empty() && now >= report_at) {
      std::sort(ranks.begin(), ranks.end());
      lost_(ranks, detail, hb.timeout_ms);
      reported = true;
      for (size_t i = 0; i < nconns; ++i) fds[i].fd = -1;  // heartbeats only from here on
      continue;
    }

    Clock::time_point until = now + milliseconds(100);
    if (beats) until = std::min(until, next_beat);
    if (listening && !ranks.empty()) until = std::min(until, report_at);
    for (size_t r = 0; listening && r < expected.size(); ++r)
      if (expected[r]) until = std::min(until, heard[r] + silence + milliseconds(1));
    const int n = ::poll(fds.data(), fds.size(), poll_ms(until - now));
    if (n < 0 && errno != EINTR) {
      if (listening) lost_({}, std::string("poll: ") + strerror(errno), hb.timeout_ms);
      return;
    }
    for (size_t i = 0; n > 0 && i < nconns; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0) continue;
      int err = 0;
      socklen_t len = sizeof(err);
      const bool failed = getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0;
      if (detail.empty() && failed) detail = strerror(err);
      note(conns_[i].second, failed ? PeerLoss::kFailed : PeerLoss::kClosed);
      fds[i].fd = -1;  // seen: poll leaves it out from now on
    }
    if (beats && n > 0 && (fds.back().revents & POLLIN) != 0) {
      // Drained before silence is judged: a watch held off the CPU finds the heartbeats that
      // arrived meanwhile waiting here, and takes nobody for lost because of its own delay.
      HeartbeatMsg m;
      for (;;) {
        const ssize_t k = ::recv(hb.fd, &m, sizeof(m), MSG_DONTWAIT | MSG_TRUNC);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) break;
        uint64_t s = 0;
        const int from =
            heartbeat_decode(hb.key, hb.rank, hb.nranks, &m, static_cast<size_t>(k), &s);
        if (from < 0 || s <= last_seq[from]) continue;
        last_seq[from] = s;
        heard[from] = Clock::now();
      }
    }
    now = Clock::now();
    for (size_t r = 0; listening && r < expected.size(); ++r)
      if (expected[r] && now - heard[r] > silence) note(static_cast<int>(r), PeerLoss::kSilent);
    if (!ranks.empty() && report_at == Clock::time_point{}) report_at = now + kGather;
  }
}

}  // namespace gicl
