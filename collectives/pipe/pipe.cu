#include "collectives/common/kernel_util.cuh"
#include "collectives/common/launch_table.cuh"
#include "collectives/common/ll_units.cuh"
#include "collectives/pipe/pipe.cuh"
#include "collectives/schedule/p2p.hpp"
#include "collectives/schedule/schedule.hpp"
#include "common/kernel_launch.cuh"
#include "proxy/copy_queue.cuh"

namespace ccl::coll {
namespace {

/// p2p_ll_capacity(nranks) as the launch and the kernel take it: from the row size, so that the
/// kernel's path has no division by the rank count.
__host__ __device__ __forceinline__ size_t p2p_ll_cap(const CollScratch& s) {
  return s.p2p_ll_entries * 4;
}

constexpr int kThreads = 512;

/// Where schedule offset o of this channel lives in a working buffer. Blocked buffers
/// (allgather, reduce-scatter) hold n rank blocks `ld` bytes apart, of which this channel owns
/// elements [lo, lo + blk) of each; the schedule sees them back to back.
struct Map {
  char* base;
  size_t ld;   // bytes between rank blocks
  size_t blk;  // elements of each rank block in this channel (0: not blocked)
  size_t lo;   // first element of the channel within a block
  size_t esize;
  __device__ char* at(size_t o) const {
    if (blk == 0) return base + (lo + o) * esize;
    return base + (o / blk) * ld + (lo + o % blk) * esize;
  }
  /// Elements from o that are contiguous in memory (at most `left`).
  __device__ size_t run(size_t o, size_t left) const {
    if (blk == 0) return left;
    const size_t r = blk - o % blk;
    return r < left ? r : left;
  }
};

/// Per-block FIFO state: message counts with every peer (shared memory), loaded from and stored
/// back to the communicator's sequence table so they continue across launches and graph replays.
struct Fifo {
  uint64_t sent[kMaxDirectRanks];
  uint64_t rcvd[kMaxDirectRanks];
  int fail;
};

__device__ void fifo_load(const ccl_device_comm_t& c, const CollScratch& s, Fifo& f) {
  const int ch = blockIdx.x;
  if (threadIdx.x == 0) f.fail = 0;
  for (int j = threadIdx.x; j < c.nranks; j += blockDim.x) {
    f.sent[j] = s.seq[(static_cast<size_t>(j) * kPipeChannels + ch) * 2];
    f.rcvd[j] = s.seq[(static_cast<size_t>(j) * kPipeChannels + ch) * 2 + 1];
  }
  __syncthreads();
}

__device__ void fifo_store(const ccl_device_comm_t& c, const CollScratch& s, const Fifo& f) {
  const int ch = blockIdx.x;
  __syncthreads();
  for (int j = threadIdx.x; j < c.nranks; j += blockDim.x) {
    s.seq[(static_cast<size_t>(j) * kPipeChannels + ch) * 2] = f.sent[j];
    s.seq[(static_cast<size_t>(j) * kPipeChannels + ch) * 2 + 1] = f.rcvd[j];
  }
}

/// Index of the slot of message m (1-based) from `sender` on this channel: [sender][channel][slot].
__device__ __forceinline__ size_t slot_index(int sender, uint64_t m) {
  return (static_cast<size_t>(sender) * kPipeChannels + blockIdx.x) * kPipeSlots +
         (m - 1) % kPipeSlots;
}

/// Slot of message m (1-based) from `sender` on this channel, in the local view of the inbox.
__device__ __forceinline__ char* slot_of(const CollScratch& s, int sender, uint64_t m) {
  return s.inbox + slot_index(sender, m) * s.slot_bytes;
}

/// Where the size of the point-to-point operation of message m from `sender` on this channel is
/// kept (beside its inbox slot, this rank's view).
__device__ __forceinline__ uint64_t* size_of_slot(const CollScratch& s, int sender, uint64_t m) {
  return s.p2p_sizes + slot_index(sender, m);
}

/// Block-wide: waits for a free slot at `peer`, returns its address (this rank's symmetric view
/// of the peer's inbox) or nullptr when the wait failed.
__device__ char* send_begin(const ccl_device_comm_t& c, const CollScratch& s, Fifo& f, int peer,
                            uint64_t* m) {
  const int ch = blockIdx.x;
  // Thread 0 advanced the count at the end of the previous message: read it after a barrier.
  __syncthreads();
  *m = f.sent[peer] + 1;
  if (threadIdx.x == 0 && *m > kPipeSlots &&
      !wait_for_peer(c, s.tail + static_cast<size_t>(peer) * kPipeChannels + ch, *m - kPipeSlots,
                     peer))
    f.fail = 1;
  __syncthreads();
  if (f.fail) return nullptr;
  return slot_of(s, c.rank, *m);
}

/// Block-wide: the message's payload is written; signal it.
/// `size` (point-to-point, an operation's first message on the channel): the operation's size,
/// stored beside the slot before the signal (0: none).
__device__ void send_end(const ccl_device_comm_t& c, const CollScratch& s, Fifo& f, int peer,
                         uint64_t m, uint64_t size = 0) {
  __syncthreads();
  if (threadIdx.x == 0) {
    if (size != 0) dev::p(c, size_of_slot(s, c.rank, m), size, peer);
    dev::detail::fence_system();
    dev::signal(c, s.head + static_cast<size_t>(c.rank) * kPipeChannels + blockIdx.x, m,
                dev::SignalOp::kSet, peer);
  }
  if (threadIdx.x == 0) f.sent[peer] = m;
}

/// Block-wide: waits for the next message from `peer`; returns its slot or nullptr. `size`
/// (point-to-point, an operation's first message on the channel): the receive's size, which the
/// sender's must equal, or the receive fails before storing a byte (reported, naming the sender
/// and both sizes): a larger send would hand its extra messages to the pair's next receives.
__device__ const char* recv_begin(const ccl_device_comm_t& c, const CollScratch& s, Fifo& f,
                                  int peer, uint64_t* m, uint64_t size = 0) {
  __syncthreads();
  *m = f.rcvd[peer] + 1;
  if (threadIdx.x == 0) {
    if (!wait_for_peer(c, s.head + static_cast<size_t>(peer) * kPipeChannels + blockIdx.x, *m, peer,
                       CCL_OP_SIGNAL_WAIT)) {
      f.fail = 1;
    } else if (size != 0) {
      const uint64_t* at = size_of_slot(s, peer, *m);
      const uint64_t sent = __ldcg(at);
      if (sent != size) {
        dev::detail::report(dev::detail::reporter(c), CCL_DEVICE_ERROR_BAD_ARGUMENT,
                            CCL_OP_COLLECTIVE, peer, at, size, sent, 0);
        f.fail = 1;
      }
    }
  }
  __syncthreads();
  if (f.fail) return nullptr;
  return slot_of(s, peer, *m);
}

/// Block-wide: the slot is consumed (its contents are stored); give it back to the sender.
__device__ void recv_end(const ccl_device_comm_t& c, const CollScratch& s, Fifo& f, int peer,
                         uint64_t m) {
  __syncthreads();
  if (threadIdx.x == 0) {
    dev::signal(c, s.tail + static_cast<size_t>(c.rank) * kPipeChannels + blockIdx.x, m,
                dev::SignalOp::kSet, peer);
    f.rcvd[peer] = m;
  }
}

/// Block-wide dst[i] = dst[i] (op) src[i] in the storage type.
template <ccl_datatype_t D, ccl_redop_t Op>
__device__ void reduce_into(char* dst_b, const char* src_b, size_t len) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  constexpr int V = 16 / sizeof(T);
  T* dst = reinterpret_cast<T*>(dst_b);
  const T* src = reinterpret_cast<const T*>(src_b);
  size_t done = 0;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0) {
    const size_t packs = len / V;
    for (size_t p = threadIdx.x; p < packs; p += blockDim.x) {
      const uint4 wa = reinterpret_cast<const uint4*>(dst)[p];
      const uint4 wb = __ldcg(reinterpret_cast<const uint4*>(src) + p);
      T va[V], vb[V];
      memcpy(va, &wa, 16);
      memcpy(vb, &wb, 16);
#pragma unroll
      for (int k = 0; k < V; ++k)
        va[k] = from_acc<T, A>(combine<Op, A>(to_acc<T, A>(va[k]), to_acc<T, A>(vb[k])));
      uint4 w;
      memcpy(&w, va, 16);
      reinterpret_cast<uint4*>(dst)[p] = w;
    }
    done = packs * V;
  }
  for (size_t i = done + threadIdx.x; i < len; i += blockDim.x)
    dst[i] = from_acc<T, A>(combine<Op, A>(to_acc<T, A>(dst[i]), to_acc<T, A>(load_cg(src + i))));
}

