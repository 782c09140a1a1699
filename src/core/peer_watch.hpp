// SPDX-License-Identifier: Apache-2.0
// Liveness: a thread per communicator watches every other rank two ways.
// - Its bootstrap connections, for a hang-up. A peer process that exits, is killed or aborts its
//   communicator closes them (its kernel sends FIN or RST at once), so every survivor learns it
//   within a poll.
// - Heartbeats (core/heartbeat.hpp), for what closes nothing: a node that stops answering or a
//   process that is stopped. A rank not heard from for GICL_PEER_TIMEOUT is named.
// kGather after the first loss seen, the watch names every rank lost by then; the communicator
// goes into error: device waits stop (the abort flag), host calls return GICL_REMOTE_ERROR. The
// watch keeps sending heartbeats after it has reported and while it is quiet, so that a
// survivor, or a rank waiting in destroy's barrier, is never taken for lost by the others.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/socket.hpp"
#include "common/status.hpp"
#include "core/heartbeat.hpp"

namespace gicl {

/// How the watch saw ranks go.
enum class PeerLoss : uint8_t {
  kClosed,  // their connections closed in order (process ended, killed, aborted)
  kFailed,  // a connection failed (reset, keepalive unanswered)
  kSilent,  // no heartbeat for the timeout
};

/// Heartbeats to send and expect: `fd` a socket from heartbeat_open (the watch owns it from
/// start()), `to[r]` rank r's heartbeat address (port 0: r sends none and is not expected).
struct HeartbeatPlan {
  int fd = -1;
  int rank = 0;
  int nranks = 0;
  int64_t timeout_ms = 0;  // 0: none sent, none expected
  std::vector<SockAddr> to;
  uint8_t key[kHeartbeatKeyBytes] = {};
};

class PeerWatch {
 public:
  /// Ranks lost, each with how it went (sorted by rank); `error`: the first failed
  /// connection's error, or what failed when `lost` is empty (the watch itself); `timeout_ms`:
  /// the heartbeats' GICL_PEER_TIMEOUT.
  using Report = std::function<void(const std::vector<std::pair<int, PeerLoss>>& lost,
                                    const std::string& error, int64_t timeout_ms)>;

  /// Watches `conns` ({descriptor, peer rank}) for hang-ups. `lost` runs once, on the watch's
  /// thread, kGather after the first loss, with every rank seen lost by then and how. Ranks that
  /// leave because of a loss close their connections too, and a dying process's closes can
  /// reach one survivor after another survivor's: the first hang-up seen need not be the lost
  /// rank's, so every rank seen in the window is named, each with its own way.
  static Status start(std::vector<std::pair<int, int>> conns, Report lost,
                      std::unique_ptr<PeerWatch>* out);
  /// Starts sending and expecting the heartbeats of `plan` (the watch owns its socket): once the
  /// ranks have exchanged their heartbeat ports, after the connections are already watched.
  void beat(HeartbeatPlan plan);
  ~PeerWatch();  // stop()
  /// Nothing is reported from now on; heartbeats are still sent until stop(). Destroy calls it
  /// before its barrier: ranks leaving a finished destroy are no loss, and a rank waiting there
  /// for a slower one is not taken for lost by it.
  void quiet();
  /// Stops and joins the thread and closes the heartbeat socket.
  void stop();
  /// Stops and joins the thread only (at process exit).
  void halt();

  /// How long after the first loss the watch reports.
  static constexpr auto kGather = std::chrono::milliseconds(50);

 private:
  PeerWatch() = default;
  void run();

  std::vector<std::pair<int, int>> conns_;
  HeartbeatPlan plan_;  // the thread's own
  std::mutex plan_mutex_;
  HeartbeatPlan next_plan_;  // handed over by beat(), under plan_mutex_
  std::atomic<bool> plan_ready_{false};
  Report lost_;
  std::atomic<bool> quiet_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gicl
