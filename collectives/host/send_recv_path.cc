// SPDX-License-Identifier: Apache-2.0
#include "collectives/host/send_recv_path.hpp"

#include <vector>

#include "collectives/common/dtypes.cuh"
#include "collectives/host/local_copy.hpp"
#include "collectives/host/p2p_issue.hpp"
#include "collectives/schedule/tables.hpp"
#include "common/cuda.hpp"
#include "core/comm.hpp"

namespace gicl::coll {
namespace {

/// A private buffer of at least `bytes` for an in-place alltoall's outgoing blocks. It only grows;
/// an outgrown one stays until the communicator goes, since a captured graph may still read it.
Status alltoall_copy_space(CollState* st, size_t bytes, char** out) {
  if (st->a2a_space.empty() || st->a2a_space_bytes < bytes) {
    RelaxedCapture relaxed;  // cudaMalloc while the caller's stream is being captured
    void* p = nullptr;
    GICL_CUDA_CHECK(cudaMalloc(&p, bytes));
    st->a2a_space.push_back(p);
    st->a2a_space_bytes = bytes;
  }
  *out = static_cast<char*>(st->a2a_space.back());
  return GICL_SUCCESS;
}

}  // namespace

Status run_send_recv(gicl_comm* comm, CollState* st, const CollCall& k) {
  if (k.coll != Collective::kBroadcast && k.coll != Collective::kAllGather &&
      k.coll != Collective::kAllToAll)
    return GICL_FAIL(GICL_INTERNAL_ERROR, "%s has no send_recv algorithm", collective_name(k.coll));
  const int n = comm->nranks, me = comm->rank;
  const size_t block = k.count * dtype_size(k.dtype);
  std::vector<P2pOp> ops;
  auto add = [&](const void* buf, int peer, bool is_send) {
    ops.push_back({const_cast<void*>(buf), block, peer, is_send ? 1 : 0, kNoWindow, 0});
  };
  const char* send = static_cast<const char*>(k.send);
  const char* recv = static_cast<const char*>(k.recv);
  auto at = [&](const char* base, int r) { return base + static_cast<size_t>(r) * block; };
  if (k.coll == Collective::kBroadcast) {
    if (me != k.root) {
      add(recv, k.root, false);
    } else {
      for (int step = 1; step < n; ++step) add(send, (me + step) % n, true);
      if (send != recv) add(send, me, true), add(recv, me, false);
    }
  } else {
    // Allgather sends its one block to every peer, alltoall its block `to` to peer `to`. In an
    // in-place alltoall the blocks going out are copied aside first: a peer's send may land in a
    // block before this rank has sent it. This rank's choice alone (its peers see only the sends
    // and receives), at the cost of one local copy of the outgoing blocks.
    const bool a2a = k.coll == Collective::kAllToAll;
    const char* out = send;
    if (a2a && send == recv) {
      char* space = nullptr;
      GICL_CHECK(alltoall_copy_space(st, static_cast<size_t>(n) * block, &space));
      std::vector<CopySpec> aside;
      if (me > 0)
        aside.push_back({reinterpret_cast<uintptr_t>(space), reinterpret_cast<uintptr_t>(send),
                         static_cast<size_t>(me) * block});
      if (me + 1 < n)
        aside.push_back({reinterpret_cast<uintptr_t>(at(space, me + 1)),
                         reinterpret_cast<uintptr_t>(at(send, me + 1)),
                         static_cast<size_t>(n - me - 1) * block});
      GICL_CHECK(local_copies(comm, aside, k.stream));
      out = space;
    }
    // Peers in the order of a ring's steps: every rank sends to me + s while it receives from
    // me - s, so a group of many peers keeps every link busy.
    for (int step = 1; step < n; ++step) {
      const int to = (me + step) % n, from = (me - step + n) % n;
      add(a2a ? at(out, to) : send, to, true);
      add(at(recv, from), from, false);
    }
    // This rank's own block, a pair with itself unless it is already in place.
    const char* mine = a2a ? at(send, me) : send;
    const char* own = at(recv, me);
    if (own != mine) add(mine, me, true), add(own, me, false);
  }
  return issue_p2p(comm, st, k.stream, ops);
}

}  // namespace gicl::coll
