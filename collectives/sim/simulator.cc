// SPDX-License-Identifier: Apache-2.0
#include "collectives/sim/simulator.hpp"

#include <algorithm>
#include <climits>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace gicl::coll {

namespace {

using Buffer = std::vector<int64_t>;

SimResult fail(std::string text) {
  SimResult r;
  r.ok = false;
  r.error = std::move(text);
  return r;
}

std::string where(const Shape& sh, int step, int rank) {
  return std::string(collective_name(sh.coll)) + "/" + algorithm_name(sh.algo) +
         " n=" + std::to_string(sh.nranks) + " count=" + std::to_string(sh.count) + " step " +
         std::to_string(step) + " rank " + std::to_string(rank);
}

}  // namespace

SimResult simulate(const Shape& sh, uint64_t seed) {
  const int n = sh.nranks;
  if (!supported(sh.coll, sh.algo)) return fail("unsupported collective/algorithm pair");
  std::mt19937_64 rng(seed);
  // Inputs: distinct per rank and element; values small enough that sums never overflow.
  std::vector<Buffer> in(n, Buffer(sh.count)), out;
  for (auto& b : in)
    for (auto& x : b) x = static_cast<int64_t>(rng() % 1000003) - 500000;
  const bool separate_out = sh.coll == Collective::kAllToAll;
  // One-shot reads every peer's untouched input (staged in symmetric scratch by the kernel) and
  // reduces it into its own output, so its sends read the inputs, not the partial results.
  const bool sends_from_input = separate_out || sh.algo == Algorithm::kOneShot;
  // Allgather: only a rank's own block is meaningful input; poison the rest.
  if (sh.coll == Collective::kAllGather) {
    for (int r = 0; r < n; ++r) {
      Transfer own = block(r, sh.count, n, r);
      for (size_t i = 0; i < sh.count; ++i)
        if (i < own.offset || i >= own.offset + own.count) in[r][i] = INT64_MIN;
    }
  }
  out = separate_out ? std::vector<Buffer>(n, Buffer(sh.count, INT64_MIN)) : in;
  std::vector<Buffer>& data = out;  // the buffers the schedule updates in place
  if (separate_out) {
    // Alltoall: a rank's own block is a local copy, not a message.
    for (int r = 0; r < n; ++r) {
      const Transfer own = block(r, sh.count, n, r);
      for (size_t i = 0; i < own.count; ++i) out[r][own.offset + i] = in[r][own.offset + i];
    }
  }
  const std::vector<Buffer> initial = in;

  SimResult res;
  res.steps = num_steps(sh);
  std::vector<uint64_t> moved(n, 0);
  for (int s = 0; s < res.steps; ++s) {
    std::vector<Step> st(n);
    for (int r = 0; r < n; ++r) st[r] = make_step(sh, r, s);
    // Sends read the buffers as they were before this step's receives.
    std::map<std::pair<int, int>, std::pair<Transfer, Buffer>> msgs;
    for (int r = 0; r < n; ++r) {
      const Transfer& t = st[r].send;
      if (t.peer < 0) continue;
      if (t.peer >= n || t.peer == r) return fail(where(sh, s, r) + ": sends to an invalid peer");
      if (t.offset + t.count > sh.count)
        return fail(where(sh, s, r) + ": send range out of bounds");
      const Buffer& src = sends_from_input ? initial[r] : data[r];
      Buffer payload(src.begin() + static_cast<long>(t.offset),
                     src.begin() + static_cast<long>(t.offset + t.count));
      if (!msgs.emplace(std::make_pair(r, t.peer), std::make_pair(t, std::move(payload))).second)
        return fail(where(sh, s, r) + ": two sends to one peer in one step");
      moved[r] += t.count;
    }
    for (int r = 0; r < n; ++r) {
      const Transfer& t = st[r].recv;
      if (t.peer < 0) continue;
      auto it = msgs.find({t.peer, r});
      if (it == msgs.end())
        return fail(where(sh, s, r) + ": receives from rank " + std::to_string(t.peer) +
                    ", which sends nothing to it");
      const Transfer& sent = it->second.first;
      if (sent.count != t.count || (!separate_out && sent.offset != t.offset))
        return fail(where(sh, s, r) + ": receive range [" + std::to_string(t.offset) + ", +" +
                    std::to_string(t.count) + ") does not match the send [" +
                    std::to_string(sent.offset) + ", +" + std::to_string(sent.count) + ")");
      if (t.offset + t.count > sh.count)
        return fail(where(sh, s, r) + ": receive range out of bounds");
      const Buffer& payload = it->second.second;
      for (size_t i = 0; i < t.count; ++i) {
        int64_t& dst = data[r][t.offset + i];
        if (st[r].action == Action::kReduce) {
          if (dst == INT64_MIN || payload[i] == INT64_MIN)
            return fail(where(sh, s, r) + ": reduces data that was never written");
          dst += payload[i];
        } else {
          dst = payload[i];
        }
      }
      msgs.erase(it);
    }
    if (!msgs.empty())
      return fail(where(sh, s, msgs.begin()->first.first) + ": a send to rank " +
                  std::to_string(msgs.begin()->first.second) + " is never received");
  }
  for (auto m : moved) res.elements_moved = std::max(res.elements_moved, m);

  // The definition of each collective.
  Buffer sum(sh.count, 0);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < sh.count; ++i)
      if (initial[r][i] != INT64_MIN) sum[i] += initial[r][i];  // allgather's poison: unused
  auto check = [&](int r, size_t i, int64_t want) -> bool {
    if (data[r][i] == want) return true;
    res.ok = false;
    res.error = std::string(collective_name(sh.coll)) + "/" + algorithm_name(sh.algo) +
                " n=" + std::to_string(n) + " count=" + std::to_string(sh.count) + ": rank " +
                std::to_string(r) + " element " + std::to_string(i) + " is " +
                std::to_string(data[r][i]) + ", expected " + std::to_string(want);
    return false;
  };
  // The rank whose block holds element i.
  auto owner = [&](size_t i) {
    for (int q = 0; q < n; ++q) {
      const Transfer b = block(q, sh.count, n, q);
      if (i >= b.offset && i < b.offset + b.count) return q;
    }
    return 0;
  };
  for (int r = 0; r < n; ++r) {
    const Transfer own = block(r, sh.count, n, r);
    for (size_t i = 0; i < sh.count; ++i) {
      bool good = true;
      switch (sh.coll) {
        case Collective::kAllReduce:
          good = check(r, i, sum[i]);
          break;
        case Collective::kReduceScatter:
          if (i >= own.offset && i < own.offset + own.count) good = check(r, i, sum[i]);
          break;
        case Collective::kAllGather:
          good = check(r, i, initial[owner(i)][i]);
          break;
        case Collective::kBroadcast:
          good = check(r, i, initial[sh.root][i]);
          break;
        case Collective::kReduce:
          if (r == sh.root) good = check(r, i, sum[i]);
          break;
        case Collective::kAllToAll: {
          // Output block q of rank r is input block r of rank q.
          const int q = owner(i);
          const Transfer src = block(r, sh.count, n, r);
          const Transfer dst = block(q, sh.count, n, q);
          good = check(r, i, initial[q][src.offset + (i - dst.offset)]);
          break;
        }
      }
      if (!good) return res;
    }
  }
  return res;
}

}  // namespace gicl::coll