/// Sends schedule range [o, o + len) of `w` to `peer` as messages of at most one slot.
/// Receives likewise; the two are interleaved message by message, sends first, so that no pair
/// of ranks waits on each other (see docs/collectives.md, "pipe").
template <ccl_datatype_t D, ccl_redop_t Op>
__device__ bool run_step(const ccl_device_comm_t& c, const CollScratch& s, Fifo& f, const Map& w,
                         const Step& st) {
  const size_t per = s.slot_bytes / w.esize;
  const size_t ns = st.send.peer >= 0 ? (st.send.count + per - 1) / per : 0;
  const size_t nr = st.recv.peer >= 0 ? (st.recv.count + per - 1) / per : 0;
  for (size_t k = 0; k < ns || k < nr; ++k) {
    if (k < ns) {
      uint64_t m;
      char* slot = send_begin(c, s, f, st.send.peer, &m);
      if (slot == nullptr) return false;
      const size_t o0 = st.send.offset + k * per;
      const size_t len = min(per, st.send.count - k * per);
      for (size_t o = 0; o < len;) {
        const size_t r = w.run(o0 + o, len - o);
        dev::put<dev::Scope::kBlock>(c, slot + o * w.esize, w.at(o0 + o), r * w.esize,
                                     st.send.peer);
        o += r;
      }
      send_end(c, s, f, st.send.peer, m);
    }
    if (k < nr) {
      uint64_t m;
      const char* slot = recv_begin(c, s, f, st.recv.peer, &m);
      if (slot == nullptr) return false;
      const size_t o0 = st.recv.offset + k * per;
      const size_t len = min(per, st.recv.count - k * per);
      for (size_t o = 0; o < len;) {
        const size_t r = w.run(o0 + o, len - o);
        if (st.action == Action::kReduce)
          reduce_into<D, Op>(w.at(o0 + o), slot + o * w.esize, r);
        else
          copy_slice(w.at(o0 + o), slot + o * w.esize, r * w.esize);
        o += r;
      }
      recv_end(c, s, f, st.recv.peer, m);
    }
  }
  return true;
}

