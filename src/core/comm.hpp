// SPDX-License-Identifier: Apache-2.0
// The communicator: bootstrap, peer table and paths, teams and the symmetric heap of one rank.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/wire.hpp"
#include "core/device_state.hpp"
#include "core/net_path.hpp"
#include "core/peer_watch.hpp"
#include "core/team.hpp"
#include "gicl/gicl.h"
#include "memory/heap.hpp"
#include "memory/host_board.hpp"
#include "memory/registry.hpp"
#include "topology/peer_info.hpp"

struct gicl_comm {
  int rank = 0;
  int nranks = 0;
  int device = -1;
  int64_t timeout_ms = 0;
  bool pdl = false;  // kernels launched with programmatic dependent launch (pdl_choice)
  std::unique_ptr<gicl::bootstrap::Bootstrap> bootstrap;
  std::vector<gicl::PeerInfo> peers;
  std::vector<gicl::PeerPath> paths;
  std::unique_ptr<gicl::SymmetricHeap> heap;
  std::unique_ptr<gicl::BufferRegistry> registry;  // gicl_comm_register, made by the first call
  std::unique_ptr<gicl::DeviceResources> dev;      // device API state (VMM heaps only)
  std::unique_ptr<gicl::NetPath> net;              // ranks on the network path (core/net_path)
  uint32_t next_qp_id = 1;  // gicl_qp_create's next id (0 is the default queue pair's)
  // The collectives' state, owned and typed by collectives/ (collectives/host/coll_state.hpp:
  // CollExt), made at the first collective call. Opaque here: core knows nothing of collectives.
  std::shared_ptr<void> collectives;
  std::unique_ptr<gicl::HostBoard> board;  // host exchanges (core/host_exchange.cc)
  int board_state = -1;                    // -1: not decided yet, 0: bootstrap, 1: board
  gicl_team world;
  gicl_team node;
  std::vector<std::unique_ptr<gicl_team>> split_teams;

  // One host operation at a time (bootstrap and heap are single-threaded by design).
  std::mutex op_mutex;
  gicl::CancelFlag cancel{false};
  std::atomic<int> inflight{0};
  std::atomic<int> async_error{GICL_SUCCESS};
  std::mutex error_mutex;
  std::string async_message;
  std::unique_ptr<gicl::PeerWatch> watch;  // liveness of every other rank (core/peer_watch)
  int heartbeat_fd = -1;                   // until the watch takes it (core/heartbeat)
  std::atomic<bool> peer_lost{false};      // a peer's loss: host calls fail from then on
  std::atomic<bool> initializing{false};   // in comm_init: a peer's loss cancels its waits
  std::vector<int> lost_ranks;             // every rank the watch named (under error_mutex)
  std::vector<int> peer_pids;              // each rank's pid, for the watch (under error_mutex)
};

namespace gicl {

/// Full init of `comm` as rank `rank` of `nranks` with the current CUDA device (if any).
Status comm_init(const bootstrap::UniqueIdData& id, int nranks, int rank, gicl_comm** out);
/// Releases everything comm holds and deletes it. Device memory kernels might still use is freed
/// only if the device goes idle within `idle_wait_ms`.
void comm_free(gicl_comm* comm, int idle_wait_ms);
/// Waits up to 3 x PeerWatch::kGather for the peer watch to report a loss; true when it has. A
/// failure seen elsewhere first (a closed connection during init, the network proxy's write to a
/// process that died) is the watch's to name: it names every rank lost in its window.
bool await_peer_report(gicl_comm* comm);
/// Records an asynchronous error (the first one wins).
void comm_set_error(gicl_comm* comm, gicl_result_t code, const std::string& message);

/// Counts a host operation in flight so that abort waits for it to leave; refuses to start one
/// on an aborted communicator.
class CommOp {
 public:
  explicit CommOp(gicl_comm* c) : comm_(c) { comm_->inflight.fetch_add(1); }
  ~CommOp() { comm_->inflight.fetch_sub(1); }
  Status check() const {
    if (cancelled(&comm_->cancel)) return GICL_FAIL(GICL_ABORTED, "the communicator was aborted");
    if (comm_->peer_lost.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(comm_->error_mutex);
      return GICL_FAIL(GICL_REMOTE_ERROR, "%s", comm_->async_message.c_str());
    }
    return GICL_SUCCESS;
  }

 private:
  gicl_comm* comm_;
};

}  // namespace gicl
