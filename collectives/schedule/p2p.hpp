// Message order of a point-to-point group (p2p_kernel), shared by the kernel and the protocol
// model in tests/unit/coll_pipe_protocol_test.cc. Each (peer, direction) pair is one stream: the
// group's operations with that peer in that direction, in group order, each cut into messages.
// Round k carries message k of every stream, sends before receives. One message per FIFO per
// round keeps every group deadlock-free whatever the number of sends to one peer: a send of round
// k waits only for the receiver to have consumed round k - kPipeSlots, which it did in an earlier
// round of its own, and receives wait only for sends, which never wait on the current round.
//
// Large operations between windows skip the FIFOs (rendezvous): the receiver offers its
// destination window (a symmetric or registered buffer) at kernel start, and every block of the
// sender writes its share straight into it, counting the bytes into the receiver's tally. An
// operation takes that path when both sides can tell from its size alone (the sender learns
// only from the offer whether the receiver has a window; without one both sides fall back to
// the FIFOs). The offers are posted before any round, so a rendezvous never waits on a round.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/common/coll_args.h"
#include "collectives/schedule/step.hpp"

namespace ccl::coll {

/// Smallest operation that goes through a rendezvous (an offer costs one flag round trip, which
/// a FIFO copy of this size already outlasts).
inline constexpr size_t kP2pRendezvousFrom = size_t{256} << 10;
/// Blocks of a point-to-point kernel whose group sends at least one such operation: the FIFO
/// channels and as many again that only copy rendezvous shares.
inline constexpr int kP2pBlocks = 32;

CCL_HD bool p2p_rendezvous(size_t bytes) {
  return bytes >= kP2pRendezvousFrom;
}

/// Threads per block of a point-to-point launch: one per 16 bytes of the largest operation's
/// share of a FIFO channel, in whole warps, at most `most`. Every warp of a block runs the FIFO
/// bookkeeping between the block's barriers, so a small call on 512 threads waits for 16 warps at
/// each step (one H200, a rank to itself, 8 B in a graph: 5.67 us a call on 512 threads, 5.36 on
/// 32).
template <typename Op>
CCL_HD int p2p_threads(const Op* ops, int nops, int most) {
  size_t largest = 0;
  for (int i = 0; i < nops; ++i) largest = ops[i].bytes > largest ? ops[i].bytes : largest;
  const size_t share = (largest + kPipeChannels - 1) / kPipeChannels;
  const size_t threads = ((share + 15) / 16 + 31) / 32 * 32;
  return threads < 32 ? 32 : threads > static_cast<size_t>(most) ? most : static_cast<int>(threads);
}

/// Messages of the earlier operations in operation i's stream: operation i carries, in round k,
/// its message k - p2p_stream_offset(...) when that is in [0, msgs[i]).
template <typename Op>
CCL_HD size_t p2p_stream_offset(const Op* ops, const size_t* msgs, int i) {
  size_t off = 0;
  for (int j = 0; j < i; ++j)
    if (ops[j].peer == ops[i].peer && (ops[j].is_send != 0) == (ops[i].is_send != 0))
      off += msgs[j];
  return off;
}

/// Rendezvous operations of ops[0..nops) with `peer` in one direction.
template <typename Op>
CCL_HD uint64_t p2p_rendezvous_count(const Op* ops, int nops, int peer, bool is_send) {
  uint64_t k = 0;
  for (int j = 0; j < nops; ++j)
    k += ops[j].peer == peer && (ops[j].is_send != 0) == is_send && p2p_rendezvous(ops[j].bytes);
  return k;
}

/// Rendezvous operations before operation i in its (peer, direction) stream: operation i's offer
/// is the pair's offers so far plus this plus one.
template <typename Op>
CCL_HD uint64_t p2p_rendezvous_before(const Op* ops, int i) {
  return p2p_rendezvous_count(ops, i, ops[i].peer, ops[i].is_send != 0);
}

/// Part `part` of `parts` of an operation of `bytes` bytes: whole 16-byte units, balanced, and
/// the last part also takes the bytes past the last whole unit. Blocks split rendezvous copies
/// and channels split FIFO operations this way, so every copy but one stays 16-byte aligned.
CCL_HD void p2p_share(size_t bytes, int parts, int part, size_t* lo, size_t* len) {
  partition(bytes / 16, parts, part, lo, len);
  *lo *= 16;
  *len *= 16;
  if (part == parts - 1) *len += bytes % 16;
}

/// Offers of one pair form a ring of kMaxP2pOps at the sender: offer q (1-based) goes to this
/// slot, once the sender has read offer q - kMaxP2pOps (the count below; 0: nothing to wait for).
CCL_HD size_t p2p_offer_slot(uint64_t q) {
  return static_cast<size_t>((q - 1) % kMaxP2pOps);
}
CCL_HD uint64_t p2p_offers_read_before(uint64_t q) {
  return q > kMaxP2pOps ? q - kMaxP2pOps : 0;
}

}  // namespace ccl::coll
