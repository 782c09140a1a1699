// SPDX-License-Identifier: Apache-2.0
#include "collectives/host/direct_plan.hpp"

#include <algorithm>

#include "collectives/schedule/direct.hpp"

namespace gicl::coll {
namespace {

bool is_nvls(DirectKind k) {
  return k == DirectKind::kNvlsAllReduce || k == DirectKind::kNvlsAllGather;
}
bool splits_send(DirectKind k) {
  return k == DirectKind::kReduceScatter || k == DirectKind::kAllToAll;
}
// NVLS allgather is an allgather: its receive buffer holds a block per rank.
bool splits_recv(DirectKind k) {
  return k == DirectKind::kAllGather || k == DirectKind::kAllToAll ||
         k == DirectKind::kNvlsAllGather;
}

/// Elements of `count` each launch may take.
size_t piece_of(const DirectCall& c, const DirectPlan& p) {
  const size_t E = c.esize;
  size_t piece = c.count;
  if (p.pushes) {
    // n inbox slots of a rank block, each rounded to 16 bytes, fill the staging.
    const size_t slot = direct::inbox_block_limit(c.stage_bytes, c.nranks, E);
    piece = std::min(piece, c.kind == DirectKind::kTwoShot ? slot * c.nranks : slot);
  } else {
    // A broadcast's non-roots stage nothing but must cut the call where the root does, and the
    // root's buffer is not theirs to see: their own send buffer stands for it or, where they pass
    // NULL, their receive buffer (ranks allocate alike; a wrong guess fails the call through the
    // kernels' count check rather than pairing different pieces).
    bool cut_as_staged = !p.src_zero;
    if (c.kind == DirectKind::kBroadcast && c.rank != c.root && c.send_null)
      cut_as_staged = c.recv_as_send_window == kNoWindow;
    if (cut_as_staged)
      piece = std::min(piece, c.stage_bytes / E / (splits_send(c.kind) ? c.nranks : 1));
  }
  if (p.unstage)
    piece =
        std::min(piece, c.stage_bytes / E / (c.kind == DirectKind::kNvlsAllGather ? c.nranks : 1));
  return piece;
}

}  // namespace

DirectPlan plan_direct(const DirectCall& c) {
  DirectPlan p;
  const DirectKind k = c.kind;
  // The source window: the caller's send buffer when it is one, else staging. An in-place
  // one-shot and an in-place alltoall stage it: a rank would overwrite what its peers still read.
  p.src_zero = c.send_window != kNoWindow;
  if ((k == DirectKind::kOneShot || k == DirectKind::kAllToAll) && c.send_is_recv)
    p.src_zero = false;
  // Push first (direct.cu): in the tuner's range every rank pushes from its send buffer, whatever
  // its kind, so none publishes a source window and all cut push mode's pieces; elsewhere a rank
  // without a source window (push mode's cause) pushes first on its own.
  const bool pusher = k == DirectKind::kTwoShot || k == DirectKind::kReduceScatter;
  p.push_first = pusher && (c.push_first_range || !p.src_zero);
  if (p.push_first) p.src_zero = false;
  // The destination window: two-shot pushes its results there (else into staging); allgather
  // and alltoall peers push into it instead of this rank pulling. Not for an in-place alltoall:
  // peers would overwrite blocks this rank has yet to send.
  // A broadcast's non-roots receive their peers' parts of the root's buffer there.
  const bool wants_dst = k == DirectKind::kTwoShot || k == DirectKind::kAllGather || is_nvls(k) ||
                         (k == DirectKind::kAllToAll && !c.send_is_recv) ||
                         (k == DirectKind::kBroadcast && c.rank != c.root);
  p.dst_zero = wants_dst && c.recv_window != kNoWindow;
  // Two-shot, reduce-scatter and alltoall push a staged (or in-place alltoall) buffer's blocks
  // into the peers' inboxes (their staging) rather than copying it into this rank's staging.
  p.pushes = !p.src_zero && (k == DirectKind::kTwoShot || k == DirectKind::kReduceScatter ||
                             k == DirectKind::kAllToAll);
  p.unstage = (k == DirectKind::kTwoShot || is_nvls(k)) && !p.dst_zero;
  // NVLS allgather pushes from the local send buffer, and a broadcast's non-roots publish
  // nothing: neither stages.
  p.stage_src = !p.src_zero && !p.pushes && k != DirectKind::kNvlsAllGather &&
                !(k == DirectKind::kBroadcast && c.rank != c.root);
  p.piece = piece_of(c, p);
  // A broadcast's non-root without a receive window takes its peers' pushes in its staging and
  // copies them out, where its pieces fit there anyway (the root cuts them so when it stages;
  // a larger piece would part from the root's cut). Two ranks have no peers to push.
  if (k == DirectKind::kBroadcast && c.rank != c.root && !p.dst_zero && c.nranks > 2 &&
      p.piece <= c.stage_bytes / c.esize)
    p.unstage = true;
  // An in-place alltoall that spans several pieces trades blocks in place where every rank's
  // buffer is a window (direct.cu, swap_blocks), in the same pieces as push mode, so that ranks
  // with other buffer kinds pair the same launches. Within one piece the push is faster; where
  // ranks time-slice a GPU, every chunk's handshake waits for a time slice.
  p.swaps = k == DirectKind::kAllToAll && c.send_is_recv && p.piece < c.count && !c.time_sliced &&
            c.recv_swap_window != kNoWindow;
  // Allgather and alltoall out of place copy their own block on extra blocks.
  const bool own_block_moves = (k == DirectKind::kAllGather || k == DirectKind::kAllToAll) &&
                               !c.send_is_recv &&
                               !(k == DirectKind::kAllGather && c.own_block_in_place);
  p.local_blocks = own_block_moves && c.local_blocks_fit && c.count * c.esize >= kLocalBlocksFrom
                       ? kLocalBlocks
                       : 0;
  return p;
}

DirectArgs piece_args(const DirectCall& c, const DirectPlan& p, const void* send, void* recv,
                      size_t done) {
  const size_t E = c.esize, len = std::min(p.piece, c.count - done);
  DirectArgs a{};
  a.kind = c.kind;
  a.root = c.root;
  a.push_first = p.push_first;
  a.local_blocks = p.local_blocks;
  a.count = len;
  a.send_ld = splits_send(c.kind) ? c.count : 0;
  a.recv_ld = splits_recv(c.kind) ? c.count : 0;
  a.send = static_cast<const char*>(send) + done * E;
  a.recv = static_cast<char*>(recv) + done * E;
  a.stage_src = p.stage_src;
  a.src_off = p.src_zero ? c.send_window + done * E : kNoWindow;
  a.src_ld = p.src_zero ? a.send_ld : len;
  a.unstage_dst = p.unstage;
  a.dst_off = p.dst_zero ? c.recv_window + done * E : kNoWindow;
  a.swap_off = p.swaps ? c.recv_swap_window + done * E : kNoWindow;
  a.dst_ld = splits_recv(c.kind) ? (p.dst_zero ? c.count : len) : 0;
  return a;
}

}  // namespace gicl::coll
