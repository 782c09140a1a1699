#include "collectives/host/send_recv_path.hpp"

#include <vector>

#include "collectives/common/dtypes.cuh"
#include "collectives/common/names.hpp"
#include "collectives/host/p2p_issue.hpp"
#include "core/comm.hpp"

namespace ccl::coll {

Status run_send_recv(ccl_comm* comm, CollState* st, const CollCall& k) {
  if (k.coll != Collective::kBroadcast && k.coll != Collective::kAllGather)
    return CCL_FAIL(CCL_INTERNAL_ERROR, "%s has no send_recv algorithm", collective_name(k.coll));
  const int n = comm->nranks, me = comm->rank;
  const size_t block = k.count * dtype_size(k.dtype);
  std::vector<P2pOp> ops;
  auto add = [&](const void* buf, int peer, bool is_send) {
    ops.push_back({const_cast<void*>(buf), block, peer, is_send ? 1 : 0, kNoWindow, 0});
  };
  const char* send = static_cast<const char*>(k.send);
  char* recv = static_cast<char*>(k.recv);
  if (k.coll == Collective::kBroadcast) {
    if (me != k.root) {
      add(recv, k.root, false);
    } else {
      for (int step = 1; step < n; ++step) add(send, (me + step) % n, true);
      if (send != recv) add(send, me, true), add(recv, me, false);
    }
  } else {
    // Peers in the order of a ring's steps: every rank sends to me + s while it receives from
    // me - s, so a group of many peers keeps every link busy.
    for (int step = 1; step < n; ++step) {
      const int to = (me + step) % n, from = (me - step + n) % n;
      add(send, to, true);
      add(recv + static_cast<size_t>(from) * block, from, false);
    }
    char* own = recv + static_cast<size_t>(me) * block;
    if (own != send) add(send, me, true), add(own, me, false);
  }
  return issue_p2p(comm, st, k.stream, ops);
}

}  // namespace ccl::coll
