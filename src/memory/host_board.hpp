// SPDX-License-Identifier: Apache-2.0
// An allgather among the ranks of one host through a page of shared memory. The collectives
// exchange a few bytes on the host at some calls (GICL_CHECK_MODE's call signatures, the
// copy-engine path's receive windows); over the bootstrap that is one socket round trip per
// ring step, about 20 us for two ranks and growing with the rank count, paid on every eager
// call. Here a rank writes its block and raises its sequence word; the others read once every
// word is raised.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "common/deadline.hpp"
#include "common/status.hpp"
#include "memory/fd_channel.hpp"

namespace gicl {

class HostBoard {
 public:
  /// Bytes one rank can put on the board per call; larger exchanges use the bootstrap.
  static constexpr size_t kBlockBytes = 192;

  struct Config {
    int rank = 0;
    std::vector<pid_t> pids;  // by rank: whose exit fails a wait at once (0: do not check)
    int64_t timeout_ms = 0;   // a wait for a rank that never arrives fails after this
    const CancelFlag* cancel = nullptr;
  };

  /// Collective over the `cfg.pids.size()` ranks of `bs`, all of this host and all connected by
  /// `channel`: rank 0 creates the memory (memfd) and hands it to the others.
  static Status create(const Config& cfg, bootstrap::Bootstrap* bs, FdChannel* channel,
                       std::unique_ptr<HostBoard>* out);
  ~HostBoard();
  HostBoard(const HostBoard&) = delete;
  HostBoard& operator=(const HostBoard&) = delete;

  /// Every rank's `bytes` (<= kBlockBytes, equal on all ranks) at data + rank * bytes. Calls are
  /// collective and in the same order on every rank, as the bootstrap's.
  Status allgather(void* data, size_t bytes);

  /// Bytes of the shared mapping for `nranks` ranks.
  static size_t mapping_bytes(int nranks);

 private:
  HostBoard() = default;
  Status wait_all(uint64_t seq);

  Config cfg_;
  int nranks_ = 0;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  uint64_t calls_ = 0;  // allgathers made here: the sequence number the next one raises
};

}  // namespace gicl