/// Canonical reduce-scatter over the schedule space of `w` (block j = partition(count, n, j)):
/// every rank sends block j to rank j, and each rank reduces its block from all n inputs at once
/// in rank order 0..n-1 with one rounding, so the result does not depend on the algorithm.
template <ccl_datatype_t D, ccl_redop_t Op>
__device__ bool canonical_reduce_scatter(const ccl_device_comm_t& c, const CollScratch& s, Fifo& f,
                                         const Map& w, size_t count) {
  using T = typename DType<D>::Storage;
  const int n = c.nranks, me = c.rank;
  const size_t per = s.slot_bytes / w.esize;
  __shared__ const T* in[kMaxDirectRanks];
  __shared__ T* out[1];
  __shared__ uint64_t msg[kMaxDirectRanks];
  size_t mlo, mlen;
  partition(count, n, me, &mlo, &mlen);
  const size_t rounds = (count / n + 1 + per - 1) / per;
  for (size_t k = 0; k < rounds; ++k) {
    for (int j = 0; j < n; ++j) {
      size_t lo, len;
      partition(count, n, j, &lo, &len);
      if (j == me || k * per >= len) continue;
      uint64_t m;
      char* slot = send_begin(c, s, f, j, &m);
      if (slot == nullptr) return false;
      const size_t o0 = lo + k * per, l = min(per, len - k * per);
      for (size_t o = 0; o < l;) {
        const size_t r = w.run(o0 + o, l - o);
        dev::put<dev::Scope::kBlock>(c, slot + o * w.esize, w.at(o0 + o), r * w.esize, j);
        o += r;
      }
      send_end(c, s, f, j, m);
    }
    if (k * per >= mlen) continue;
    const size_t o0 = mlo + k * per, l = min(per, mlen - k * per);
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      uint64_t m;
      const char* slot = recv_begin(c, s, f, q, &m);
      if (slot == nullptr) return false;
      if (threadIdx.x == 0) msg[q] = m;
    }
    // The rank block is contiguous in memory run by run; reduce each run over all inputs.
    for (size_t o = 0; o < l;) {
      const size_t r = w.run(o0 + o, l - o);
      __syncthreads();
      if (threadIdx.x == 0) {
        for (int q = 0; q < n; ++q)
          in[q] = q == me ? reinterpret_cast<const T*>(w.at(o0 + o))
                          : reinterpret_cast<const T*>(slot_of(s, q, msg[q])) + o;
        out[0] = reinterpret_cast<T*>(w.at(o0 + o));
      }
      __syncthreads();
      reduce_slice<D, Op>(in, n, out, 1, r);
      o += r;
    }
    for (int q = 0; q < n; ++q)
      if (q != me) recv_end(c, s, f, q, msg[q]);
  }
  return true;
}

