// SPDX-License-Identifier: Apache-2.0
// Direct (load/store) collectives: every rank reads what it needs straight from its peers'
// published windows over NVLink, in one kernel per piece with an entry and an exit barrier per
// block. A window is the caller's buffer when it lies in the symmetric heap (zero copy) or this
// rank's staging otherwise; peers learn where through the entry barrier, so ranks need not agree
// on heap offsets. Two-shot, reduce-scatter and alltoall push into the peers' staging instead
// when a rank has no source window, and every rank's two-shot allreduce does in the tuner's
// push-first range (direct.cu, push mode). Reductions run in rank order 0..n-1 with one rounding
// (canonical).
#pragma once

#include <cuda_runtime_api.h>

#include "collectives/common/coll_args.h"
#include "collectives/schedule/copy_lists.hpp"
#include "collectives/schedule/step.hpp"
#include "common/kernel_launch.hpp"
#include "gicl/gicl.h"

namespace gicl::coll {

enum class DirectKind : uint8_t {
  kOneShot,        // allreduce: every rank reduces the whole buffer from every peer
  kTwoShot,        // allreduce: reduce my rank block from every peer, push it to every peer
  kReduceScatter,  // pull my block from every peer and reduce
  kReduce,         // the root pulls everything and reduces
  kAllGather,      // pull every peer's block
  kBroadcast,      // pull the root's buffer
  kAllToAll,       // pull my block of every peer's input
  kNvlsAllReduce,  // NVLS: multimem ld_reduce of my rank block, multimem store of the result
  kNvlsAllGather,  // NVLS: multimem store of my block to every rank
};

struct DirectArgs {
  const void* send;
  void* recv;
  size_t count;    // allreduce, broadcast, reduce: elements; otherwise elements per rank block
  size_t send_ld;  // elements between rank blocks of send (reduce-scatter, alltoall)
  size_t recv_ld;  // elements between rank blocks of recv (allgather, alltoall)
  uint64_t src_off, src_ld;  // this rank's source window: heap offset (bytes), block stride
  uint64_t dst_off, dst_ld;  // this rank's destination window (two-shot only)
  uint64_t swap_off;         // in-place alltoall: the buffer's window, else kNoWindow
  int root;
  DirectKind kind;
  bool stage_src;    // copy send into the source window (this rank's staging) first; two-shot,
                     // reduce-scatter and alltoall never do: without a source window they push
  bool unstage_dst;  // the destination window is staging: copy it into recv at the end
  // Two-shot and reduce-scatter: this rank pushes its peers' blocks into their inboxes before
  // the entry barrier. Every rank's two-shot allreduce in the tuner's push-first range (decided
  // alike whatever the buffer kinds), and a rank without a source window always (direct.cu,
  // push first).
  bool push_first;
  char* mc;  // NVLS: multicast address of heap offset 0; null = emulated (unicast)
  // Allgather and alltoall out of place: the last `local_blocks` blocks of the grid copy this
  // rank's own block in HBM (no flags, no barrier) while the others drive NVLink undisturbed.
  int local_blocks;
};

/// Launches one piece (kMaxBlocks blocks). Reducing kinds use (dtype, op); the others move bytes.
cudaError_t launch_direct(gicl_datatype_t dtype, gicl_redop_t op, const gicl_device_comm_t& c,
                          const CollScratch& s, const DirectArgs& a, int grid, const Launch& l);

/// The fewest blocks per multiprocessor of the kernels below (each lowers *out to its own):
/// the unit of the co-residency limit (collectives/host/residency.cc).
cudaError_t direct_blocks_per_sm(int* out);
cudaError_t ll_blocks_per_sm(int* out);
cudaError_t ll128_blocks_per_sm(int* out);

/// The LL protocol (every rank block at most ll_capacity(nranks)): each rank stores what a peer
/// needs, with the epoch as a flag in every 8-byte word, straight into that peer's LL row;
/// receivers spin on their local rows, so one NVLink crossing and no barrier make up the whole
/// call.
struct LLArgs {
  const void* send;
  void* recv;
  size_t block_bytes;  // bytes of one rank block (allreduce, broadcast, reduce: the buffer)
  int root;
  Collective coll;
};
cudaError_t launch_ll(gicl_datatype_t dtype, gicl_redop_t op, const gicl_device_comm_t& c,
                      const CollScratch& s, const LLArgs& a, const Launch& l);
/// The LL128 protocol (every rank block at most ll128_capacity(nranks)): the same calls with one
/// flag per 128-byte line (collectives/schedule/ll128.hpp).
cudaError_t launch_ll128(gicl_datatype_t dtype, gicl_redop_t op, const gicl_device_comm_t& c,
                         const CollScratch& s, const LLArgs& a, const Launch& l);

/// A local copy (collectives/host/local_copy.cc): `bytes` from `src` to `dst`, both 16-byte
/// aligned.
cudaError_t launch_copy(void* dst, const void* src, size_t bytes, const Launch& l);

/// Several local copies in one launch (collectives/schedule/copy_lists.hpp): `n` (at most
/// kMaxCopyList) of them, each copy_listable.
cudaError_t launch_copy_list(const CopySpec* copies, int n, const Launch& l);

}  // namespace gicl::coll
