// SPDX-License-Identifier: Apache-2.0
// Device helpers every collective kernel shares: the per-block entry and exit barriers with
// published windows, the epoch bookkeeping, addressing a peer's window, and the vectorised
// block-wide reduce of one slice over many inputs.
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "collectives/common/coll_args.h"
#include "collectives/common/dtypes.cuh"
#include "collectives/schedule/step.hpp"
#include "common/kernel_launch.cuh"
#include "gicl/device.cuh"

namespace gicl::coll {

/// The communicator fields every collective kernel reads, as one read_before_wait argument.
__device__ __forceinline__ uint64_t comm_fields(const gicl_device_comm_t& c) {
  return param_xor(c.flags, c.rank, c.nranks, c.own_slot, c.slot_bytes, c.slots);
}

/// An element read through L2 only (a peer's data must never come from a stale L1 line).
template <typename T>
__device__ __forceinline__ T load_cg(const T* p) {
  using Bits = std::conditional_t<
      sizeof(T) == 1, unsigned char,
      std::conditional_t<sizeof(T) == 2, unsigned short,
                         std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>>>;
  const Bits b = __ldcg(reinterpret_cast<const Bits*>(p));
  T v;
  memcpy(&v, &b, sizeof(T));
  return v;
}

/// Address of heap offset `off` in rank `j`'s slot, as this process sees it.
__device__ __forceinline__ char* heap_at(const gicl_device_comm_t& c, int j, uint64_t off) {
  const int64_t slot = (c.flags & GICL_DEVICE_FLAG_ALL_P2P) ? j : c.slots[j];
  return c.heap_base + slot * static_cast<int64_t>(c.slot_bytes) + static_cast<int64_t>(off);
}

/// Waits until *addr >= value, a word that rank `peer` writes here (acquire): bounded like every
/// device wait, and a timeout report names the peer that never wrote it.
__device__ __forceinline__ bool wait_for_peer(const gicl_device_comm_t& c, const uint64_t* addr,
                                              uint64_t value, int peer,
                                              uint32_t op = GICL_OP_WAIT_UNTIL) {
  return dev::detail::wait(dev::detail::reporter(c), op, addr, dev::Cmp::kAtLeast, value, peer,
                           static_cast<uint64_t*>(nullptr));
}

/// Where a thread reads and publishes completed epochs (thread t < nranks speaks for rank t).
/// Worked out from the parameters alone, so a kernel can do it before its PDL wait: on a small
/// call one warp runs the whole path, and every instruction left after the wait is latency.
struct EpochPlan {
  const uint64_t* own;   // this rank's completed epoch (every thread reads it)
  const uint64_t* seen;  // rank t's completed epoch, pushed here by rank t
  uint64_t* push;        // rank t's copy of this rank's completed epoch
  bool rank_thread;      // t < nranks
  bool peer_thread;      // t < nranks and t is not this rank
};

__device__ __forceinline__ EpochPlan plan_epochs(const gicl_device_comm_t& c,
                                                 const CollScratch& s) {
  const int t = threadIdx.x;
  EpochPlan p;
  p.own = s.epoch + c.rank;
  p.seen = s.epoch + t;
  p.rank_thread = t < c.nranks;
  p.peer_thread = p.rank_thread && t != c.rank;
  p.push = p.rank_thread ? dev::peer_ptr(c, s.epoch + c.rank, t) : nullptr;
  return p;
}

/// Block-wide, the first step of the LL, LL128 and direct kernels after their PDL wait: this
/// launch's epoch (one more than the last this rank completed), and a wait until every peer has
/// completed epoch e - lag (its whole kernel: nothing of that launch still reads this rank's rows
/// or staging), from one round of loads (every thread reads the own epoch itself, beside its
/// rank's, so no barrier is needed to share it) and one reducing barrier. Peers push their epochs
/// here, so the loads are local. A lag of kNoEpochWait waits for nothing. *failed is true on every
/// thread when a wait failed (reported).
inline constexpr uint64_t kNoEpochWait = ~uint64_t{0};
__device__ __forceinline__ uint64_t begin_epoch(const gicl_device_comm_t& c, const EpochPlan& p,
                                                uint64_t lag, bool* failed) {
  // The own epoch was written by this stream's previous kernel, ordered by the PDL wait: a plain
  // volatile load, which leaves the acquire load of the peer's in flight beside it (two acquire
  // loads of one thread run one after the other).
  const uint64_t own = *reinterpret_cast<const volatile uint64_t*>(p.own);
  const uint64_t seen = p.peer_thread ? dev::detail::load_acquire_sys(p.seen) : ~uint64_t{0};
  const uint64_t e = own + 1;
  const bool bad = e > lag && seen < e - lag && !wait_for_peer(c, p.seen, e - lag, threadIdx.x);
  *failed = __syncthreads_or(bad) != 0;
  return e;
}

/// This block's row of entry flags for epoch e. Rows alternate by epoch parity: a launch without
/// an exit barrier (the one-shot LL) lets a fast rank publish its next launch's windows while a
/// slow peer has yet to read this one's; the launch after that waits for the peer's epoch.
__device__ __forceinline__ Ready* ready_row(const CollScratch& s, int n, uint64_t e) {
  return s.ready + ((e & 1) * kMaxBlocks + blockIdx.x) * static_cast<size_t>(n);
}

/// Rank j's entry words of this block at epoch e as they are now (one 16-byte load per pair).
/// Volatile, not acquire: the words prove themselves, and what the block then reads or writes at
/// the peer depends on their values (its addresses), as LL data does. Twelve acquire loads ran
/// one after another and gave back the fence's whole saving (2 x H200, 4 MiB two-shot
/// allreduce 23.1 us either way).
__device__ __forceinline__ void load_ready(const Ready* r, uint64_t w[kReadyWords]) {
#pragma unroll
  for (int i = 0; i < kReadyWords; i += 2)
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                 : "=l"(w[i]), "=l"(w[i + 1])
                 : "l"(r->word + i)
                 : "memory");
}

