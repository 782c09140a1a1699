// SPDX-License-Identifier: Apache-2.0
// Liveness: a thread per communicator polls its bootstrap connections with every other rank for
// a hang-up. A peer process that exits, is killed or aborts its communicator closes them (its
// kernel sends FIN or RST at once), so every survivor learns it within a poll and, 50 ms later,
// names the rank(s) gone; the communicator goes into error: device waits stop (the abort flag),
// host calls return GICL_REMOTE_ERROR. TCP keepalive on the connections covers a node that stops
// answering. The watch stops before a destroy's barrier, so that ranks leaving a finished destroy
// are not reported.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.hpp"

namespace gicl {

class PeerWatch {
 public:
  /// Watches `conns` ({descriptor, peer rank}); `lost(ranks, what)` runs once, on the watch's
  /// thread, kGather after the first hang-up, with every rank whose connection hung up by then.
  /// Ranks that leave because of a loss close theirs too, and a dying process's closes can reach
  /// one survivor after another survivor's: the first hang-up seen need not be the lost rank's,
  /// so every rank seen in the window is named. An empty `ranks`: the watch itself failed.
  static Status start(std::vector<std::pair<int, int>> conns,
                      std::function<void(const std::vector<int>&, const std::string&)> lost,
                      std::unique_ptr<PeerWatch>* out);
  ~PeerWatch();  // stop()
  /// Stops and joins the thread; nothing is reported afterwards.
  void stop();

 private:
  static constexpr auto kGather = std::chrono::milliseconds(50);

  PeerWatch() = default;
  void run();

  std::vector<std::pair<int, int>> conns_;
  std::function<void(const std::vector<int>&, const std::string&)> lost_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gicl