template <ccl_datatype_t D, ccl_redop_t Op>
__global__ void __launch_bounds__(kThreads)
    pipe_kernel(ccl_device_comm_t c, CollScratch s, PipeArgs a) {
  // Before the PDL wait: every parameter the kernel reads (common/kernel_launch.cuh).
  read_before_wait(comm_fields(c), s.inbox, s.slot_bytes, s.head, s.tail, s.seq, s.temp, a.coll,
                   a.algo, a.root, a.chunks, a.canonical, a.send, a.recv, a.count, a.send_ld);
  pdl_prologue();
  using T = typename DType<D>::Storage;
  constexpr size_t E = sizeof(T);
  __shared__ Fifo f;
  fifo_load(c, s, f);
  const int n = c.nranks, me = c.rank;
  size_t lo, len;
  partition_packs(a.count, gridDim.x, blockIdx.x, E, &lo, &len);
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  Map w{recv, a.count * E, 0, lo, E};
  Shape sh{a.coll, a.algo, n, len, a.root, a.chunks};
  switch (a.coll) {
    case Collective::kAllReduce:
      if (send != recv) copy_slice(recv + lo * E, send + lo * E, len * E);
      break;
    case Collective::kBroadcast:
      if (me == a.root && send != recv) copy_slice(recv + lo * E, send + lo * E, len * E);
      break;
    case Collective::kAllGather:
      w.blk = len;
      sh.count = n * len;
      if (send != recv + me * a.count * E)
        copy_slice(recv + (me * a.count + lo) * E, send + lo * E, len * E);
      break;
    case Collective::kReduceScatter:
      w.base = s.temp;
      w.blk = len;
      sh.count = n * len;
      for (int j = 0; j < n; ++j)
        copy_slice(s.temp + (j * a.count + lo) * E, send + (j * a.send_ld + lo) * E, len * E);
      break;
    default:
      break;
  }
  __syncthreads();
  if (a.canonical) {
    // Reduce-scatter in the canonical order, then the algorithm's allgather (allreduce).
    if (!canonical_reduce_scatter<D, Op>(c, s, f, w, sh.count)) return;
    if (a.coll == Collective::kAllReduce) {
      sh.coll = Collective::kAllGather;
      if (sh.algo != Algorithm::kRing) sh.algo = Algorithm::kRecursiveDoubling;
    } else {
      sh.algo = Algorithm::kDirect;  // nothing left to do
      sh.nranks = 1;
    }
  }
  const int steps = num_steps(sh);
  for (int i = 0; i < steps; ++i)
    if (!run_step<D, Op>(c, s, f, w, make_step(sh, me, i))) return;
  if (a.coll == Collective::kReduceScatter) {
    __syncthreads();
    copy_slice(recv + lo * E, s.temp + (me * a.count + lo) * E, len * E);
  }
  fifo_store(c, s, f);
}