/// Windows::src_ld of a rank that publishes no source window and pushed its blocks into the
/// peers' inboxes before the entry barrier (direct.cu, push first); 0 without a window otherwise.
inline constexpr uint64_t kPushedFirst = 1;

/// Block-wide entry barrier of block b at epoch e: publishes `mine` (this rank's windows) to
/// every peer, then waits for every peer's. With `ordered`, what the block wrote before is
/// visible to the peers once they pass it (a system fence first: a staged source); without, only
/// what earlier launches wrote is, and the barrier costs one crossing of NVLink. A peer whose
/// launch covers a different number of elements fails it (reported, naming the peer): the ranks
/// cut the call into different pieces. Returns, on every thread, whether some rank published no
/// source window (direct.cu's push mode), read with the count so that it costs no extra round.
/// Where this rank offers a swap window (`mine.swap_off`), `*all_swap` says on every thread
/// whether every rank does; where it pushed first (kPushedFirst), `*all_pushed` whether every rank
/// did. Every rank's windows are left in `table` (shared memory, nranks entries) for the block.
__device__ __forceinline__ bool entry_barrier(const gicl_device_comm_t& c, const CollScratch& s,
                                              uint64_t e, const Windows& mine, bool ordered,
                                              Windows* table, int* fail, bool* all_swap,
                                              bool* all_pushed) {
  const int t = threadIdx.x, n = c.nranks, me = c.rank;
  Ready* row = ready_row(s, n, e);
  const bool pushed_first = mine.src_off == kNoWindow && mine.src_ld == kPushedFirst;
  bool no_src = t == me && mine.src_off == kNoWindow;
  bool no_swap = false, not_pushed = false;
  if (t == me) table[me] = mine;
  __syncthreads();
  if (t < n && t != me) {
    if (ordered) dev::detail::fence_system();
    uint64_t* to = dev::peer_ptr(c, row + me, t)->word;
#pragma unroll
    for (int i = 0; i < kReadyWords; i += 2)
      asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(to + i),
                   "l"(ready_word(e, mine, i)), "l"(ready_word(e, mine, i + 1))
                   : "memory");
    // Every word carries the epoch: wait until all of them do (bounded, naming the peer).
    uint64_t w[kReadyWords];
    dev::detail::Deadline deadline;
    for (uint32_t spin = 0;; ++spin) {
      load_ready(row + t, w);
      if (ready_at(w, e)) break;
      if ((spin & 1023) == 1023 &&
          deadline.expired(dev::detail::reporter(c), GICL_OP_WAIT_UNTIL, t, row[t].word, e,
                           w[0] >> 16, GICL_CMP_AT_LEAST)) {
        *fail = 1;
        break;
      }
    }
    if (!*fail) {
      constexpr int kCountWord = offsetof(Windows, count) / sizeof(uint64_t) * 4;
      const Windows theirs = ready_windows(w);
      table[t] = theirs;
      no_src = theirs.src_off == kNoWindow;
      if (mine.swap_off != kNoWindow) no_swap = theirs.swap_off == kNoWindow;
      if (pushed_first) not_pushed = !no_src || theirs.src_ld != kPushedFirst;
      if (theirs.count != mine.count) {
        // The expected value is this rank's count, the seen one the peer's.
        dev::detail::report(dev::detail::reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT,
                            GICL_OP_COLLECTIVE, t, row[t].word + kCountWord, mine.count,
                            theirs.count, GICL_CMP_EQ);
        *fail = 1;
      }
    }
  }
  // Only a rank that offers a swap asks (uniform over the block): no extra round for the others.
  *all_swap = mine.swap_off != kNoWindow && __syncthreads_or(no_swap) == 0;
  *all_pushed = pushed_first && __syncthreads_or(not_pushed) == 0;
  return __syncthreads_or(no_src) != 0;
}

