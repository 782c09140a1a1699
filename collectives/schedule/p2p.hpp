// SPDX-License-Identifier: Apache-2.0
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
// With GICL_P2P_COPY_ENGINE the sender's block 0 hands such a copy to the copy-engine proxy
// (src/proxy) instead and adds the bytes to the tally once the proxy reports it complete; the
// receiver cannot tell the two apart.
//
// Small operations skip the FIFOs the other way (p2p_ll below): the data goes with its flags into
// rows of their own at the receiver, on blocks of their own, and waits only on the receiver's
// credit for the row's previous use, never on a FIFO round.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/schedule/limits.hpp"
#include "collectives/schedule/step.hpp"

namespace gicl::coll {

/// A group's operations fall into batches, each at most kMaxP2pOps operations on any rank; a
/// launch runs one or more consecutive batches (p2p_plan.hpp). Both ranks of a (peer, direction)
/// stream compute the same batch for each of its operations from what both know (the operation's
/// place in the stream, the peer's distance and the rank count), so a send and its receive are
/// always in the same batch, whatever else either group holds and however each rank packs its
/// batches into launches. A launch runs its batches one after another (p2p_kernel: a batch's
/// offers are read, its zero-copy shares written and its FIFO rounds run after the batch before
/// it is through its rounds), so every wait of batch b is on its partners' batch b or earlier: no
/// group deadlocks, whatever its size. (Cutting where a rank's own group is too large would not
/// do: its partner's uncut launch would wait, FIFO rounds and all, for an operation in this
/// rank's later launch; tests/unit/coll_p2p_launches_test.cc shows it.)
///
/// A batch takes from each stream p2p_batch_ops(nranks) consecutive operations. Up to 32 ranks
/// every distance (peer) is in every batch, as many operations a stream as keep the batch to
/// kMaxP2pOps with every stream full (self included); beyond, one operation a stream and the
/// distances in groups of kMaxP2pOps / 2.
GICL_HD int p2p_batch_ops(int nranks) {
  const int q = kMaxP2pOps / 2 / (nranks < 1 ? 1 : nranks);
  return q < 1 ? 1 : q;
}

/// Distance from this rank to the peer of an operation, the same number on both ranks of a pair
/// (a send's receiver is as far ahead as the receive's sender is behind).
GICL_HD int p2p_distance(int rank, int peer, bool is_send, int nranks) {
  return is_send ? (peer - rank + nranks) % nranks : (rank - peer + nranks) % nranks;
}

/// The batch of an operation with `before` earlier operations in its stream and its peer at
/// distance d.
GICL_HD int p2p_batch(int before, int d, int nranks) {
  constexpr int kDistances = kMaxP2pOps / 2;
  const int groups = nranks > kDistances ? (nranks + kDistances - 1) / kDistances : 1;
  return before / p2p_batch_ops(nranks) * groups + (groups > 1 ? d / kDistances : 0);
}

/// The batch of operation i of a group (in group order) on `rank` of `nranks`.
template <typename Op>
GICL_HD int p2p_batch_of(const Op* ops, int i, int nranks, int rank) {
  int before = 0;
  for (int j = 0; j < i; ++j)
    before += ops[j].peer == ops[i].peer && (ops[j].is_send != 0) == (ops[i].is_send != 0);
  return p2p_batch(before, p2p_distance(rank, ops[i].peer, ops[i].is_send != 0, nranks), nranks);
}

/// Smallest operation that goes through a rendezvous (an offer costs one flag round trip, which
/// a FIFO copy of this size already outlasts).
inline constexpr size_t kP2pRendezvousFrom = size_t{256} << 10;
/// Blocks of a point-to-point kernel whose group sends at least one such operation (the FIFO
/// channels and as many again that only copy rendezvous shares), or whose FIFO channels send and
/// receive on blocks of their own (p2p_kernel, fifo_split).
inline constexpr int kP2pBlocks = 32;
static_assert(kP2pBlocks >= 2 * kPipeChannels, "a sending and a receiving block per channel");
/// Blocks that copy a group's rendezvous sends to the rank itself while the kP2pBlocks write its
/// sends to peers (where launches have no block limit), as the direct kernels' local blocks do.
inline constexpr int kP2pSelfBlocks = 16;
/// Smallest send to a peer that the SMs copy beside which a pair with the rank itself stays in
/// the kernel on those blocks, rather than a local copy before the launch. 2 x H200, alltoall as
/// grouped send/recv (the pair is half the size), kernel against copy first, two runs each: 1 MiB
/// 17.7 / 17.8 against 15.3 / 13.2 us, 8 MiB 26.0 / 26.0 against 24.5 / 24.9, 16 MiB 37.7 / 38.0
/// against 38.7 / 38.2, 64 MiB 108.8 against 123.4, 256 MiB 391.4 against 455.8.
inline constexpr size_t kP2pSelfBesideFrom = size_t{8} << 20;
GICL_HD bool p2p_self_beside(size_t peer_send_bytes) {
  return peer_send_bytes >= kP2pSelfBesideFrom;
}

GICL_HD bool p2p_rendezvous(size_t bytes) {
  return bytes >= kP2pRendezvousFrom;
}

/// Whether operation `op` takes the rendezvous: by its size, and never with a peer on the network
/// path (`op.net`), which can neither write into an offered window nor carry the offer (its
/// source is not in the heap). Both ranks of a pair agree, so their offer counts do.
template <typename Op>
GICL_HD bool p2p_rendezvous_of(const Op& op) {
  return !op.net && p2p_rendezvous(op.bytes);
}

/// Whether a send of `bytes` to another rank is the copy-engine proxy's under
/// GICL_P2P_COPY_ENGINE=`ce_from` (0: none): a rendezvous send of at least that size.
GICL_HD bool p2p_copy_engine(size_t bytes, size_t ce_from) {
  return ce_from != 0 && p2p_rendezvous(bytes) && bytes >= ce_from;
}

/// Rows of each (sender, receiver) pair for LL operations: a sender may run this many operations
/// ahead of its receiver, as many as a FIFO has slots (a rank may send that many small messages,
/// each in its own launch, before it receives).
inline constexpr int kP2pLLSlots = kPipeSlots;

/// Largest operation carried LL-style (below). Its rows are one per (slot, sender) at every
/// receiver, 2 x capacity bytes each (8 x nranks x capacity of heap in all): 64 KiB up to 16
/// ranks, never below 8 KiB.
GICL_HD constexpr size_t p2p_ll_capacity(int nranks) {
  const size_t share = (size_t{1} << 20) / static_cast<size_t>(nranks < 1 ? 1 : nranks) / 256 * 256;
  return share > (64 << 10) ? (64 << 10) : share < (8 << 10) ? (8 << 10) : share;
}

/// Operations of 1 to p2p_ll_capacity(nranks) bytes (`cap`, which launches take from the
/// scratch's row size: no division on the kernel's path) travel LL-style: the sender stores each
/// 8 bytes with the operation's sequence number q as their flag straight into a row at the
/// receiver, which polls the flags: no FIFO slot, no fence, no separate signal. Operation q uses
/// row slot p2p_ll_slot(q); a sender reuses a slot once the receiver has credited operation
/// q - kP2pLLSlots there. A slot's credit only grows because a receive completes only after its
/// send, which waited for the credit before it; an empty receive would complete at once and
/// credit ahead of unread ones (the model in tests/unit/coll_p2p_ll_test.cc found it), so empty
/// operations take the FIFO path, where they move nothing. Both sides tell from the size alone.
static_assert(p2p_ll_capacity(1) < kP2pRendezvousFrom, "an operation takes one path");
GICL_HD bool p2p_ll(size_t bytes, size_t cap) {
  return bytes > 0 && bytes <= cap;
}

/// Whether operation `op` travels LL-style: by its size, and never to a peer on the network path
/// (`op.net`), whose LL rows this rank cannot store into.
template <typename Op>
GICL_HD bool p2p_ll_of(const Op& op, size_t cap) {
  return !op.net && p2p_ll(op.bytes, cap);
}

/// Bytes that lead every FIFO message to a network peer: the operation's size (8 bytes, padded to
/// keep the payload 16-byte aligned), which the receiver checks as a load/store peer's size word
/// beside the slot is checked (the proxy carries only the message).
inline constexpr size_t kP2pNetHeader = 16;

/// FIFO channels that share an operation's bytes: all of them for a load/store peer; for a network
/// peer as many as its messages of `room` bytes fill, 1 to kPipeChannels. Each message to a network
/// peer is a proxy write and a credit back, so a small operation split 16 ways would wait for 16
/// of them (4 x H200, tcp loopback: 330 us for a 512 B sendrecv so split, 43 us in one message).
GICL_HD int p2p_fifo_parts(size_t bytes, bool net, size_t room) {
  if (!net) return kPipeChannels;
  const size_t n = (bytes + room - 1) / room;
  return n < 1 ? 1 : n > static_cast<size_t>(kPipeChannels) ? kPipeChannels : static_cast<int>(n);
}

/// Row slot of LL operation q, and the credit (the receiver's last completed operation in that
/// slot) its sender must see first: 0 for the first kP2pLLSlots operations.
GICL_HD int p2p_ll_slot(uint64_t q) {
  return static_cast<int>(q % kP2pLLSlots);
}
GICL_HD uint64_t p2p_ll_credit_needed(uint64_t q) {
  return q > kP2pLLSlots ? q - kP2pLLSlots : 0;
}

/// LL operations before operation i in the group with the same peer and direction: operation i
/// is the pair's LL operation number (count so far) + this + 1.
template <typename Op>
GICL_HD uint64_t p2p_ll_before(const Op* ops, int i, size_t cap) {
  uint64_t k = 0;
  for (int j = 0; j < i; ++j)
    k += ops[j].peer == ops[i].peer && (ops[j].is_send != 0) == (ops[i].is_send != 0) &&
         p2p_ll_of(ops[j], cap);
  return k;
}

/// Blocks of the LL operations of one launch, at most (a spin-waiting grid must be co-resident).
inline constexpr int kP2pLLBlocks = 32;

/// LL operations of a group.
template <typename Op>
GICL_HD int p2p_ll_count(const Op* ops, int nops, size_t cap) {
  int nll = 0;
  for (int i = 0; i < nops; ++i) nll += p2p_ll_of(ops[i], cap);
  return nll;
}

/// Blocks each of `nll` LL operations may take when they have `budget` blocks together (fewer
/// than kP2pLLBlocks where ranks share a GPU: collectives/host/residency.cc).
GICL_HD int p2p_ll_most(int nll, int budget = kP2pLLBlocks) {
  return nll > 0 && budget / nll > 1 ? budget / nll : 1;
}

/// Blocks of one LL operation of `bytes` (at most the capacity: 32-bit arithmetic) with
/// `threads` per block: a thread per 8-byte unit (a receiver polls its units in turn, so units
/// per thread are latency), at most `most`, at least one.
GICL_HD int p2p_ll_blocks(size_t bytes, int threads, int most) {
  const uint32_t units = static_cast<uint32_t>((bytes + 7) / 8), t = static_cast<uint32_t>(threads);
  const uint32_t want = (units + t - 1) / t;
  return want < 1 ? 1 : want > static_cast<uint32_t>(most) ? most : static_cast<int>(want);
}

/// Which LL operation the launch's k-th LL block runs (its index in ops, or -1), which of that
/// operation's blocks it is (*part) and how many it has (*blocks); unless p2p_ll_looped.
template <typename Op>
GICL_HD int p2p_ll_op(const Op* ops, int nops, int k, int threads, size_t cap, int* part,
                      int* blocks, int budget = kP2pLLBlocks) {
  const int most = p2p_ll_most(p2p_ll_count(ops, nops, cap), budget);
  for (int i = 0; i < nops; ++i) {
    if (!p2p_ll_of(ops[i], cap)) continue;
    const int b = p2p_ll_blocks(ops[i].bytes, threads, most);
    if (k < b) {
      *part = k;
      *blocks = b;
      return i;
    }
    k -= b;
  }
  return -1;
}

/// Whether a launch's `nll` LL operations outnumber the blocks ranks sharing a GPU leave them
/// (`limit`; 0: no limit): then `limit` blocks each run several of them in turn, one block an
/// operation, in the order p2p_ll_precedes gives (a block per operation would overrun what the
/// sharers may keep resident together, and a spin-waiting grid must be resident).
GICL_HD bool p2p_ll_looped(int nll, int limit) {
  return limit > 0 && nll > limit;
}

/// The order in which looped LL blocks run their operations: by batch (Op::batch), then by the
/// round of kP2pLLSlots the sequence number q falls in, sends before receives, then by place.
/// A send of round r waits only for the receive of round r - 1 that credits its row, a receive
/// only for its send: each wait is on an operation earlier in this order on its rank, so blocks
/// that take theirs in this order never wait on one another in a circle (for blocks that hold
/// every wait it is the same order as the batches' and rounds').
template <typename Op>
GICL_HD bool p2p_ll_precedes(const Op* ops, const uint64_t* q, int j, int i) {
  if (ops[j].batch != ops[i].batch) return ops[j].batch < ops[i].batch;
  const uint64_t rj = (q[j] - 1) / kP2pLLSlots, ri = (q[i] - 1) / kP2pLLSlots;
  if (rj != ri) return rj < ri;
  if ((ops[j].is_send != 0) != (ops[i].is_send != 0)) return ops[j].is_send != 0;
  return j < i;
}

/// Blocks of all the LL operations of a launch.
template <typename Op>
GICL_HD int p2p_ll_grid(const Op* ops, int nops, int threads, size_t cap, int budget = kP2pLLBlocks,
                        int limit = 0) {
  if (p2p_ll_looped(p2p_ll_count(ops, nops, cap), limit)) return limit;
  const int most = p2p_ll_most(p2p_ll_count(ops, nops, cap), budget);
  int grid = 0;
  for (int i = 0; i < nops; ++i)
    if (p2p_ll_of(ops[i], cap)) grid += p2p_ll_blocks(ops[i].bytes, threads, most);
  return grid;
}

/// Threads per block of a point-to-point launch, in whole warps, 32..most: one per 16 bytes of
/// the largest FIFO or rendezvous operation's share of a channel, and one per 8-byte unit of the
/// largest LL operation. Every warp of a block runs the FIFO bookkeeping between the block's
/// barriers, so a small call on 512 threads waits for 16 warps at each step (one H200, a rank to
/// itself, 8 B through the FIFOs in a graph: 5.67 us a call on 512 threads, 5.36 on 32).
template <typename Op>
GICL_HD int p2p_threads(const Op* ops, int nops, int most, size_t cap) {
  size_t need = 0;
  for (int i = 0; i < nops; ++i) {
    const size_t b = ops[i].bytes;
    const size_t t =
        p2p_ll_of(ops[i], cap) ? (b + 7) / 8 : ((b + kPipeChannels - 1) / kPipeChannels + 15) / 16;
    need = t > need ? t : need;
  }
  const size_t threads = (need + 31) / 32 * 32;
  return threads < 32 ? 32 : threads > static_cast<size_t>(most) ? most : static_cast<int>(threads);
}

/// Messages of the earlier operations in operation i's stream: operation i carries, in round k,
/// its message k - p2p_stream_offset(...) when that is in [0, msgs[i]). `ops` is one batch (a
/// launch runs its batches' rounds one batch after another).
template <typename Op>
GICL_HD size_t p2p_stream_offset(const Op* ops, const size_t* msgs, int i) {
  size_t off = 0;
  for (int j = 0; j < i; ++j)
    if (ops[j].peer == ops[i].peer && (ops[j].is_send != 0) == (ops[i].is_send != 0))
      off += msgs[j];
  return off;
}

/// Rendezvous operations of ops[0..nops) with `peer` in one direction.
template <typename Op>
GICL_HD uint64_t p2p_rendezvous_count(const Op* ops, int nops, int peer, bool is_send) {
  uint64_t k = 0;
  for (int j = 0; j < nops; ++j)
    k += ops[j].peer == peer && (ops[j].is_send != 0) == is_send && p2p_rendezvous_of(ops[j]);
  return k;
}

/// Rendezvous operations before operation i in its (peer, direction) stream: operation i's offer
/// is the pair's offers so far plus this plus one.
template <typename Op>
GICL_HD uint64_t p2p_rendezvous_before(const Op* ops, int i) {
  return p2p_rendezvous_count(ops, i, ops[i].peer, ops[i].is_send != 0);
}

/// Part `part` of `parts` of an operation of `bytes` bytes: whole 16-byte units, balanced, and
/// the last part also takes the bytes past the last whole unit. Blocks split rendezvous copies
/// and channels split FIFO operations this way, so every copy but one stays 16-byte aligned.
GICL_HD void p2p_share(size_t bytes, int parts, int part, size_t* lo, size_t* len) {
  partition(bytes / 16, parts, part, lo, len);
  *lo *= 16;
  *len *= 16;
  if (part == parts - 1) *len += bytes % 16;
}

/// Bytes of a copy-engine send of `bytes` that the copy engine copies when it takes `share`
/// percent (GICL_P2P_COPY_ENGINE_SHARE): the tail, whole 16-byte units (all of it at 100 %); the
/// sender's blocks copy the head, bytes - that.
GICL_HD size_t p2p_ce_bytes(size_t bytes, int share) {
  if (share >= 100) return bytes;
  return share <= 0 ? 0 : bytes / 100 * static_cast<size_t>(share) / 16 * 16;
}

/// Offers of one pair form a ring of kMaxP2pOps at the sender: offer q (1-based) goes to this
/// slot, once the sender has read offer q - kMaxP2pOps (the count below; 0: nothing to wait for).
GICL_HD size_t p2p_offer_slot(uint64_t q) {
  return static_cast<size_t>((q - 1) % kMaxP2pOps);
}
GICL_HD uint64_t p2p_offers_read_before(uint64_t q) {
  return q > kMaxP2pOps ? q - kMaxP2pOps : 0;
}

}  // namespace gicl::coll