/// Whether operation i of the group is a receive that takes the rendezvous path with a window.
__device__ __forceinline__ bool zero_copy_recv(const P2pOp& op) {
  return !op.is_send && p2p_rendezvous(op.bytes) && op.win != kNoWindow;
}

/// Block 0, one thread: offers every rendezvous receive's window to its sender (a ring of
/// kMaxP2pOps per pair at the sender, freed as the sender reports offers read).
__device__ bool post_offers(const ccl_device_comm_t& c, const CollScratch& s, const P2pArgs& a) {
  for (int i = 0; i < a.nops; ++i) {
    const P2pOp& op = a.ops[i];
    if (op.is_send || !p2p_rendezvous(op.bytes)) continue;
    const uint64_t q = ++s.p2p[op.peer].offers_made, need = p2p_offers_read_before(q);
    if (need > 0 && !wait_for_peer(c, s.offers_read + op.peer, need, op.peer)) return false;
    P2pOffer* o = s.offers + static_cast<size_t>(c.rank) * kMaxP2pOps + p2p_offer_slot(q);
    const uint64_t offer[2] = {op.win, op.bytes};  // o->win, o->bytes
    dev::put_signal(c, &o->win, offer, sizeof(offer), &o->seq, q, dev::SignalOp::kSet, op.peer);
  }
  return true;
}

/// Every block, one thread: the receivers' windows for this block's rendezvous sends (kNoWindow:
/// through the FIFOs). The last block to have read tells each receiver, freeing its ring. A
/// receive of another size than its send fails the launch (reported as a bad argument naming the
/// receiver, both sizes) before a byte is written: a larger send would write past the window,
/// or past the FIFO messages the receiver takes.
__device__ bool read_offers(const ccl_device_comm_t& c, const CollScratch& s, const P2pArgs& a,
                            uint64_t* win) {
  bool any = false;
  for (int i = 0; i < a.nops; ++i) {
    const P2pOp& op = a.ops[i];
    win[i] = kNoWindow;
    if (!op.is_send || !p2p_rendezvous(op.bytes)) continue;
    any = true;
    const uint64_t q = s.p2p[op.peer].offers_read + p2p_rendezvous_before(a.ops, i) + 1;
    const P2pOffer* o = s.offers + static_cast<size_t>(op.peer) * kMaxP2pOps + p2p_offer_slot(q);
    if (!wait_for_peer(c, &o->seq, q, op.peer, CCL_OP_SIGNAL_WAIT)) return false;
    win[i] = __ldcg(&o->win);
    const uint64_t offered = __ldcg(&o->bytes);
    if (offered != op.bytes)
      return dev::detail::report(dev::detail::reporter(c), CCL_DEVICE_ERROR_BAD_ARGUMENT,
                                 CCL_OP_COLLECTIVE, op.peer, &o->bytes, op.bytes, offered, 0);
  }
  if (!any) return true;
  __threadfence();
  if (atomicAdd(s.p2p_readers, 1u) != static_cast<unsigned>(a.fifo_blocks) - 1) return true;
  *s.p2p_readers = 0;
  for (int i = 0; i < a.nops; ++i) {
    const P2pOp& op = a.ops[i];
    if (!op.is_send || !p2p_rendezvous(op.bytes) || p2p_rendezvous_before(a.ops, i) != 0) continue;
    uint64_t& read = s.p2p[op.peer].offers_read;
    read += p2p_rendezvous_count(a.ops, a.nops, op.peer, true);
    dev::signal(c, s.offers_read + c.rank, read, dev::SignalOp::kSet, op.peer);
  }
  return true;
}

