// SPDX-License-Identifier: Apache-2.0
// The data movement of every collective algorithm as pure functions of (rank, nranks, count,
// root, step): which element range goes to which peer, which comes from which peer, and whether
// it is copied or reduced. The kernels (collectives issue) and the CPU simulator
// (collectives/sim) both use these functions, so the simulator checks the very index
// arithmetic the GPU runs. Header-only, __host__ __device__, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define GICL_HD __host__ __device__ __forceinline__
#else
#define GICL_HD inline
#endif

namespace gicl::coll {

enum class Collective : uint8_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kAllToAll
};

/// Whether the collective combines values with a reduction operation (the others only move
/// bytes, so their kernels need one instantiation per type, or one for all types).
GICL_HD bool is_reduction(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}

enum class Algorithm : uint8_t {
  kRing,               // chunked ring (allreduce, reduce-scatter, allgather, broadcast as a chain)
  kRecursiveDoubling,  // allreduce, allgather; non-powers of two folded in and out
  kRabenseifner,       // allreduce: recursive halving reduce-scatter + recursive doubling allgather
  kOneShot,            // allreduce: every rank takes every peer's whole input
  kTwoShot,            // allreduce: reduce-scatter then allgather through the peers
  kDirect,             // reduce-scatter, allgather, broadcast, reduce, alltoall: straight to peers
  kNvls,               // allreduce, allgather through NVLink multicast: the data movement of
                       // two-shot (allreduce) and direct (allgather), one multimem op per element
  kCopyEngine,         // allgather, broadcast, alltoall: direct's data movement, each block
                       // pushed by a copy engine into the receiver's window (no SMs)
  kSendRecv,           // allgather, broadcast, alltoall: direct's data movement as
                       // gicl_send/gicl_recv (the copy-engine proxy takes the large sends, with
                       // no host exchange)
};
inline constexpr int kNumAlgorithms = 9;

/// What arriving data does to the destination range.
enum class Action : uint8_t { kNone, kCopy, kReduce };

/// One element range of the full buffer moving between two ranks.
struct Transfer {
  int peer = -1;  // -1: nothing
  size_t offset = 0;
  size_t count = 0;
};

/// One step of one rank: at most one send and one receive (the simulator checks that every send
/// meets the matching receive). Sends read the buffer as it was before the step's receives.
struct Step {
  Transfer send;
  Transfer recv;
  Action action = Action::kNone;
};

/// Balanced partition of `count` elements into `parts` ranges: the first count % parts ranges get
/// one more element. Ranges are empty when count < parts.
GICL_HD void partition(size_t count, int parts, int i, size_t* offset, size_t* n) {
  const size_t base = count / static_cast<size_t>(parts),
               extra = count % static_cast<size_t>(parts);
  const size_t ui = static_cast<size_t>(i);
  *offset = ui * base + (ui < extra ? ui : extra);
  *n = base + (ui < extra ? 1 : 0);
}

/// partition() in whole units of `unit` elements: every part starts on a unit boundary, the
/// last non-empty one takes the ragged end. Kernels whose blocks copy 16-byte packs slice with it.
GICL_HD void partition_units(size_t count, int parts, int i, size_t unit, size_t* offset,
                             size_t* n) {
  size_t ulo, un;
  partition((count + unit - 1) / unit, parts, i, &ulo, &un);
  const size_t lo = ulo * unit, hi = (ulo + un) * unit;
  *offset = lo < count ? lo : count;
  *n = (hi < count ? hi : count) - *offset;
}

/// partition_units() in whole 16-byte packs of `esize`-byte elements: how the direct kernels'
/// blocks, the pipe kernels' channels and the two-shot / NVLS rank blocks split a range (a part
/// starting mid-pack would put every copy of it on the byte path). A rank block so cut is never
/// larger than the inbox slot of ceil(count / parts) elements: ceil(ceil(count E / 16) / parts)
/// packs.
GICL_HD void partition_packs(size_t count, int parts, int i, size_t esize, size_t* offset,
                             size_t* n) {
  partition_units(count, parts, i, esize < 16 ? 16 / esize : 1, offset, n);
}

GICL_HD int mod(int a, int n) {
  return ((a % n) + n) % n;
}

GICL_HD Transfer block(int peer, size_t count, int parts, int i) {
  Transfer t;
  t.peer = peer;
  partition(count, parts, i, &t.offset, &t.count);
  return t;
}

GICL_HD Transfer whole(int peer, size_t count) {
  Transfer t;
  t.peer = peer;
  t.count = count;
  return t;
}

}  // namespace gicl::coll