/// Thread t's part of a barrier on one flag row ([kMaxBlocks][nranks], symmetric), for t a peer
/// (t < nranks, t != rank): the block's accesses of the peers so far are made complete (a system
/// fence after the caller's block barrier), this rank's flag at t is raised to e, and t's here
/// waited for.
__device__ __forceinline__ void cross_flags(const gicl_device_comm_t& c, uint64_t* flags,
                                            uint64_t e, int* fail) {
  const int t = threadIdx.x, n = c.nranks, me = c.rank;
  uint64_t* row = flags + static_cast<size_t>(blockIdx.x) * n;
  if (t < n && t != me) {
    dev::detail::fence_system();
    dev::detail::store_relaxed_sys(dev::peer_ptr(c, row + me, t), e);
    if (!wait_for_peer(c, row + t, e, t)) *fail = 1;
  }
}

/// Block-wide barrier on one flag row: this block's reads of and writes to the peers so far are
/// complete at every peer, and theirs at this rank.
__device__ __forceinline__ void flag_barrier(const gicl_device_comm_t& c, uint64_t* flags,
                                             uint64_t e, int* fail) {
  __syncthreads();
  cross_flags(c, flags, e, fail);
  __syncthreads();
}

/// Block-wide exit barrier: the block is done with its peers, and they with this rank.
__device__ __forceinline__ void exit_barrier(const gicl_device_comm_t& c, const CollScratch& s,
                                             uint64_t e, int* fail) {
  flag_barrier(c, s.done, e, fail);
}

/// One thread's count of its block out of the launch: true for the last block, which resets the
/// count for the next launch (the launches of a stream do not overlap past the PDL wait).
__device__ __forceinline__ bool count_out(const CollScratch& s) {
  if (gridDim.x == 1) return true;
  const bool last = atomicAdd(s.finished, 1u) == gridDim.x - 1;
  if (last) *s.finished = 0;
  return last;
}

/// Called by every block at its end, after a block barrier: the last block to finish publishes
/// the epoch to every rank. With `fence`, everything this launch did is complete before the peers
/// see it (a system fence); without, only that its reads of them are (a kernel whose values read
/// were consumed, stored, before the barrier: LL, LL128), and the blocks count themselves out
/// without a fence either.
__device__ __forceinline__ void publish_epoch(const CollScratch& s, const EpochPlan& p, uint64_t e,
                                              bool fence = true) {
  // One block is always the last: no global atomic and no second barrier on the small-call path.
  if (gridDim.x > 1) {
    __shared__ bool last;
    if (threadIdx.x == 0) {
      if (fence) __threadfence();
      last = count_out(s);
    }
    __syncthreads();
    if (!last) return;
  }
  if (p.rank_thread) {
    if (fence) dev::detail::fence_system();
    dev::detail::store_relaxed_sys(p.push, e);
  }
}

/// Called by every block of a direct kernel at its end (see publish_epoch), without a fence:
/// every caller has made its stores to the peers complete at a fenced barrier (exit, pushed)
/// and consumed (stored) every value it read from them or from what they wrote, as the LL
/// kernels do. The fence cost the last block a round trip of NVLink (its barrier flag's) before
/// the epoch went out: 0.8-0.9 us a launch on 2 x H200.
__device__ __forceinline__ void finish_epoch(const gicl_device_comm_t& c, const CollScratch& s,
                                             uint64_t e) {
  __syncthreads();
  publish_epoch(s, plan_epochs(c, s), e, false);
}

