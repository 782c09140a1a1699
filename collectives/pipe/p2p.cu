// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <atomic>
#include <climits>

#include "collectives/common/launch_table.cuh"
#include "collectives/common/ll_units.cuh"
#include "collectives/pipe/fifo.cuh"
#include "collectives/pipe/p2p.cuh"
#include "collectives/schedule/p2p.hpp"
#include "common/kernel_launch.cuh"
#include "gicl/device/detail/copy_queue.cuh"

namespace gicl::coll {
namespace {

constexpr int kThreads = kPipeThreads;

/// p2p_ll_capacity(nranks) as the launch and the kernel take it: from the row size, so that the
/// kernel's path has no division by the rank count.
__host__ __device__ __forceinline__ size_t p2p_ll_cap(const CollScratch& s) {
  return s.p2p_ll_entries * 4;
}

/// First block of the LL operations: after the FIFO and rendezvous blocks and the self blocks.
__device__ __forceinline__ int ll_first(const P2pArgs& a) {
  return a.fifo_blocks + a.self_blocks;
}

/// Whether operation i of the group is a receive that takes the rendezvous path with a window.
__device__ __forceinline__ bool zero_copy_recv(const P2pOp& op) {
  return !op.is_send && p2p_rendezvous_of(op) && op.win != kNoWindow;
}

/// Block-wide: whether a network peer's message (its slot in the inbox) names the receive's size
/// in its header; else reported as a load/store peer's size word is (recv_begin), naming the
/// sender and both sizes, and false before a byte is stored.
__device__ bool net_size_matches(const gicl_device_comm_t& c, Fifo& f, const char* slot,
                                 const P2pOp& op) {
  if (threadIdx.x == 0)
    size_word_matches(c, f, reinterpret_cast<const uint64_t*>(slot), op.bytes, op.peer);
  __syncthreads();
  return !f.fail;
}

/// Block 0, one thread: offers every rendezvous receive's window to its sender (a ring of
/// kMaxP2pOps per pair at the sender, freed as the sender reports offers read).
__device__ bool post_offers(const gicl_device_comm_t& c, const CollScratch& s, const P2pArgs& a) {
  for (int i = 0; i < a.nops; ++i) {
    const P2pOp& op = a.ops[i];
    if (op.is_send || !p2p_rendezvous_of(op)) continue;
    const uint64_t q = ++s.p2p[op.peer].offers_made, need = p2p_offers_read_before(q);
    if (need > 0 && !wait_for_peer(c, s.offers_read + op.peer, need, op.peer)) return false;
    P2pOffer* o = s.offers + static_cast<size_t>(c.rank) * kMaxP2pOps + p2p_offer_slot(q);
    const uint64_t offer[2] = {op.win, op.bytes};  // o->win, o->bytes
    dev::put_signal(c, &o->win, offer, sizeof(offer), &o->seq, q, dev::SignalOp::kSet, op.peer);
  }
  return true;
}

/// Every block, one thread: the receivers' windows for the rendezvous sends of one batch, ops
/// [lo, hi) (kNoWindow: through the FIFOs). The batch's last block to have read tells each
/// receiver how many of its offers were read, freeing its ring; the launch's last such batch
/// advances the pairs' counts for the next launch (every block has read every batch by then; until
/// then every block numbers offers from the counts as the launch found them). A receive of
/// another size than its send fails the launch (reported as a bad argument naming the receiver,
/// both sizes) before a byte is written: a larger send would write past the window, or past the
/// FIFO messages the receiver takes.
template <bool kBatches>
__device__ bool read_offers(const gicl_device_comm_t& c, const CollScratch& s, const P2pArgs& a,
                            int lo, int hi, uint64_t* win) {
  bool any = false;
  for (int i = lo; i < hi; ++i) {
    const P2pOp& op = a.ops[i];
    win[i] = kNoWindow;
    if (!op.is_send || !p2p_rendezvous_of(op)) continue;
    any = true;
    const uint64_t q = s.p2p[op.peer].offers_read + p2p_rendezvous_before(a.ops, i) + 1;
    const P2pOffer* o = s.offers + static_cast<size_t>(op.peer) * kMaxP2pOps + p2p_offer_slot(q);
    if (!wait_for_peer(c, &o->seq, q, op.peer, GICL_OP_SIGNAL_WAIT)) return false;
    win[i] = __ldcg(&o->win);
    const uint64_t offered = __ldcg(&o->bytes);
    if (offered != op.bytes)
      return dev::detail::report(dev::detail::reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT,
                                 GICL_OP_COLLECTIVE, op.peer, &o->bytes, op.bytes, offered, 0);
  }
  if (!any) return true;
  __threadfence();
  uint32_t* readers = s.p2p_readers + a.ops[lo].batch;
  if (atomicAdd(readers, 1u) != static_cast<unsigned>(ll_first(a)) - 1) return true;
  *readers = 0;
  if constexpr (!kBatches) {
    // The launch is the batch: one pass over its first rendezvous send to each peer.
    for (int i = 0; i < a.nops; ++i) {
      const P2pOp& op = a.ops[i];
      if (!op.is_send || !p2p_rendezvous_of(op) || p2p_rendezvous_before(a.ops, i) != 0) continue;
      const uint64_t k = p2p_rendezvous_count(a.ops, a.nops, op.peer, true);
      s.p2p[op.peer].offers_read += k;
      dev::signal(c, s.offers_read + c.rank, k, dev::SignalOp::kAdd, op.peer);
    }
    return true;
  }
  bool last = true;  // no rendezvous send after this batch
  for (int i = hi; i < a.nops && last; ++i)
    last = !(a.ops[i].is_send && p2p_rendezvous_of(a.ops[i]));
  for (int i = lo; i < hi; ++i) {
    const P2pOp& op = a.ops[i];
    if (!op.is_send || !p2p_rendezvous_of(op)) continue;
    bool first = true;  // the batch's first rendezvous send to this peer reports for all of them
    for (int j = lo; j < i && first; ++j)
      first = !(a.ops[j].peer == op.peer && a.ops[j].is_send && p2p_rendezvous_of(a.ops[j]));
    if (!first) continue;
    const uint64_t before = p2p_rendezvous_count(a.ops, lo, op.peer, true);
    const uint64_t through = p2p_rendezvous_count(a.ops, hi, op.peer, true);
    // Added, not set: two batches' last readers may report out of order.
    dev::signal(c, s.offers_read + c.rank, through - before, dev::SignalOp::kAdd, op.peer);
  }
  if (!last) return true;
  // Every peer the launch sent a rendezvous operation to, in this batch or an earlier one.
  for (int i = 0; i < hi; ++i) {
    const P2pOp& op = a.ops[i];
    if (op.is_send && p2p_rendezvous_of(op) && p2p_rendezvous_before(a.ops, i) == 0)
      s.p2p[op.peer].offers_read += p2p_rendezvous_count(a.ops, a.nops, op.peer, true);
  }
  return true;
}

/// Bytes of operation i the copy engine copies: the tail of a copy_engine send whose receiver
/// offered a window (`win`), 0 for any other operation. The sender's blocks copy the rest.
__device__ __forceinline__ size_t copy_engine_bytes(const P2pArgs& a, int i, uint64_t win) {
  const P2pOp& op = a.ops[i];
  return op.is_send && op.copy_engine && win != kNoWindow ? p2p_ce_bytes(op.bytes, a.ce_share) : 0;
}

/// Block 0, one thread, after read_offers: hands the copy engine's part of each send of ops
/// [lo, hi) to the proxy; *last becomes the number of the last copy posted (left as it was when
/// none is), *peer its receiver (for reports).
__device__ bool post_copies(const gicl_device_comm_t& c, const CollScratch& s, const P2pArgs& a,
                            int lo, int hi, const uint64_t* win, uint64_t* last, int* peer) {
  for (int i = lo; i < hi; ++i) {
    const P2pOp& op = a.ops[i];
    const size_t ce = copy_engine_bytes(a, i, win[i]), head = op.bytes - ce;
    if (ce == 0) continue;
    *last = copy_post(dev::detail::reporter(c), a.ce, window<char>(c, s, op.peer, win[i]) + head,
                      static_cast<const char*>(op.buf) + head, ce, op.peer);
    if (*last == 0) return false;
    *peer = op.peer;
  }
  return true;
}

/// Block 0, one thread: waits for the proxy to complete copies up to `last`, then adds each
/// copy-engine part to its receiver's tally, as the blocks do for the shares they copy.
__device__ bool await_copies(const gicl_device_comm_t& c, const CollScratch& s, const P2pArgs& a,
                             const uint64_t* win, uint64_t last, int peer) {
  if (!copy_wait(dev::detail::reporter(c), a.ce, last, peer)) return false;
  dev::detail::fence_system();  // the copies (seen complete) before the tallies
  for (int i = 0; i < a.nops; ++i)
    if (const size_t ce = copy_engine_bytes(a, i, win[i]); ce > 0)
      dev::signal(c, s.zc_bytes + c.rank, ce, dev::SignalOp::kAdd, a.ops[i].peer);
  return true;
}

/// Block 0, one thread, after every other part: waits until each sender has written all the
/// bytes of this group's zero-copy receives (its running tally at this rank). A failed wait has
/// reported itself (gicl_comm_get_async_error).
__device__ void await_zero_copy(const gicl_device_comm_t& c, const CollScratch& s,
                                const P2pArgs& a) {
  for (int i = 0; i < a.nops; ++i) {
    const P2pOp& op = a.ops[i];
    if (!zero_copy_recv(op)) continue;
    bool first = true;
    for (int j = 0; j < i; ++j) first &= !(zero_copy_recv(a.ops[j]) && a.ops[j].peer == op.peer);
    if (!first) continue;
    uint64_t& due = s.p2p[op.peer].bytes_due;
    for (int j = i; j < a.nops; ++j)
      if (zero_copy_recv(a.ops[j]) && a.ops[j].peer == op.peer) due += a.ops[j].bytes;
    if (!wait_for_peer(c, s.zc_bytes + op.peer, due, op.peer, GICL_OP_SIGNAL_WAIT)) return;
  }
}

/// Sequence number of LL operation i: the pair's count as the launch found it, plus this.
__device__ __forceinline__ uint64_t ll_seq(const CollScratch& s, const P2pArgs& a, int i,
                                           size_t cap) {
  const P2pCounts& pc = s.p2p[a.ops[i].peer];
  return (a.ops[i].is_send ? pc.ll_sent : pc.ll_rcvd) + p2p_ll_before(a.ops, i, cap) + 1;
}

/// Part `part` of `parts` of LL operation i (sequence number q), a thread per 8-byte unit. A send
/// stores each 8 bytes as two (data, sequence) entries into its row at the receiver once the
/// receiver has credited the row's previous use; a receive polls its row and stores the data,
/// and its last block to finish credits the sender. False when a wait failed (reported).
__device__ bool ll_op(const gicl_device_comm_t& c, const CollScratch& s, const P2pArgs& a, int i,
                      uint64_t q, int part, int parts) {
  const int n = c.nranks, me = c.rank;
  const P2pOp& op = a.ops[i];
  const uint32_t flag = ll_flag(q);
  const size_t units = (op.bytes + 7) / 8, stride = static_cast<size_t>(parts) * blockDim.x;
  const size_t first = static_cast<size_t>(part) * blockDim.x + threadIdx.x;
  char* buf = static_cast<char*>(op.buf);
  // The (slot, sender) row at the receiver; the sender keeps a credit per slot.
  const int slot = p2p_ll_slot(q);
  uint64_t* row =
      s.p2p_ll + (static_cast<size_t>(slot) * n + (op.is_send ? me : op.peer)) * s.p2p_ll_entries;
  bool failed = false;
  if (op.is_send) {
    const uint64_t need = p2p_ll_credit_needed(q);
    if (threadIdx.x == 0 && need > 0)
      failed = !wait_for_peer(c, s.p2p_ll_credit + kP2pLLSlots * op.peer + slot, need, op.peer);
    if (__syncthreads_or(failed)) return false;
    uint64_t* to = dev::peer_ptr(c, row, op.peer);
    for (size_t u = first; u < units; u += stride)
      ll_store(to + 2 * u, load_unit(buf, u * 8, op.bytes), flag);
    // Once every 2^31 operations per slot the rest of the row too (ll_refresh).
    if (ll_refresh(q, kP2pLLSlots))
      ll_refresh_row(to, units, s.p2p_ll_entries / 2, flag, first, stride);
    return true;
  }
  for (size_t u = first; u < units && !failed; u += stride) {
    uint64_t v;
    failed = !ll_wait(c, row + 2 * u, flag, op.peer, &v);
    if (!failed) store_unit(buf, u * 8, op.bytes, v);
  }
  if (__syncthreads_or(failed)) return false;
  // The entries read were consumed (stored above): no fence before the credit.
  if (threadIdx.x == 0 && (parts == 1 || atomicAdd(s.p2p_ll_read + i, 1u) == parts - 1)) {
    if (parts > 1) s.p2p_ll_read[i] = 0;
    dev::signal(c, s.p2p_ll_credit + kP2pLLSlots * me + slot, q, dev::SignalOp::kSet, op.peer);
  }
  return true;
}

/// The LL operations' blocks (p2p.hpp): each a part of one operation, as far as p2p_ll_blocks
/// allows, or, where the operations outnumber the blocks they may take (p2p_ll_looped), each
/// several whole operations in p2p_ll_precedes order. The last LL block of the launch advances
/// the pairs' counts for the next launch.
template <bool kLooped>
__device__ void p2p_ll_block(const gicl_device_comm_t& c, const CollScratch& s, const P2pArgs& a) {
  const size_t cap = p2p_ll_cap(s);
  const int k = static_cast<int>(blockIdx.x) - ll_first(a);
  if constexpr (!kLooped) {
    int part = 0, parts = 1;
    const int i =
        p2p_ll_op(a.ops, a.nops, k, static_cast<int>(blockDim.x), cap, &part, &parts, a.ll_budget);
    if (!ll_op(c, s, a, i, ll_seq(s, a, i, cap), part, parts)) return;
  } else {
    // Every LL operation's place in the order, a thread per operation (q: 0 for the others).
    __shared__ uint64_t q[kMaxP2pOps];
    __shared__ int order[kMaxP2pOps];
    for (int i = threadIdx.x; i < a.nops; i += blockDim.x)
      q[i] = p2p_ll_of(a.ops[i], cap) ? ll_seq(s, a, i, cap) : 0;
    __syncthreads();
    for (int i = threadIdx.x; i < a.nops; i += blockDim.x) {
      if (q[i] == 0) continue;
      int place = 0;
      for (int j = 0; j < a.nops; ++j) place += q[j] != 0 && p2p_ll_precedes(a.ops, q, j, i);
      order[place] = i;
    }
    __syncthreads();
    const int blocks = static_cast<int>(gridDim.x) - ll_first(a);
    const int nll = p2p_ll_count(a.ops, a.nops, cap);
    for (int p = k; p < nll; p += blocks)
      if (!ll_op(c, s, a, order[p], q[order[p]], 0, 1)) return;
  }
  if (threadIdx.x != 0) return;
  __threadfence();  // this block's count reads happened before the last block's updates
  if (atomicAdd(s.p2p_ll_done, 1u) != gridDim.x - ll_first(a) - 1) return;
  *s.p2p_ll_done = 0;
  for (int j = 0; j < a.nops; ++j) {
    if (!p2p_ll_of(a.ops[j], cap)) continue;
    P2pCounts& p = s.p2p[a.ops[j].peer];
    ++(a.ops[j].is_send ? p.ll_sent : p.ll_rcvd);
  }
}

/// Point-to-point group. Blocks [0, kPipeChannels) are the FIFO channels, or, where the launch has
/// no block limit (fifo_split), they send and blocks [kPipeChannels, 2 x kPipeChannels) receive
/// (a sending block waits only for its receiver's consumption, a receiving one only for its
/// sender's messages, so neither waits on the other); a group that sends a rendezvous-sized
/// operation runs kP2pBlocks, all of which copy zero-copy shares (not when every such send is the
/// copy engines': block 0 hands those to the proxy and awaits them last); self blocks, where
/// launch_p2p gives them, copy the sends to this rank itself instead. The LL operations' blocks
/// follow from ll_first (a.fifo_blocks is 0 when the group has no other operation). A
/// launch holding several batches (p2p.hpp: p2p_batch_of) runs them one after another, each as a
/// launch of its own did: its offers read, its zero-copy shares written, then its FIFO rounds.
///
/// Instantiated for launches of one batch or several (kBatches: the single-batch kernel has no
/// batch loop, which cost one H100 a microsecond at 256 KiB) and with the LL blocks running an
/// operation each or several (kLooped, p2p_ll_looped).
template <bool kBatches, bool kLooped>
__global__ void __launch_bounds__(kThreads)
    p2p_kernel(gicl_device_comm_t c, CollScratch s, const __grid_constant__ P2pArgs a) {
  // __grid_constant__: the helpers below take `a` by reference, which without it copies the
  // whole parameter (2.6 KiB with its operations) into every thread's stack.
  // Before the PDL wait: the parameters every call reads, and its first operation.
  read_before_wait(comm_fields(c), s.inbox, s.slot_bytes, s.head, s.tail, s.seq, s.offers,
                   s.offers_read, s.zc_bytes, s.p2p, s.p2p_readers, s.p2p_ll, s.p2p_ll_entries,
                   s.p2p_ll_credit, s.p2p_ll_done, s.p2p_ll_read, a.nops, a.fifo_blocks,
                   a.fifo_split, a.self_blocks, a.ops[0].buf, a.ops[0].bytes, a.ops[0].peer,
                   a.ops[0].is_send, a.ops[0].win);
  pdl_prologue();
  if (static_cast<int>(blockIdx.x) >= ll_first(a)) {
    p2p_ll_block<kLooped>(c, s, a);
    return;
  }
  __shared__ Fifo f;
  __shared__ uint64_t zwin[kMaxP2pOps];
  __shared__ int fail;
  __shared__ uint64_t copies;  // block 0: the last copy-engine copy posted (0: none)
  __shared__ int copies_to;    // block 0: that copy's receiver
  // This channel's share of each FIFO operation and where its messages sit in its (peer,
  // direction) stream: the same on every thread, so in shared memory, a thread per operation (as
  // arrays of every thread's own they took 1 KiB of stack a thread, which the driver reserves
  // for every thread the GPU can hold).
  __shared__ size_t lo[kMaxP2pOps], len[kMaxP2pOps], nmsg[kMaxP2pOps], first[kMaxP2pOps];
  // Channel blocks: one per channel, or (fifo_split) a sending and a receiving one per channel, so
  // that a channel's sends to a peer need not wait for its receives from one and the reverse.
  const bool channel = blockIdx.x < (a.fifo_split ? 2 : 1) * kPipeChannels;
  const int ch = static_cast<int>(blockIdx.x) % kPipeChannels;
  const bool self_block = static_cast<int>(blockIdx.x) >= a.fifo_blocks;
  const int sides = !a.fifo_split                                  ? kFifoBoth
                    : static_cast<int>(blockIdx.x) < kPipeChannels ? kFifoSends
                                                                   : kFifoRecvs;
  // Thread 0 posts the offers and reads the first batch's with no barrier between, keeping its
  // verdict in a register (`failed0`) and storing `fail` only to say 1: a test of the shared
  // `fail` in a thread-0 branch may be loaded by every thread ahead of the branch, which
  // racecheck reported racing with the store of 0 here. The others read `fail` after the
  // batch's barrier.
  bool failed0 = false;
  if (threadIdx.x == 0) {
    fail = 0;
    copies = 0;
    failed0 = blockIdx.x == 0 && !post_offers(c, s, a);
  }
  const size_t per = s.slot_bytes;
  for (int b0 = 0, b1 = 0; b0 < a.nops; b0 = b1) {
    if constexpr (kBatches) {
      for (b1 = b0 + 1; b1 < a.nops && a.ops[b1].batch == a.ops[b0].batch;) ++b1;
    } else {
      b1 = a.nops;
    }
    if (threadIdx.x == 0 && !failed0) {
      failed0 = !read_offers<kBatches>(c, s, a, b0, b1, zwin) ||
                (blockIdx.x == 0 && !post_copies(c, s, a, b0, b1, zwin, &copies, &copies_to));
    }
    if (threadIdx.x == 0 && failed0) fail = 1;
    __syncthreads();
    if (fail) return;
    // Zero-copy sends: every block writes its share of the receiver's window and adds it to the
    // receiver's tally (of a copy_engine send only the head the copy engine leaves them). With
    // self blocks, the sends to this rank itself are theirs alone and the others' are not.
    for (int i = b0; i < b1; ++i) {
      const P2pOp& op = a.ops[i];
      if (!op.is_send || zwin[i] == kNoWindow) continue;
      if (a.self_blocks > 0 && (op.peer == c.rank) != self_block) continue;
      const size_t mine = op.bytes - copy_engine_bytes(a, i, zwin[i]);
      if (mine == 0) continue;
      size_t at, n;
      if (self_block)
        p2p_share(mine, a.self_blocks, static_cast<int>(blockIdx.x) - a.fifo_blocks, &at, &n);
      else
        p2p_share(mine, a.fifo_blocks, blockIdx.x, &at, &n);
      copy_slice(window<char>(c, s, op.peer, zwin[i]) + at, static_cast<const char*>(op.buf) + at,
                 n);
      __syncthreads();
      if (threadIdx.x == 0 && n > 0) {
        dev::detail::fence_system();
        dev::signal(c, s.zc_bytes + c.rank, n, dev::SignalOp::kAdd, op.peer);
      }
    }
    if (!channel) continue;
    if (b0 == 0) fifo_load(c, s, f, ch);  // after the first zero-copy writes, off their path
    for (int i = b0 + threadIdx.x; i < b1; i += blockDim.x) {
      const bool fifo = !p2p_ll_of(a.ops[i], p2p_ll_cap(s)) &&
                        (a.ops[i].is_send ? zwin[i] == kNoWindow : !zero_copy_recv(a.ops[i]));
      const size_t bytes = fifo ? a.ops[i].bytes : 0;
      const size_t room = a.ops[i].net ? per - kP2pNetHeader : per;
      const int parts = p2p_fifo_parts(bytes, a.ops[i].net != 0, room);
      lo[i] = len[i] = 0;
      if (ch < parts) p2p_share(bytes, parts, ch, &lo[i], &len[i]);
      nmsg[i] = (len[i] + room - 1) / room;
    }
    __syncthreads();
    for (int i = b0 + threadIdx.x; i < b1; i += blockDim.x)
      first[i] = p2p_stream_offset(a.ops + b0, nmsg + b0, i - b0);
    __syncthreads();
    size_t rounds = 0;
    for (int i = b0; i < b1; ++i)
      if (sides & (a.ops[i].is_send ? kFifoSends : kFifoRecvs))
        rounds = max(rounds, first[i] + nmsg[i]);
    for (size_t k = 0; k < rounds; ++k) {
      for (int pass = 0; pass < 2; ++pass) {
        if (!(sides & (pass == 0 ? kFifoSends : kFifoRecvs))) continue;
        for (int i = b0; i < b1; ++i) {
          const P2pOp& op = a.ops[i];
          if ((op.is_send != 0) != (pass == 0) || k < first[i] || k >= first[i] + nmsg[i]) continue;
          // A network peer's messages lead with the operation's size (kP2pNetHeader).
          const size_t hdr = op.net ? kP2pNetHeader : 0, room = per - hdr;
          const size_t at = (k - first[i]) * room;
          const size_t off = lo[i] + at, b = min(room, len[i] - at);
          // The operation's size with its first message on this channel: the receiver checks
          // it there, where the first mismatched operation of a pair always shows.
          const uint64_t size = k == first[i] ? op.bytes : 0;
          uint64_t m;
          if (op.is_send) {
            char* slot = send_begin(c, s, f, op.peer, &m);
            if (slot == nullptr) return;
            if (hdr != 0 && threadIdx.x == 0) {
              reinterpret_cast<uint64_t*>(slot)[0] = op.bytes;
              reinterpret_cast<uint64_t*>(slot)[1] = 0;
            }
            send_store(c, slot, hdr, static_cast<const char*>(op.buf) + off, b, op.peer);
            send_end(c, s, f, op.peer, m, hdr + b, hdr != 0 ? 0 : size);
          } else {
            const char* slot = recv_begin(c, s, f, op.peer, &m, hdr + b, hdr != 0 ? 0 : size);
            if (slot == nullptr) return;
            if (hdr != 0 && size != 0 && !net_size_matches(c, f, slot, op)) return;
            copy_slice(static_cast<char*>(op.buf) + off, slot + hdr, b);
            recv_end(c, s, f, op.peer, m);
          }
        }
      }
    }
    if constexpr (kBatches) __syncthreads();  // past this batch's shares before the next's
  }
  if (!channel) return;
  fifo_store(c, s, f, sides);
  if (blockIdx.x == 0 && threadIdx.x == 0 &&
      (copies == 0 || await_copies(c, s, a, zwin, copies, copies_to)))
    await_zero_copy(c, s, a);
}

// Every variant: (batches, looped).
constexpr decltype(&p2p_kernel<false, false>) kP2pVariants[] = {
    p2p_kernel<false, false>, p2p_kernel<false, true>, p2p_kernel<true, false>,
    p2p_kernel<true, true>};

const KernelFamily kP2pKernels("send/recv", [] {
  for (auto* k : kP2pVariants)
    if (const cudaError_t e = load_kernel(k); e != cudaSuccess) return e;
  return cudaSuccess;
});

}  // namespace

namespace {

/// Blocks of `threads` threads of the point-to-point kernels (the fewest over the instances) a
/// multiprocessor holds at once, cached per warp count (sm_90 only in this build: one answer a
/// process).
cudaError_t p2p_blocks_per_sm_at(int threads, int* out) {
  static std::atomic<int> cache[kThreads / 32 + 1];
  std::atomic<int>& slot = cache[std::clamp(threads / 32, 0, kThreads / 32)];
  int v = slot.load(std::memory_order_relaxed);
  if (v == 0) {
    v = INT_MAX;
    for (auto* k : kP2pVariants)
      if (const cudaError_t e = fewest_blocks_per_sm(k, threads, &v); e != cudaSuccess) return e;
    slot.store(v, std::memory_order_relaxed);
  }
  *out = v;
  return cudaSuccess;
}

}  // namespace

cudaError_t p2p_blocks_per_sm(int* out) {
  int b = INT_MAX;
  if (const cudaError_t e = p2p_blocks_per_sm_at(kThreads, &b); e != cudaSuccess) return e;
  *out = std::min(*out, b);
  return cudaSuccess;
}

cudaError_t launch_p2p(const gicl_device_comm_t& c, const CollScratch& s, const P2pArgs& args,
                       const Launch& l, int most_blocks) {
  P2pArgs a = args;
  const size_t cap = p2p_ll_cap(s);
  bool fifo = false, rendezvous = false, self_send = false, peer_send = false;
  for (int i = 0; i < a.nops; ++i) {
    const P2pOp& op = a.ops[i];
    fifo |= !p2p_ll_of(op, cap);
    const bool sm = op.is_send && p2p_rendezvous_of(op) &&
                    (!op.copy_engine || p2p_ce_bytes(op.bytes, a.ce_share) < op.bytes);
    rendezvous |= sm;
    if (op.peer == c.rank)
      self_send |= sm;
    else
      peer_send |= sm && p2p_self_beside(op.bytes);
  }
  // Without a block limit each FIFO channel sends and receives on blocks of its own: one block
  // doing both alternated between them, halving a pair's throughput each way (2 x H200,
  // sendrecv_perf on cudaMalloc buffers: 203 GB/s at 128 MiB, where a broadcast through the
  // same FIFOs, one way, ran at 284).
  a.fifo_split = fifo && most_blocks == 0;
  a.fifo_blocks = !fifo ? 0 : rendezvous || a.fifo_split ? kP2pBlocks : kPipeChannels;
  // A rendezvous send to this rank itself beside a large one to a peer that the SMs copy: blocks
  // of its own, so that the copy in HBM runs while the others write over the links, rather than
  // before them on the same blocks (alltoall as grouped send/recv; p2p_self_beside).
  a.self_blocks = most_blocks == 0 && self_send && peer_send ? kP2pSelfBlocks : 0;
  a.ll_budget = kP2pLLBlocks;
  a.ll_limit = 0;
  const int threads = p2p_threads(a.ops, a.nops, kThreads, cap);
  if (most_blocks > 0) {
    // The rendezvous copies split over any number of blocks; the FIFO channels need all of
    // theirs; the LL operations share what is left, several to a block beyond it. The limit
    // counts blocks of the widest kernel; narrower blocks fit more to a multiprocessor.
    if (rendezvous) a.fifo_blocks = std::max(kPipeChannels, std::min(kP2pBlocks, most_blocks / 2));
    a.ll_budget = std::clamp(most_blocks - a.fifo_blocks, 1, kP2pLLBlocks);
    int at = 1, widest = 1;
    if (const cudaError_t e = p2p_blocks_per_sm_at(threads, &at); e != cudaSuccess) return e;
    if (const cudaError_t e = p2p_blocks_per_sm_at(kThreads, &widest); e != cudaSuccess) return e;
    const int64_t fit = static_cast<int64_t>(most_blocks) * at / std::max(widest, 1);
    a.ll_limit = static_cast<int>(std::clamp<int64_t>(fit - a.fifo_blocks, 1, 1 << 20));
  }
  const int grid = a.fifo_blocks + a.self_blocks +
                   p2p_ll_grid(a.ops, a.nops, threads, cap, a.ll_budget, a.ll_limit);
  if (grid == 0) return cudaSuccess;
  const bool batches = a.ops[a.nops - 1].batch != a.ops[0].batch;
  const bool looped = p2p_ll_looped(p2p_ll_count(a.ops, a.nops, cap), a.ll_limit);
  auto* kernel = batches ? (looped ? p2p_kernel<true, true> : p2p_kernel<true, false>)
                         : (looped ? p2p_kernel<false, true> : p2p_kernel<false, false>);
  return launch_kernel(kernel, grid, threads, l, c, s, a);
}

}  // namespace gicl::coll