/// Bytes of operation i the copy engine copies: the tail of a copy_engine send whose receiver
/// offered a window (`win`), 0 for any other operation. The sender's blocks copy the rest.
__device__ __forceinline__ size_t copy_engine_bytes(const P2pArgs& a, int i, uint64_t win) {
  const P2pOp& op = a.ops[i];
  return op.is_send && op.copy_engine && win != kNoWindow ? p2p_ce_bytes(op.bytes, a.ce_share) : 0;
}

/// Block 0, one thread, after read_offers: hands the copy engine's part of each send to the proxy;
/// *last is the number of the last copy posted (0: none), *peer its receiver (for reports).
__device__ bool post_copies(const ccl_device_comm_t& c, const CollScratch& s, const P2pArgs& a,
                            const uint64_t* win, uint64_t* last, int* peer) {
  *last = 0;
  for (int i = 0; i < a.nops; ++i) {
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
__device__ bool await_copies(const ccl_device_comm_t& c, const CollScratch& s, const P2pArgs& a,
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
/// reported itself (ccl_comm_get_async_error).
__device__ void await_zero_copy(const ccl_device_comm_t& c, const CollScratch& s,
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
    if (!wait_for_peer(c, s.zc_bytes + op.peer, due, op.peer, CCL_OP_SIGNAL_WAIT)) return;
  }
}

/// The LL operations' blocks (p2p.hpp), a thread per 8-byte unit as far as p2p_ll_blocks allows.
/// A send stores each 8 bytes as two (data, sequence) entries into its row at the receiver once
/// the receiver has credited the row's previous use; a receive polls its row and stores the
/// data, and its last block to finish credits the sender. The last
/// LL block of the launch advances the pairs' counts for the next launch.
__device__ void p2p_ll_block(const ccl_device_comm_t& c, const CollScratch& s, const P2pArgs& a) {
  const int n = c.nranks, me = c.rank;
  const size_t cap = p2p_ll_cap(s);
  int part = 0, parts = 1;
  const int i = p2p_ll_op(a.ops, a.nops, static_cast<int>(blockIdx.x) - a.fifo_blocks,
                          static_cast<int>(blockDim.x), cap, &part, &parts, a.ll_budget);
  const P2pOp& op = a.ops[i];
  const P2pCounts& pc = s.p2p[op.peer];
  const uint64_t q = (op.is_send ? pc.ll_sent : pc.ll_rcvd) + p2p_ll_before(a.ops, i, cap) + 1;
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
    if (__syncthreads_or(failed)) return;
    uint64_t* to = dev::peer_ptr(c, row, op.peer);
    for (size_t u = first; u < units; u += stride)
      ll_store(to + 2 * u, load_unit(buf, u * 8, op.bytes), flag);
    // Once every 2^31 operations per slot the rest of the row too (ll_refresh).
    if (ll_refresh(q, kP2pLLSlots))
      ll_refresh_row(to, units, s.p2p_ll_entries / 2, flag, first, stride);
  } else {
    for (size_t u = first; u < units && !failed; u += stride) {
      uint64_t v;
      failed = !ll_wait(c, row + 2 * u, flag, op.peer, &v);
      if (!failed) store_unit(buf, u * 8, op.bytes, v);
    }
    if (__syncthreads_or(failed)) return;
    // The entries read were consumed (stored above): no fence before the credit.
    if (threadIdx.x == 0 && (parts == 1 || atomicAdd(s.p2p_ll_read + i, 1u) == parts - 1)) {
      if (parts > 1) s.p2p_ll_read[i] = 0;
      dev::signal(c, s.p2p_ll_credit + kP2pLLSlots * me + slot, q, dev::SignalOp::kSet, op.peer);
    }
  }
  if (threadIdx.x != 0) return;
  __threadfence();  // this block's count reads happened before the last block's updates
  if (atomicAdd(s.p2p_ll_done, 1u) != gridDim.x - a.fifo_blocks - 1) return;
  *s.p2p_ll_done = 0;
  for (int j = 0; j < a.nops; ++j) {
    if (!p2p_ll(a.ops[j].bytes, cap)) continue;
    P2pCounts& p = s.p2p[a.ops[j].peer];
    ++(a.ops[j].is_send ? p.ll_sent : p.ll_rcvd);
  }
}

/// Point-to-point group. Blocks [0, kPipeChannels) are the FIFO channels; a group that sends a
/// rendezvous-sized operation runs kP2pBlocks, all of which copy zero-copy shares first (not
/// when every such send is the copy engines': block 0 hands those to the proxy and awaits them
/// last). The LL operations' blocks follow from a.fifo_blocks (0 when the group has no other
/// operation).
__global__ void __launch_bounds__(kThreads)
    p2p_kernel(ccl_device_comm_t c, CollScratch s, P2pArgs a) {
  // Before the PDL wait: the parameters every call reads, and its first operation.
  read_before_wait(comm_fields(c), s.inbox, s.slot_bytes, s.head, s.tail, s.seq, s.offers,
                   s.offers_read, s.zc_bytes, s.p2p, s.p2p_readers, s.p2p_ll, s.p2p_ll_entries,
                   s.p2p_ll_credit, s.p2p_ll_done, s.p2p_ll_read, a.nops, a.fifo_blocks,
                   a.ops[0].buf, a.ops[0].bytes, a.ops[0].peer, a.ops[0].is_send, a.ops[0].win);
  pdl_prologue();
  if (static_cast<int>(blockIdx.x) >= a.fifo_blocks) {
    p2p_ll_block(c, s, a);
    return;
  }
  __shared__ Fifo f;
  __shared__ uint64_t zwin[kMaxP2pOps];
  __shared__ int fail;
  __shared__ uint64_t copies;  // block 0: the last copy-engine copy posted (0: none)
  __shared__ int copies_to;    // block 0: that copy's receiver
  const bool channel = blockIdx.x < kPipeChannels;
  if (threadIdx.x == 0) {
    fail = 0;
    if (blockIdx.x == 0 && !post_offers(c, s, a)) fail = 1;
    if (!fail && !read_offers(c, s, a, zwin)) fail = 1;
    if (!fail && blockIdx.x == 0 && !post_copies(c, s, a, zwin, &copies, &copies_to)) fail = 1;
  }
  __syncthreads();
  if (fail) return;
  // Zero-copy sends: every block writes its share of the receiver's window and adds it to the
  // receiver's tally (of a copy_engine send only the head the copy engine leaves them).
  for (int i = 0; i < a.nops; ++i) {
    const P2pOp& op = a.ops[i];
    if (!op.is_send || zwin[i] == kNoWindow) continue;
    const size_t mine = op.bytes - copy_engine_bytes(a, i, zwin[i]);
    if (mine == 0) continue;
    size_t lo, len;
    p2p_share(mine, a.fifo_blocks, blockIdx.x, &lo, &len);
    copy_slice(window<char>(c, s, op.peer, zwin[i]) + lo, static_cast<const char*>(op.buf) + lo,
               len);
    __syncthreads();
    if (threadIdx.x == 0 && len > 0) {
      dev::detail::fence_system();
      dev::signal(c, s.zc_bytes + c.rank, len, dev::SignalOp::kAdd, op.peer);
    }
  }
  if (!channel) return;
  fifo_load(c, s, f);
  // This channel's share of each FIFO operation and where its messages sit in its (peer,
  // direction) stream.
  size_t lo[kMaxP2pOps], len[kMaxP2pOps], nmsg[kMaxP2pOps], first[kMaxP2pOps], rounds = 0;
  const size_t per = s.slot_bytes;
  for (int i = 0; i < a.nops; ++i) {
    const bool fifo = !p2p_ll(a.ops[i].bytes, p2p_ll_cap(s)) &&
                      (a.ops[i].is_send ? zwin[i] == kNoWindow : !zero_copy_recv(a.ops[i]));
    p2p_share(fifo ? a.ops[i].bytes : 0, kPipeChannels, blockIdx.x, &lo[i], &len[i]);
    nmsg[i] = (len[i] + per - 1) / per;
  }
  for (int i = 0; i < a.nops; ++i) {
    first[i] = p2p_stream_offset(a.ops, nmsg, i);
    if (first[i] + nmsg[i] > rounds) rounds = first[i] + nmsg[i];
  }
  for (size_t k = 0; k < rounds; ++k) {
    for (int pass = 0; pass < 2; ++pass) {
      for (int i = 0; i < a.nops; ++i) {
        const P2pOp& op = a.ops[i];
        if ((op.is_send != 0) != (pass == 0) || k < first[i] || k >= first[i] + nmsg[i]) continue;
        const size_t at = (k - first[i]) * per;
        const size_t off = lo[i] + at, b = min(per, len[i] - at);
        uint64_t m;
        if (op.is_send) {
          char* slot = send_begin(c, s, f, op.peer, &m);
          if (slot == nullptr) return;
          dev::put<dev::Scope::kBlock>(c, slot, static_cast<const char*>(op.buf) + off, b, op.peer);
          // The operation's size with its first message on this channel: the receiver checks
          // it there, where the first mismatched operation of a pair always shows.
          send_end(c, s, f, op.peer, m, k == first[i] ? op.bytes : 0);
        } else {
          const char* slot = recv_begin(c, s, f, op.peer, &m, k == first[i] ? op.bytes : 0);
          if (slot == nullptr) return;
          copy_slice(static_cast<char*>(op.buf) + off, slot, b);
          recv_end(c, s, f, op.peer, m);
        }
      }
    }
  }
  fifo_store(c, s, f);
  if (blockIdx.x == 0 && threadIdx.x == 0 &&
      (copies == 0 || await_copies(c, s, a, zwin, copies, copies_to)))
    await_zero_copy(c, s, a);
}

template <ccl_datatype_t D, ccl_redop_t Op>
struct PipeKernel {
  static constexpr auto kernel = pipe_kernel<D, Op>;
};

}  // namespace