/// exit_barrier and finish_epoch in one, for a block that touches nothing of this launch after
/// the barrier (no unstaging): the block counts itself out (the atomic) while its barrier flag
/// crosses NVLink instead of after the barrier's wait, and the last block to count publishes the
/// epoch once its own wait has returned, so the atomic's round trip to L2 leaves the kernel's
/// tail. Sound because what the epoch tells the peers is that no block of this launch still
/// reads what they may then write (the staging, the entry rows, the LL rows, the inboxes): every
/// block has done its last such read, and consumed it, before it counts; a block still waiting
/// here waits on barrier flags that carry epochs, which only grow, so a peer that runs ahead
/// cannot deceive it.
__device__ __forceinline__ void exit_and_finish(const gicl_device_comm_t& c, const CollScratch& s,
                                                uint64_t e, int* fail) {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == c.rank) last = count_out(s);  // the thread that waits for no peer
  cross_flags(c, s.done, e, fail);
  __syncthreads();
  if (*fail || !last) return;
  const EpochPlan p = plan_epochs(c, s);
  if (p.rank_thread) dev::detail::store_relaxed_sys(p.push, e);
}

/// A window address published by rank j (heap or registered buffer), as a typed pointer here.
template <typename T>
__device__ __forceinline__ T* window(const gicl_device_comm_t& c, const CollScratch& s, int j,
                                     uint64_t w) {
  if (w & kRegWindow) {
    const size_t slot = registered_slot(w);
    return reinterpret_cast<T*>(s.regs[slot * c.nranks + j] + registered_offset(w));
  }
  return reinterpret_cast<T*>(heap_at(c, j, w));
}

/// Block-wide: out[o][i] = reduce over r (in rank order 0..n-1) of in[r][i], for i < len and
/// every o < nout. Accumulates in the accumulation type and rounds once, so the result is the
/// canonical one whatever algorithm called it. `in` and `out` live in shared memory. Uses 16-byte
/// packs when every pointer allows it.
template <gicl_datatype_t D, gicl_redop_t Op>
__device__ __forceinline__ void reduce_slice(const typename DType<D>::Storage* const* in, int n,
                                             typename DType<D>::Storage* const* out, int nout,
                                             size_t len) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  constexpr int V = 16 / sizeof(T);
  uintptr_t align = 0;
  for (int r = 0; r < n; ++r) align |= reinterpret_cast<uintptr_t>(in[r]);
  for (int o = 0; o < nout; ++o) align |= reinterpret_cast<uintptr_t>(out[o]);
  size_t done = 0;
  if ((align & 15) == 0) {
    // U packs per thread in flight from each input: NVLink latency needs many loads
    // outstanding, and one 16-byte load per thread per input does not cover it.
    constexpr int U = 4;
    const size_t packs = len / V;
    const size_t step = static_cast<size_t>(blockDim.x) * U;
    size_t p0 = threadIdx.x;
    for (; p0 + (U - 1) * blockDim.x < packs; p0 += step) {
      A acc[U][V];
      uint4 w[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        w[u] = __ldcg(reinterpret_cast<const uint4*>(in[0]) + p0 + u * blockDim.x);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        T v[V];
        memcpy(v, &w[u], 16);
#pragma unroll
        for (int k = 0; k < V; ++k) acc[u][k] = to_acc<T, A>(v[k]);
      }
      for (int r = 1; r < n; ++r) {
#pragma unroll
        for (int u = 0; u < U; ++u)
          w[u] = __ldcg(reinterpret_cast<const uint4*>(in[r]) + p0 + u * blockDim.x);
#pragma unroll
        for (int u = 0; u < U; ++u) {
          T v[V];
          memcpy(v, &w[u], 16);
#pragma unroll
          for (int k = 0; k < V; ++k) acc[u][k] = combine<Op, A>(acc[u][k], to_acc<T, A>(v[k]));
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        T res[V];
#pragma unroll
        for (int k = 0; k < V; ++k) res[k] = from_acc<T, A>(finish<Op, A, T>(acc[u][k], n));
        memcpy(&w[u], res, 16);
      }
      for (int o = 0; o < nout; ++o)
#pragma unroll
        for (int u = 0; u < U; ++u) reinterpret_cast<uint4*>(out[o])[p0 + u * blockDim.x] = w[u];
    }
    for (size_t p = p0; p < packs; p += blockDim.x) {
      A acc[V];
      {
        const uint4 w = __ldcg(reinterpret_cast<const uint4*>(in[0]) + p);
        T v[V];
        memcpy(v, &w, 16);
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] = to_acc<T, A>(v[k]);
      }
      for (int r = 1; r < n; ++r) {
        const uint4 w = __ldcg(reinterpret_cast<const uint4*>(in[r]) + p);
        T v[V];
        memcpy(v, &w, 16);
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] = combine<Op, A>(acc[k], to_acc<T, A>(v[k]));
      }
      T res[V];
#pragma unroll
      for (int k = 0; k < V; ++k) res[k] = from_acc<T, A>(finish<Op, A, T>(acc[k], n));
      uint4 w;
      memcpy(&w, res, 16);
      for (int o = 0; o < nout; ++o) reinterpret_cast<uint4*>(out[o])[p] = w;
    }
    done = packs * V;
  }
  for (size_t i = done + threadIdx.x; i < len; i += blockDim.x) {
    A acc = to_acc<T, A>(load_cg(in[0] + i));
    for (int r = 1; r < n; ++r) acc = combine<Op, A>(acc, to_acc<T, A>(load_cg(in[r] + i)));
    const T v = from_acc<T, A>(finish<Op, A, T>(acc, n));
    for (int o = 0; o < nout; ++o) out[o][i] = v;
  }
}

