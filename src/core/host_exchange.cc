// SPDX-License-Identifier: Apache-2.0
#include "core/host_exchange.hpp"

#include <algorithm>
#include <vector>

#include "common/log.hpp"
#include "common/settings.hpp"
#include "core/comm.hpp"

namespace gicl {
namespace {

/// Whether this rank can join a board: the setting on, and every rank reachable through the
/// heap's handle channel (POSIX-fd heaps connect every load/store peer on this host).
Status board_wanted(gicl_comm* c, bool* wanted) {
  int64_t on = 0;
  GICL_CHECK(setting_int(Setting::kHostBoard, &on));
  *wanted = false;
  if (on == 0 || !c->heap || c->heap->fd_channel() == nullptr) return GICL_SUCCESS;
  for (int r = 0; r < c->nranks; ++r)
    if (c->heap->slot_of(r) < 0) return GICL_SUCCESS;
  *wanted = true;
  return GICL_SUCCESS;
}

Status open_board(gicl_comm* c) {
  bool wanted = false;
  GICL_CHECK(board_wanted(c, &wanted));
  // Decided together: a rank alone on the board would wait for ranks exchanging elsewhere.
  std::vector<int32_t> all(c->nranks);
  all[c->rank] = wanted;
  GICL_CHECK(c->bootstrap->allgather(all.data(), sizeof(int32_t)));
  c->board_state = std::all_of(all.begin(), all.end(), [](int32_t w) { return w != 0; });
  if (c->board_state == 0) {
    GICL_INFO(kSubsysColl,
              "rank %d: host exchanges over the bootstrap (not every rank can join a "
              "host board)",
              c->rank);
    return GICL_SUCCESS;
  }
  HostBoard::Config cfg;
  cfg.rank = c->rank;
  cfg.timeout_ms = c->timeout_ms;
  cfg.cancel = &c->cancel;
  // A rank's exit fails the wait at once (kill(pid, 0)); threads of this process need no check.
  for (const PeerInfo& p : c->peers)
    cfg.pids.push_back(same_process(p, c->peers[c->rank]) ? 0 : static_cast<pid_t>(p.pid));
  GICL_CHECK(HostBoard::create(cfg, c->bootstrap.get(), c->heap->fd_channel(), &c->board));
  GICL_INFO(kSubsysColl, "rank %d: host exchanges through a shared-memory board (%d ranks)",
            c->rank, c->nranks);
  return GICL_SUCCESS;
}

}  // namespace

Status host_allgather(gicl_comm* c, void* data, size_t bytes) {
  if (c->board_state < 0) {
    const Status s = open_board(c);
    if (!s.ok()) {
      c->board_state = 0;  // not retried: the ranks would not agree on a retry
      return s;
    }
  }
  if (c->board && bytes <= HostBoard::kBlockBytes) return c->board->allgather(data, bytes);
  return c->bootstrap->allgather(data, bytes);
}

}  // namespace gicl