cudaError_t pipe_blocks_per_sm(int* out) {
  const cudaError_t e = fewest_blocks_per_sm<PipeKernel>(kThreads, out);
  if (e != cudaSuccess) return e;
  return fewest_blocks_per_sm(p2p_kernel, kThreads, out);
}

cudaError_t launch_pipe(ccl_datatype_t dtype, ccl_redop_t op, const ccl_device_comm_t& c,
                        const CollScratch& s, const PipeArgs& a, int grid, const Launch& l) {
  // Copy-only collectives do not depend on the operation: one instantiation per type.
  return launch_kernel(kernel_of<PipeKernel>(dtype, is_reduction(a.coll) ? op : ccl_sum), grid,
                       kThreads, l, c, s, a);
}

cudaError_t launch_p2p(const ccl_device_comm_t& c, const CollScratch& s, const P2pArgs& args,
                       const Launch& l, int most_blocks) {
  P2pArgs a = args;
  const size_t cap = p2p_ll_cap(s);
  bool fifo = false, rendezvous = false;
  for (int i = 0; i < a.nops; ++i) {
    const P2pOp& op = a.ops[i];
    fifo |= !p2p_ll(op.bytes, cap);
    rendezvous |= op.is_send && p2p_rendezvous(op.bytes) &&
                  (!op.copy_engine || p2p_ce_bytes(op.bytes, a.ce_share) < op.bytes);
  }
  a.fifo_blocks = !fifo ? 0 : rendezvous ? kP2pBlocks : kPipeChannels;
  a.ll_budget = kP2pLLBlocks;
  if (most_blocks > 0) {
    // The rendezvous copies split over any number of blocks; the FIFO channels need all of
    // theirs; each LL operation needs one.
    if (rendezvous) a.fifo_blocks = std::max(kPipeChannels, std::min(kP2pBlocks, most_blocks / 2));
    a.ll_budget = std::clamp(most_blocks - a.fifo_blocks, 1, kP2pLLBlocks);
  }
  const int threads = p2p_threads(a.ops, a.nops, kThreads, cap);
  const int grid = a.fifo_blocks + p2p_ll_grid(a.ops, a.nops, threads, cap, a.ll_budget);
  if (grid == 0) return cudaSuccess;
  return launch_kernel(p2p_kernel, grid, threads, l, c, s, a);
}

}  // namespace ccl::coll
