// SPDX-License-Identifier: Apache-2.0
// How a rank packs its point-to-point group into launches (collectives/host/group.cc), shared
// with the model in tests/unit/coll_p2p_launches_test.cc. The batches (p2p.hpp: p2p_batch_of)
// are what every rank agrees on; the packing is each rank's own: consecutive batches, in order,
// as many as a launch holds, so a group of a few operations with many peers, or many with one,
// is still one launch.
#pragma once

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "collectives/schedule/p2p.hpp"

namespace gicl::coll {

struct P2pPlan {
  std::vector<int> batch;                  // per operation: p2p_batch_of
  std::vector<std::vector<int>> launches;  // operations of each launch, by batch, stream order kept
  std::vector<int> place;                  // per operation: its batch's place in its launch
};

/// Every operation's batch (p2p_batch_of), in one pass over the group: the host's own count per
/// stream (p2p_batch_of counts again for each operation, a quadratic cost a group of 64 paid in
/// microseconds).
template <typename Op>
std::vector<int> p2p_batches(const std::vector<Op>& ops, int nranks, int rank) {
  std::vector<int> seen(2 * static_cast<size_t>(nranks), 0), batch(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const bool send = ops[i].is_send != 0;
    int& before = seen[2 * static_cast<size_t>(ops[i].peer) + (send ? 1 : 0)];
    batch[i] = p2p_batch(before++, p2p_distance(rank, ops[i].peer, send, nranks), nranks);
  }
  return batch;
}

/// Whether every operation falls in batch 0 (no stream longer than p2p_batch_ops, no peer beyond
/// the first distance group), as most groups do: then the group is one launch in its own order,
/// and the host needs no plan.
inline bool p2p_one_batch(const std::vector<int>& batch) {
  return std::all_of(batch.begin(), batch.end(), [](int b) { return b == 0; });
}

/// Batches (`batch`, from p2p_batches) join the launch before them while it holds at most
/// `most` operations.
inline P2pPlan p2p_plan(std::vector<int> batch, int most = kMaxP2pOps) {
  P2pPlan plan;
  plan.batch = std::move(batch);
  plan.place.resize(plan.batch.size());
  std::vector<int> order(plan.batch.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return plan.batch[a] < plan.batch[b]; });
  for (size_t i = 0; i < order.size();) {
    size_t end = i;
    while (end < order.size() && plan.batch[order[end]] == plan.batch[order[i]]) ++end;
    const bool join = !plan.launches.empty() &&
                      plan.launches.back().size() + (end - i) <= static_cast<size_t>(most);
    if (!join) plan.launches.emplace_back();
    const int place = join ? plan.place[plan.launches.back().back()] + 1 : 0;
    for (; i < end; ++i) {
      plan.launches.back().push_back(order[i]);
      plan.place[order[i]] = place;
    }
  }
  return plan;
}

template <typename Op>
P2pPlan p2p_plan(const std::vector<Op>& ops, int nranks, int rank, int most = kMaxP2pOps) {
  return p2p_plan(p2p_batches(ops, nranks, rank), most);
}

}  // namespace gicl::coll
