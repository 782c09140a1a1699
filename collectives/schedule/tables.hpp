// SPDX-License-Identifier: Apache-2.0
// The one table of collectives and the one table of algorithms. Everything that depends on a
// collective's shape (which buffers split into per-rank blocks, which have a root, which reduce,
// what in place means) or on an algorithm (its GICL_ALGO name, its kernel, the collectives it
// runs) reads these rows: the host planner, the tuner, the argument checks, the kernels and the
// simulator. tests/unit/coll_tables_test.cc checks the docs' lists against them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/schedule/hd.hpp"

namespace gicl::coll {

/// What "in place" means for a collective (NCCL's conventions).
enum class InPlace : uint8_t {
  kSameBuffer,          // sendbuff == recvbuff
  kRecvIsOwnSendBlock,  // reduce_scatter: recvbuff == sendbuff + rank x recvcount
  kSendIsOwnRecvBlock,  // allgather: sendbuff == recvbuff + rank x sendcount
};

// X(id, name, reduces, has_root, send splits into per-rank blocks, recv splits, in-place rule)
#define GICL_FOR_EACH_COLLECTIVE(X)                                                           \
  X(kAllReduce, "allreduce", true, false, false, false, InPlace::kSameBuffer)                 \
  X(kReduceScatter, "reduce_scatter", true, false, true, false, InPlace::kRecvIsOwnSendBlock) \
  X(kAllGather, "allgather", false, false, false, true, InPlace::kSendIsOwnRecvBlock)         \
  X(kBroadcast, "broadcast", false, true, false, false, InPlace::kSameBuffer)                 \
  X(kReduce, "reduce", true, true, false, false, InPlace::kSameBuffer)                        \
  X(kAllToAll, "alltoall", false, false, true, true, InPlace::kSameBuffer)

enum class Collective : uint8_t {
#define GICL_COLLECTIVE_ID(id, name, reduces, root, send_blocks, recv_blocks, in_place) id,
  GICL_FOR_EACH_COLLECTIVE(GICL_COLLECTIVE_ID)
#undef GICL_COLLECTIVE_ID
};
inline constexpr int kNumCollectives = 0
#define GICL_COLLECTIVE_COUNT(id, name, reduces, root, send_blocks, recv_blocks, in_place) +1
    GICL_FOR_EACH_COLLECTIVE(GICL_COLLECTIVE_COUNT)
#undef GICL_COLLECTIVE_COUNT
    ;

// Each yes/no column as a bit mask over the rows (bit c for Collective c): a kernel reads a column
// as a shift and a mask, with no branch and no row built (a switch or a struct holding the name
// string costs predicates and registers in device code).
#define GICL_COL_REDUCES(id, name, reduces, root, sb, rb, ip) \
  | ((reduces) ? 1u : 0u) << static_cast<unsigned>(Collective::id)
#define GICL_COL_ROOT(id, name, reduces, root, sb, rb, ip) \
  | ((root) ? 1u : 0u) << static_cast<unsigned>(Collective::id)
#define GICL_COL_SEND(id, name, reduces, root, sb, rb, ip) \
  | ((sb) ? 1u : 0u) << static_cast<unsigned>(Collective::id)
#define GICL_COL_RECV(id, name, reduces, root, sb, rb, ip) \
  | ((rb) ? 1u : 0u) << static_cast<unsigned>(Collective::id)
inline constexpr unsigned kReducesMask = 0u GICL_FOR_EACH_COLLECTIVE(GICL_COL_REDUCES);
inline constexpr unsigned kRootMask = 0u GICL_FOR_EACH_COLLECTIVE(GICL_COL_ROOT);
inline constexpr unsigned kSendSplitsMask = 0u GICL_FOR_EACH_COLLECTIVE(GICL_COL_SEND);
inline constexpr unsigned kRecvSplitsMask = 0u GICL_FOR_EACH_COLLECTIVE(GICL_COL_RECV);
#undef GICL_COL_REDUCES
#undef GICL_COL_ROOT
#undef GICL_COL_SEND
#undef GICL_COL_RECV

/// Whether the collective combines values with a reduction operation (the others only move
/// bytes, so their kernels need one instantiation per type, or one for all types).
GICL_HD bool is_reduction(Collective c) {
  return (kReducesMask >> static_cast<unsigned>(c)) & 1u;
}
/// Broadcast and reduce.
GICL_HD bool has_root(Collective c) {
  return (kRootMask >> static_cast<unsigned>(c)) & 1u;
}
/// The send buffer holds nranks blocks of `count`, one for each rank.
GICL_HD bool send_splits(Collective c) {
  return (kSendSplitsMask >> static_cast<unsigned>(c)) & 1u;
}
/// The receive buffer does.
GICL_HD bool recv_splits(Collective c) {
  return (kRecvSplitsMask >> static_cast<unsigned>(c)) & 1u;
}
/// The name in GICL_ALGO and the logs ("allreduce").
GICL_HD const char* collective_name(Collective c) {
  switch (c) {
#define GICL_COL_NAME(id, name, reduces, root, sb, rb, ip) \
  case Collective::id:                                     \
    return name;
    GICL_FOR_EACH_COLLECTIVE(GICL_COL_NAME)
#undef GICL_COL_NAME
  }
  return "?";
}
GICL_HD InPlace in_place_rule(Collective c) {
  switch (c) {
#define GICL_COL_IN_PLACE(id, name, reduces, root, sb, rb, ip) \
  case Collective::id:                                         \
    return ip;
    GICL_FOR_EACH_COLLECTIVE(GICL_COL_IN_PLACE)
#undef GICL_COL_IN_PLACE
  }
  return InPlace::kSameBuffer;
}

/// Elements of the send and receive buffers of a call of `count` on n ranks.
GICL_HD size_t send_elems(Collective c, size_t count, int n) {
  return send_splits(c) ? count * static_cast<size_t>(n) : count;
}
GICL_HD size_t recv_elems(Collective c, size_t count, int n) {
  return recv_splits(c) ? count * static_cast<size_t>(n) : count;
}

/// The kernels an algorithm runs in.
enum class Family : uint8_t {
  kPipe,        // collectives/pipe: schedules through pairwise FIFOs of device-API messages
  kDirect,      // collectives/direct: load/store kernels (LL, LL128, SIMPLE)
  kCopyEngine,  // cudaMemcpyAsync pushes with barrier kernels (collectives/host/copy_engine.cc)
  kSendRecv,    // one group of gicl_send / gicl_recv (collectives/host/send_recv_path.cc)
};

// X(id, name, family, then whether it runs: allreduce, reduce_scatter, allgather, broadcast,
//   reduce, alltoall)
#define GICL_FOR_EACH_ALGORITHM(X)                                             \
  X(kRing, "ring", Family::kPipe, 1, 1, 1, 1, 1, 1)                            \
  X(kRecursiveDoubling, "recursive_doubling", Family::kPipe, 1, 0, 1, 0, 0, 0) \
  X(kRabenseifner, "rabenseifner", Family::kPipe, 1, 0, 0, 0, 0, 0)            \
  X(kOneShot, "one_shot", Family::kDirect, 1, 0, 0, 0, 0, 0)                   \
  X(kTwoShot, "two_shot", Family::kDirect, 1, 0, 0, 0, 0, 0)                   \
  X(kDirect, "direct", Family::kDirect, 0, 1, 1, 1, 1, 1)                      \
  X(kNvls, "nvls", Family::kDirect, 1, 0, 1, 0, 0, 0)                          \
  X(kCopyEngine, "copy_engine", Family::kCopyEngine, 0, 0, 1, 1, 0, 1)         \
  X(kSendRecv, "send_recv", Family::kSendRecv, 0, 0, 1, 1, 0, 1)

/// ring: chunked ring (broadcast as a pipelined chain, reduce as the ring allreduce whose result
/// the root keeps, alltoall as pairwise exchanges in ring-distance order). recursive_doubling:
/// pairwise exchanges at doubling distances, non-powers of two folded in and out. rabenseifner:
/// recursive halving reduce-scatter, then recursive doubling allgather. one_shot: every rank
/// reduces every peer's whole input. two_shot: reduce-scatter, then allgather, through the peers.
/// direct: every rank reads or writes each peer's part straight. nvls: two_shot's (allreduce) or
/// direct's (allgather) movement through NVLink multicast. copy_engine: direct's movement as
/// copy-engine pushes into the receivers' windows. send_recv: direct's movement as one group of
/// sends and receives.
enum class Algorithm : uint8_t {
#define GICL_ALGORITHM_ID(id, name, family, ar, rs, ag, bc, rd, a2a) id,
  GICL_FOR_EACH_ALGORITHM(GICL_ALGORITHM_ID)
#undef GICL_ALGORITHM_ID
};
inline constexpr int kNumAlgorithms = 0
#define GICL_ALGORITHM_COUNT(id, name, family, ar, rs, ag, bc, rd, a2a) +1
    GICL_FOR_EACH_ALGORITHM(GICL_ALGORITHM_COUNT)
#undef GICL_ALGORITHM_COUNT
    ;

/// The name in GICL_ALGO and the logs ("two_shot").
GICL_HD const char* algorithm_name(Algorithm a) {
  switch (a) {
#define GICL_ALGO_NAME(id, name, family, ar, rs, ag, bc, rd, a2a) \
  case Algorithm::id:                                             \
    return name;
    GICL_FOR_EACH_ALGORITHM(GICL_ALGO_NAME)
#undef GICL_ALGO_NAME
  }
  return "?";
}

GICL_HD Family family(Algorithm a) {
  switch (a) {
#define GICL_ALGO_FAMILY(id, name, fam, ar, rs, ag, bc, rd, a2a) \
  case Algorithm::id:                                            \
    return fam;
    GICL_FOR_EACH_ALGORITHM(GICL_ALGO_FAMILY)
#undef GICL_ALGO_FAMILY
  }
  return Family::kDirect;
}

/// Whether `a` implements collective `c` (the row's columns in Collective's order).
GICL_HD bool supported(Collective c, Algorithm a) {
  const int i = static_cast<int>(c);
  switch (a) {
#define GICL_ALGO_RUNS(id, name, fam, ar, rs, ag, bc, rd, a2a)                                  \
  case Algorithm::id: {                                                                         \
    const bool runs[kNumCollectives] = {ar != 0, rs != 0, ag != 0, bc != 0, rd != 0, a2a != 0}; \
    return i >= 0 && i < kNumCollectives && runs[i];                                            \
  }
    GICL_FOR_EACH_ALGORITHM(GICL_ALGO_RUNS)
#undef GICL_ALGO_RUNS
  }
  return false;
}

}  // namespace gicl::coll