/// Block-wide copy of `bytes` (a peer's memory read through L2).
__device__ __forceinline__ void copy_slice(void* dst, const void* src, size_t bytes) {
  dev::detail::scope_copy<dev::Scope::kBlock, true>(dst, src, bytes);
}

/// Copy by threads [r0, r0 + nt) of the block: thread groups of one block can move different
/// data at once (a push over NVLink beside a local copy in HBM).
__device__ __forceinline__ void copy_part(char* d, const char* s, size_t bytes, int r, int nt) {
  size_t done = 0;
  if (((reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s)) & 15) == 0) {
    const size_t n16 = bytes / 16;
    int4* d4 = reinterpret_cast<int4*>(d);
    const int4* s4 = reinterpret_cast<const int4*>(s);
    constexpr int kDepth = 8;
    size_t i = r;
    for (; i + (kDepth - 1) * static_cast<size_t>(nt) < n16;
         i += kDepth * static_cast<size_t>(nt)) {
      int4 v[kDepth];
#pragma unroll
      for (int k = 0; k < kDepth; ++k) v[k] = __ldcg(s4 + i + k * static_cast<size_t>(nt));
#pragma unroll
      for (int k = 0; k < kDepth; ++k) d4[i + k * static_cast<size_t>(nt)] = v[k];
    }
    for (; i < n16; i += nt) d4[i] = __ldcg(s4 + i);
    done = n16 * 16;
  }
  for (size_t i = done + r; i < bytes; i += nt) d[i] = s[i];
}

/// Block-wide: one read of `src`, written to each of the `nd` destinations (shared memory).
/// Allgather's own block and its pushes to the peers share the load.
__device__ __forceinline__ void fanout_copy(char* const* dst, int nd, const char* src,
                                            size_t bytes) {
  uintptr_t align = reinterpret_cast<uintptr_t>(src);
  for (int k = 0; k < nd; ++k) align |= reinterpret_cast<uintptr_t>(dst[k]);
  size_t done = 0;
  if ((align & 15) == 0) {
    constexpr int kDepth = 4;
    const size_t n16 = bytes / 16, nt = blockDim.x;
    const int4* s4 = reinterpret_cast<const int4*>(src);
    size_t i = threadIdx.x;
    for (; i + (kDepth - 1) * nt < n16; i += kDepth * nt) {
      int4 v[kDepth];
#pragma unroll
      for (int k = 0; k < kDepth; ++k) v[k] = __ldcg(s4 + i + k * nt);
      for (int j = 0; j < nd; ++j)
#pragma unroll
        for (int k = 0; k < kDepth; ++k) reinterpret_cast<int4*>(dst[j])[i + k * nt] = v[k];
    }
    for (; i < n16; i += nt) {
      const int4 v = __ldcg(s4 + i);
      for (int j = 0; j < nd; ++j) reinterpret_cast<int4*>(dst[j])[i] = v;
    }
    done = n16 * 16;
  }
  for (size_t i = done + threadIdx.x; i < bytes; i += blockDim.x)
    for (int j = 0; j < nd; ++j) dst[j][i] = src[i];
}

}  // namespace gicl::coll
