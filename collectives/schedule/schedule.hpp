// SPDX-License-Identifier: Apache-2.0
// One entry point over every (collective, algorithm) pair: how many steps, and each rank's step.
#pragma once

#include "collectives/schedule/direct.hpp"
#include "collectives/schedule/recursive.hpp"
#include "collectives/schedule/ring.hpp"

namespace gicl::coll {

/// Shape of one collective call. `count` is the element count of the whole buffer: allreduce,
/// broadcast, reduce: count; reduce-scatter and allgather: per-rank count x n; alltoall:
/// per-peer count x n. `chunks` is the pipeline depth of the ring broadcast and reduce. `esize` is the
/// element size in bytes where the cut depends on it (two-shot and NVLS allreduce: rank blocks
/// in 16-byte packs), 0 for the type-agnostic element-wise cut.
struct Shape {
  Collective coll;
  Algorithm algo;
  int nranks;
  size_t count;
  int root = 0;
  int chunks = 1;
  size_t esize = 0;
};

GICL_HD int num_steps(const Shape& sh) {
  const int n = sh.nranks;
  if (n <= 1) return 0;
  switch (sh.algo) {
    case Algorithm::kRing:
      if (sh.coll == Collective::kAllReduce) return ring::allreduce_steps(n);
      if (sh.coll == Collective::kBroadcast || sh.coll == Collective::kReduce)
        return ring::broadcast_steps(n, sh.chunks);
      return ring::reduce_scatter_steps(n);
    case Algorithm::kRecursiveDoubling:
      return recursive::doubling_allreduce_steps(n);
    case Algorithm::kRabenseifner:
      return recursive::rabenseifner_steps(n);
    case Algorithm::kOneShot:
      return direct::steps(n);
    case Algorithm::kTwoShot:
      return direct::two_shot_steps(n);
    case Algorithm::kNvls:
      return sh.coll == Collective::kAllReduce ? direct::two_shot_steps(n) : direct::steps(n);
    case Algorithm::kDirect:
    case Algorithm::kCopyEngine:
    case Algorithm::kSendRecv:
      return direct::steps(n);
  }
  return 0;
}

GICL_HD Step make_step(const Shape& sh, int r, int s) {
  const int n = sh.nranks;
  const size_t c = sh.count;
  switch (sh.coll) {
    case Collective::kAllReduce:
      switch (sh.algo) {
        case Algorithm::kRing:
          return ring::allreduce(r, n, c, s);
        case Algorithm::kRecursiveDoubling:
          return recursive::doubling_allreduce(r, n, c, s);
        case Algorithm::kRabenseifner:
          return recursive::rabenseifner(r, n, c, s);
        case Algorithm::kOneShot:
          return direct::one_shot_allreduce(r, n, c, s);
        case Algorithm::kTwoShot:
        case Algorithm::kNvls:
          return direct::two_shot_allreduce(r, n, c, sh.esize, s);
        default:
          break;
      }
      break;
    case Collective::kReduceScatter:
      return sh.algo == Algorithm::kRing ? ring::reduce_scatter(r, n, c, s)
                                         : direct::reduce_scatter(r, n, c, s);
    case Collective::kAllGather:
      if (sh.algo == Algorithm::kRing) return ring::allgather(r, n, c, s);
      if (sh.algo == Algorithm::kRecursiveDoubling)
        return recursive::doubling_allgather(r, n, c, s);
      return direct::allgather(r, n, c, s);
    case Collective::kBroadcast:
      return sh.algo == Algorithm::kRing ? ring::broadcast(r, n, c, sh.root, sh.chunks, s)
                                         : direct::broadcast(r, n, c, sh.root, s);
    case Collective::kReduce:
      return sh.algo == Algorithm::kRing ? ring::reduce(r, n, c, sh.root, sh.chunks, s)
                                         : direct::reduce(r, n, c, sh.root, s);
    case Collective::kAllToAll:
      return direct::alltoall(r, n, c, s);  // ring: the same pairwise exchanges
  }
  return Step{};
}

}  // namespace gicl::coll
