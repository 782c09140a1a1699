// SPDX-License-Identifier: Apache-2.0
#include "collectives/common/kernel_util.cuh"
#include "collectives/common/launch_table.cuh"
#include "collectives/common/ll_units.cuh"
#include "collectives/direct/direct.cuh"
#include "collectives/schedule/direct.hpp"
#include "common/kernel_launch.cuh"

namespace gicl::coll {
namespace {

constexpr int kThreads = 512;

/// Before the PDL wait: the parameters the direct kernels read (common/kernel_launch.cuh).
__device__ __forceinline__ void read_direct_params(const gicl_device_comm_t& c,
                                                   const CollScratch& s, const DirectArgs& a) {
  read_before_wait(comm_fields(c), c.heap_base, s.stage[0], s.stage[1], s.ready, s.done, s.epoch,
                   s.finished, s.regs, a.send, a.recv, a.count, a.send_ld, a.recv_ld, a.src_off,
                   a.src_ld, a.dst_off, a.dst_ld, a.swap_off, a.root, a.kind, a.stage_src,
                   a.unstage_dst, a.push_first, a.mc, a.local_blocks);
}

/// Slice of block b within a range of `len` elements of `esize` bytes, over the blocks that talk
/// to the peers, in whole 16-byte packs (partition_packs: element-wise slices put four ranks'
/// 64 MiB alltoall of 33 blocks on the byte path, 1979 us against 290).
__device__ __forceinline__ void my_slice(const DirectArgs& a, size_t len, size_t esize, size_t* lo,
                                         size_t* n) {
  partition_packs(len, gridDim.x - a.local_blocks, blockIdx.x, esize, lo, n);
}

/// Heap offset of this rank's staging buffer i.
__device__ __forceinline__ uint64_t stage_off(const gicl_device_comm_t& c, const CollScratch& s,
                                              int i) {
  return static_cast<uint64_t>(s.stage[i] - heap_at(c, c.rank, 0));
}

/// Bytes between the senders' slots of an inbox (the host sizes pieces so that n slots fit).
__device__ __forceinline__ size_t inbox_stride(const DirectArgs& a, int n, size_t esize) {
  const size_t block = a.kind == DirectKind::kTwoShot ? (a.count + n - 1) / n : a.count;
  return direct::inbox_stride(block, esize);
}

/// Push mode: slot `from` of rank `at`'s inbox, its staging buffer of epoch e (at the same heap
/// offset on every rank), one slot per sender.
__device__ __forceinline__ char* inbox_at(const gicl_device_comm_t& c, const CollScratch& s,
                                          const DirectArgs& a, uint64_t e, int at, int from,
                                          size_t esize) {
  return heap_at(c, at, stage_off(c, s, e & 1)) + from * inbox_stride(a, c.nranks, esize);
}

/// Push mode: this block's slice of every peer's rank block, from the local send buffer into slot
/// `me` of that peer's inbox.
__device__ void push_copies(const gicl_device_comm_t& c, const CollScratch& s, const DirectArgs& a,
                            uint64_t e, size_t esize) {
  const int n = c.nranks, me = c.rank;
  const char* send = static_cast<const char*>(a.send);
  for (int k = 1; k < n; ++k) {
    const int j = (me + k) % n;  // next peer first: spread the traffic
    Transfer b{j, j * a.send_ld, a.count};
    if (a.kind == DirectKind::kTwoShot) b = direct::two_shot_block(j, a.count, n, j, esize);
    const size_t jlo = b.offset, jlen = b.count;
    size_t lo, len;
    my_slice(a, jlen, esize, &lo, &len);
    copy_slice(inbox_at(c, s, a, e, j, me, esize) + lo * esize, send + (jlo + lo) * esize,
               len * esize);
  }
}

/// Push mode after the entry barrier (some rank published no source window), unless every rank
/// pushed first (the barrier's fence covered the pushes): this rank's pushes where it has yet to
/// make them, then a barrier on the `pushed` flags (every peer's pushes into this rank's inbox are
/// complete). False when a wait failed.
__device__ bool finish_pushes(const gicl_device_comm_t& c, const CollScratch& s,
                              const DirectArgs& a, uint64_t e, size_t esize, bool all_pushed,
                              int* fail) {
  if (all_pushed) return true;
  if (!a.push_first) push_copies(c, s, a, e, esize);
  flag_barrier(c, s.pushed, e, fail);
  return !*fail;
}

/// Epochs a launch waits for its peers to have completed before it starts (begin_epoch). This
/// launch's staging buffer and entry-flag row were last read by the peers two launches ago;
/// launches without an exit barrier (LL) let a rank get that far ahead. One launch ago where
/// peers write into a staging buffer before this launch's barrier has told them that its owner
/// is past the last launch: this rank's staging destination (the launch before may have been a
/// one-shot whose readers of that buffer have no exit barrier), and the inboxes this rank pushes
/// into first (each peer's staging of this parity, its staging destination one launch ago,
/// copied out after that launch's exit barrier).
__device__ __forceinline__ uint64_t entry_lag(const DirectArgs& a) {
  return a.unstage_dst || a.push_first ? 1 : 2;
}

/// Places the staging windows by epoch parity (the host cannot: graph replays advance the
/// epoch), stages the source or pushes first, then the entry barrier, which leaves every rank's
/// windows in `peers` (shared memory); false when a wait failed.
/// *push: some rank published no source window; *swap: every rank offered its in-place buffer
/// (swap_blocks); *all_pushed: every rank pushed first.
///
/// Push mode (two-shot, reduce-scatter, alltoall): a rank whose send buffer is neither symmetric
/// nor registered publishes no source window, and then every rank pushes each peer's block into
/// that peer's inbox (its staging buffer of this epoch, at the same heap offset on every rank)
/// instead of the peers pulling it: a staged buffer costs no copy into the staging, and the
/// reduction reads local memory only. All ranks decide alike from the published windows.
///
/// Push first (a.push_first: two-shot and reduce-scatter; every rank's two-shot allreduce in the
/// tuner's push-first range, and a rank without a source window always): the pushes go out before
/// the entry barrier, whose fence then covers them, so that where every rank pushed first
/// (kPushedFirst published) the entry barrier is the `pushed` one too; otherwise the others push
/// after it and all meet at the `pushed` flags as before.
__device__ bool enter(const gicl_device_comm_t& c, const CollScratch& s, DirectArgs& a, uint64_t e,
                      size_t esize, Windows* peers, int* fail, bool* push, bool* swap,
                      bool* all_pushed) {
  const int n = c.nranks;
  if (a.stage_src) a.src_off = stage_off(c, s, e & 1);
  if (a.unstage_dst) a.dst_off = stage_off(c, s, (e + 1) & 1);
  if (a.push_first) push_copies(c, s, a, e, esize);
  if (a.stage_src) {
    char* stage = heap_at(c, c.rank, a.src_off);
    const char* send = static_cast<const char*>(a.send);
    size_t lo, len;
    // Two-shot, reduce-scatter and alltoall push instead.
    switch (a.kind) {
      case DirectKind::kNvlsAllReduce:
        for (int j = 0; j < n; ++j) {
          const Transfer b = direct::two_shot_block(j, a.count, n, j, esize);
          my_slice(a, b.count, esize, &lo, &len);
          copy_slice(stage + (b.offset + lo) * esize, send + (b.offset + lo) * esize, len * esize);
        }
        break;
      default:
        my_slice(a, a.count, esize, &lo, &len);
        copy_slice(stage + lo * esize, send + lo * esize, len * esize);
        break;
    }
  }
  const uint64_t src_ld = a.src_off != kNoWindow ? a.src_ld
                          : a.push_first         ? kPushedFirst
                                                 : uint64_t{0};
  const Windows mine{a.src_off, src_ld, a.dst_off, a.dst_ld, a.count, a.swap_off};
  // A staged source, or the pushes, were written by this block just now: the peers read them
  // after the barrier.
  *push = entry_barrier(c, s, e, mine, a.stage_src || a.push_first, peers, fail, swap, all_pushed);
  return !*fail;
}

/// Bytes of one swap chunk: a block holds two in shared memory (the one it stores to a peer and
/// the next, loaded while it waits for that peer).
constexpr size_t kSwapChunk = 16 << 10;
struct SwapBuffers {
  uint4 chunk[2][kSwapChunk / 16];
};

/// `bytes` from `from` to `to`, block-wide, 16 bytes at a time where both are aligned to 16.
/// kGlobalSource: `from` is global memory a peer wrote (read through L2 only; a shared-memory
/// source must not be, ld.global.cg on it faults). The device API's scope_copy does the same job
/// with eight loads in flight per thread, but measured 5-7 % slower here (in-place alltoall,
/// 64-512 MiB, one H100 under MPS).
template <bool kGlobalSource>
__device__ __forceinline__ void copy_block(char* to, const char* from, size_t bytes) {
  auto pack = [&](size_t i) {
    const uint4* p = reinterpret_cast<const uint4*>(from) + i;
    if constexpr (kGlobalSource) return __ldcg(p);
    return *p;
  };
  auto byte = [&](size_t i) {
    if constexpr (kGlobalSource) return __ldcg(from + i);
    return from[i];
  };
  if (((reinterpret_cast<uintptr_t>(to) | reinterpret_cast<uintptr_t>(from)) & 15) == 0) {
    const size_t packs = bytes / 16;
    for (size_t i = threadIdx.x; i < packs; i += blockDim.x)
      reinterpret_cast<uint4*>(to)[i] = pack(i);
    for (size_t i = packs * 16 + threadIdx.x; i < bytes; i += blockDim.x) to[i] = byte(i);
  } else {
    for (size_t i = threadIdx.x; i < bytes; i += blockDim.x) to[i] = byte(i);
  }
}

/// In-place alltoall where every rank's buffer is a window: rank i's block j and rank j's block
/// i trade places with no staging. Block b's step k pairs rank i with rank (k + b - i) mod n, a
/// matching (that rank's block b has i as its partner at step k), so no rank waits for one busy
/// with a third; each rank sits out the one step that pairs it with itself. The offset by b
/// spreads a rank's blocks over all its peers at once instead of the whole grid trading with one
/// peer per step: 1 GiB on 4 x H200 takes 2.71 ms instead of 3.56 (the pieces of a 32 MiB
/// scratch; out of place 2.47). With its partner j, chunk by chunk of this block's
/// slice, the block loads its chunk of block j into shared memory and tells j so (swapped[b][me]
/// at j, raised to (e << 20) + chunks loaded); once j has loaded the same chunk of its block i
/// (so the bytes there have been read), it stores its copy there. The next chunk is loaded and
/// announced while it waits. A load has returned its bytes before the block barrier that
/// precedes the announcement, so a peer's store can never reach them first. False when a wait
/// failed.
__device__ bool swap_blocks(const gicl_device_comm_t& c, const CollScratch& s, const DirectArgs& a,
                            const Windows* peers, uint64_t e, size_t esize, size_t lo, size_t len,
                            SwapBuffers& buf, int* fail) {
  const int n = c.nranks, me = c.rank;
  const size_t bytes = len * esize;
  const uint64_t chunks = (bytes + kSwapChunk - 1) / kSwapChunk;
  // A block's slice is far below 2^20 chunks (16 GiB), and epochs below 2^44 (GICL_EPOCH_BASE is
  // capped at 2^40), so the flag never wraps.
  const uint64_t base = e << 20;
  char* const buffer = static_cast<char*>(a.recv);
  for (int k = 0; k < n && chunks > 0; ++k) {
    const int j = direct::swap_partner((k + static_cast<int>(blockIdx.x)) % n, me, n);
    if (j == me) continue;
    const char* mine = buffer + (j * a.recv_ld + lo) * esize;  // my block for j, my slice
    char* theirs = window<char>(c, s, j, peers[j].swap_off) + (me * a.recv_ld + lo) * esize;
    uint64_t* tell = dev::peer_ptr(c, s.swapped + blockIdx.x * static_cast<size_t>(n) + me, j);
    const uint64_t* heard = s.swapped + blockIdx.x * static_cast<size_t>(n) + j;
    auto size_of = [&](uint64_t q) {
      const size_t left = bytes - q * kSwapChunk;
      return left < kSwapChunk ? left : kSwapChunk;
    };
    auto load = [&](uint64_t q) {
      copy_block<true>(reinterpret_cast<char*>(buf.chunk[q & 1]), mine + q * kSwapChunk,
                       size_of(q));
      __syncthreads();
      if (threadIdx.x == 0) dev::detail::store_relaxed_sys(tell, base + q + 1);
    };
    load(0);
    for (uint64_t q = 0; q < chunks; ++q) {
      if (q + 1 < chunks) load(q + 1);
      if (threadIdx.x == 0 && !wait_for_peer(c, heard, base + q + 1, j)) *fail = 1;
      __syncthreads();
      if (*fail) return false;
      copy_block<false>(theirs + q * kSwapChunk, reinterpret_cast<const char*>(buf.chunk[q & 1]),
                        size_of(q));
      __syncthreads();  // before chunk q + 2 overwrites this buffer
    }
  }
  return true;
}

/// A launch's end after its last access of the peers: where nothing follows (no unstaging),
/// the exit barrier and the epoch in one (exit_and_finish) and false, the kernel is done; else
/// the exit barrier alone and whether it passed (the caller copies out of the staging, then
/// finish_epoch).
__device__ __forceinline__ bool exit_to_unstage(const gicl_device_comm_t& c, const CollScratch& s,
                                                const DirectArgs& a, uint64_t e, int* fail) {
  if (!a.unstage_dst) {
    exit_and_finish(c, s, e, fail);
    return false;
  }
  exit_barrier(c, s, e, fail);
  return !*fail;
}

/// NVLS windows are multicast addresses: every rank must use the same heap offsets. Checked
/// against the peers' published windows (emulated and real alike), reported as a bad argument.
__device__ bool nvls_same_windows(const gicl_device_comm_t& c, const CollScratch& s,
                                  const DirectArgs& a, const Windows* peers, int* fail) {
  const int t = threadIdx.x;
  if (t < c.nranks && t != c.rank) {
    const Windows& w = peers[t];
    const bool src_ok = a.kind != DirectKind::kNvlsAllReduce || w.src_off == a.src_off;
    if (!src_ok || w.dst_off != a.dst_off) {
      dev::detail::report(dev::detail::reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT,
                          GICL_OP_PEER_PTR, t, window<char>(c, s, c.rank, a.dst_off), a.dst_off,
                          w.dst_off, 0);
      *fail = 1;
    }
  }
  __syncthreads();
  return !*fail;
}

/// Real multimem operations on 16-byte packs (float sum; half and bfloat16 sum, min, max):
/// the NVSwitch reduces the ranks' copies and broadcasts the store.
template <gicl_datatype_t D, gicl_redop_t Op>
struct Multimem {
  static constexpr bool kSupported = (D == gicl_float32 && Op == gicl_sum) ||
                                     ((D == gicl_float16 || D == gicl_bfloat16) &&
                                      (Op == gicl_sum || Op == gicl_min || Op == gicl_max));
  __device__ static uint4 ld_reduce(const char* mc) {
    uint4 v{};
#define GICL_LD_REDUCE(shape)                                                         \
  asm volatile("multimem.ld_reduce.relaxed.sys.global." shape " {%0,%1,%2,%3}, [%4];" \
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)                           \
               : "l"(mc)                                                              \
               : "memory")
    if constexpr (D == gicl_float32 && Op == gicl_sum)
      GICL_LD_REDUCE("add.v4.f32");
    else if constexpr (D == gicl_float16 && Op == gicl_sum)
      GICL_LD_REDUCE("add.acc::f32.v4.f16x2");
    else if constexpr (D == gicl_float16 && Op == gicl_min)
      GICL_LD_REDUCE("min.v4.f16x2");
    else if constexpr (D == gicl_float16 && Op == gicl_max)
      GICL_LD_REDUCE("max.v4.f16x2");
    else if constexpr (D == gicl_bfloat16 && Op == gicl_sum)
      GICL_LD_REDUCE("add.acc::f32.v4.bf16x2");
    else if constexpr (D == gicl_bfloat16 && Op == gicl_min)
      GICL_LD_REDUCE("min.v4.bf16x2");
    else if constexpr (D == gicl_bfloat16 && Op == gicl_max)
      GICL_LD_REDUCE("max.v4.bf16x2");
#undef GICL_LD_REDUCE
    return v;
  }
};

__device__ __forceinline__ void multimem_st(char* mc, uint4 v) {
  asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(mc), "r"(v.x),
               "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

template <gicl_datatype_t D, gicl_redop_t Op>
__device__ void nvls_allreduce(const gicl_device_comm_t& c, const CollScratch& s,
                               const DirectArgs& a, size_t lo, size_t len) {
  using T = typename DType<D>::Storage;
  if (a.mc == nullptr) {
    // Emulated: the multicast address of offset X reads and writes offset X at every rank.
    __shared__ const T* in[kMaxDirectRanks];
    __shared__ T* out[kMaxDirectRanks];
    for (int j = threadIdx.x; j < c.nranks; j += blockDim.x) {
      in[j] = window<const T>(c, s, j, a.src_off) + lo;
      out[j] = window<T>(c, s, j, a.dst_off) + lo;
    }
    __syncthreads();
    reduce_slice<D, Op>(in, c.nranks, out, c.nranks, len);
    return;
  }
  if constexpr (Multimem<D, Op>::kSupported) {
    // The host checked 16-byte alignment and size for the real path.
    constexpr size_t V = 16 / sizeof(T);
    for (size_t p = threadIdx.x; p < len / V; p += blockDim.x) {
      const size_t byte = (lo + p * V) * sizeof(T);
      multimem_st(a.mc + a.dst_off + byte, Multimem<D, Op>::ld_reduce(a.mc + a.src_off + byte));
    }
  }
}

template <gicl_datatype_t D, gicl_redop_t Op>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(gicl_device_comm_t c, CollScratch s, DirectArgs a) {
  read_direct_params(c, s, a);
  const EpochPlan ep = plan_epochs(c, s);
  __shared__ int fail;
  __shared__ Windows peers[kMaxDirectRanks];
  if (threadIdx.x == 0) fail = 0;
  pdl_prologue();
  // `a` is a by-value kernel parameter: enter() fills in the staging windows.
  using T = typename DType<D>::Storage;
  const int n = c.nranks, me = c.rank;
  __shared__ const T* in[kMaxDirectRanks];
  __shared__ T* out[kMaxDirectRanks];
  bool late;
  const uint64_t e = begin_epoch(c, ep, entry_lag(a), &late);
  if (late) return;
  bool push, swap, all_pushed;
  if (!enter(c, s, a, e, sizeof(T), peers, &fail, &push, &swap, &all_pushed)) return;
  if (blockIdx.x == 0 && ll_refresh(e, 2)) refresh_own_ll_rows(c, s.ll, s.ll_entries, e);
  size_t lo, len;
  if (a.kind == DirectKind::kOneShot) {
    my_slice(a, a.count, sizeof(T), &lo, &len);
    // A peer whose window is not its staging of this epoch (the same heap offset on every rank)
    // is read in place, in its own buffer.
    bool peer_in_place = false;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const uint64_t off = j == me ? a.src_off : peers[j].src_off;
      in[j] = window<const T>(c, s, j, off) + lo;
      peer_in_place |= j != me && off != stage_off(c, s, e & 1);
    }
    if (threadIdx.x == 0) out[0] = static_cast<T*>(a.recv) + lo;
    peer_in_place = __syncthreads_or(peer_in_place) != 0;
    reduce_slice<D, Op>(in, n, out, 1, len);
    // Staged: no exit barrier. The peers read this rank's staging until their launch ends, and
    // the next launch stages into the other buffer; the one after waits for their epochs. Not
    // where a peer is read in place: that peer waits at its exit barrier for every rank.
    if (a.stage_src && !peer_in_place) {
      finish_epoch(c, s, e);
      return;
    }
  } else if (a.kind == DirectKind::kNvlsAllReduce) {
    if (!nvls_same_windows(c, s, a, peers, &fail)) return;
    const Transfer mine = direct::two_shot_block(me, a.count, n, me, sizeof(T));
    my_slice(a, mine.count, sizeof(T), &lo, &len);
    nvls_allreduce<D, Op>(c, s, a, mine.offset + lo, len);
  } else if (a.kind == DirectKind::kTwoShot) {
    if (push && !finish_pushes(c, s, a, e, sizeof(T), all_pushed, &fail)) return;
    const Transfer mine = direct::two_shot_block(me, a.count, n, me, sizeof(T));
    const size_t mlo = mine.offset;
    my_slice(a, mine.count, sizeof(T), &lo, &len);
    // Peers' windows came with the entry barrier (`peers`).
    // This rank's own block comes from send and goes to recv directly.
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const Windows r = peers[j];
      if (j == me) {
        in[j] = static_cast<const T*>(a.send) + mlo + lo;
        out[j] = static_cast<T*>(a.recv) + mlo + lo;
      } else {
        in[j] = push ? reinterpret_cast<const T*>(inbox_at(c, s, a, e, me, j, sizeof(T))) + lo
                     : window<const T>(c, s, j, r.src_off) + mlo + lo;
        out[j] = window<T>(c, s, j, r.dst_off) + mlo + lo;
      }
    }
    __syncthreads();
    reduce_slice<D, Op>(in, n, out, n, len);
  } else if (a.kind == DirectKind::kReduceScatter) {
    if (push && !finish_pushes(c, s, a, e, sizeof(T), all_pushed, &fail)) return;
    my_slice(a, a.count, sizeof(T), &lo, &len);
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const Windows r = peers[j];
      if (j == me)
        in[j] = static_cast<const T*>(a.send) + me * a.send_ld + lo;
      else
        in[j] = push ? reinterpret_cast<const T*>(inbox_at(c, s, a, e, me, j, sizeof(T))) + lo
                     : window<const T>(c, s, j, r.src_off) + me * r.src_ld + lo;
    }
    if (threadIdx.x == 0) out[0] = static_cast<T*>(a.recv) + lo;
    __syncthreads();
    reduce_slice<D, Op>(in, n, out, 1, len);
    // Pushed: the peers are done with this rank (the inbox is reused two launches on, after
    // their epochs), so no exit barrier.
    if (push) {
      finish_epoch(c, s, e);
      return;
    }
  } else if (me == a.root) {  // kReduce
    my_slice(a, a.count, sizeof(T), &lo, &len);
    for (int j = threadIdx.x; j < n; j += blockDim.x)
      in[j] = window<const T>(c, s, j, j == me ? a.src_off : peers[j].src_off) + lo;
    if (threadIdx.x == 0) out[0] = static_cast<T*>(a.recv) + lo;
    __syncthreads();
    reduce_slice<D, Op>(in, n, out, 1, len);
  }
  if (!exit_to_unstage(c, s, a, e, &fail)) return;
  // Unstaging (two-shot and NVLS allreduce): every rank block's slice b arrived from its owner
  // (two-shot wrote its own block to recv).
  const T* stage = window<const T>(c, s, me, a.dst_off);
  for (int j = 0; j < n; ++j) {
    if (j == me && a.kind == DirectKind::kTwoShot) continue;
    const Transfer b = direct::two_shot_block(j, a.count, n, j, sizeof(T));
    my_slice(a, b.count, sizeof(T), &lo, &len);
    copy_slice(static_cast<T*>(a.recv) + b.offset + lo, stage + b.offset + lo, len * sizeof(T));
  }
  finish_epoch(c, s, e);
}

/// kSwap: the variant with shared memory for swap_blocks, launched where this rank offers a swap.
template <bool kSwap>
__global__ void __launch_bounds__(kThreads)
    copy_kernel(gicl_device_comm_t c, CollScratch s, DirectArgs a, int esize) {
  read_direct_params(c, s, a);
  const EpochPlan ep = plan_epochs(c, s);
  __shared__ int fail;
  __shared__ Windows peers[kMaxDirectRanks];
  if (threadIdx.x == 0) fail = 0;
  pdl_prologue();
  const int n = c.nranks, me = c.rank;
  char* recv = static_cast<char*>(a.recv);
  const char* send = static_cast<const char*>(a.send);
  const int net_blocks = static_cast<int>(gridDim.x) - a.local_blocks;
  // The local blocks (the last ones) touch no peer: they wait for no epoch.
  const bool local = static_cast<int>(blockIdx.x) >= net_blocks;
  bool late;
  const uint64_t e = begin_epoch(c, ep, local ? kNoEpochWait : entry_lag(a), &late);
  if (late) return;
  if (local) {
    // This rank's own block, HBM to HBM: no peer reads or writes it, so no flags, no barrier.
    size_t llo, llen;
    partition_packs(a.count, a.local_blocks, blockIdx.x - net_blocks, esize, &llo, &llen);
    const size_t from = a.kind == DirectKind::kAllToAll ? me * a.send_ld : 0;
    copy_slice(recv + (me * a.recv_ld + llo) * esize, send + (from + llo) * esize, llen * esize);
    finish_epoch(c, s, e);
    return;
  }
  bool push;        // alltoall (the other copy kinds never push)
  bool swap;        // in-place alltoall, every rank's buffer a window
  bool all_pushed;  // never: alltoall pushes after the entry barrier
  if (!enter(c, s, a, e, esize, peers, &fail, &push, &swap, &all_pushed)) return;
  // Block 0 is never one of the local blocks (the last ones), which wait for no epoch.
  if (blockIdx.x == 0 && ll_refresh(e, 2)) refresh_own_ll_rows(c, s.ll, s.ll_entries, e);
  size_t lo, len;
  my_slice(a, a.count, esize, &lo, &len);
  const size_t b = len * esize;
  switch (a.kind) {
    case DirectKind::kAllGather: {
      // A peer that published a destination window (its recv is symmetric) receives by push:
      // writes run at full NVLink speed in both directions at once, reads do not. One read of
      // the send slice feeds this rank's own block and every push. Peers without a window are
      // pulled from.
      __shared__ char* dsts[kMaxDirectRanks];
      __shared__ int nd;
      __syncthreads();
      if (threadIdx.x == 0) {
        nd = 0;
        if (recv + me * a.recv_ld * esize != send && a.local_blocks == 0)
          dsts[nd++] = recv + (me * a.recv_ld + lo) * esize;
        for (int k = 1; k < n; ++k) {
          const int j = (me + k) % n;  // next peer first: spread the traffic
          const Windows w = peers[j];
          if (w.dst_off != kNoWindow)
            dsts[nd++] = window<char>(c, s, j, w.dst_off) + (me * w.dst_ld + lo) * esize;
        }
      }
      __syncthreads();
      fanout_copy(dsts, nd, send + lo * esize, b);
      if (a.dst_off == kNoWindow)
        for (int k = 1; k < n; ++k) {
          const int j = (me + k) % n;
          copy_slice(recv + (j * a.recv_ld + lo) * esize,
                     window<const char>(c, s, j, peers[j].src_off) + lo * esize, b);
        }
      break;
    }
    case DirectKind::kNvlsAllGather:
      if (!nvls_same_windows(c, s, a, peers, &fail)) return;
      if (a.mc == nullptr) {
        // Emulated multimem store: my block to the same offset at every rank.
        for (int k = 0; k < n; ++k)
          copy_slice(window<char>(c, s, (me + k) % n, a.dst_off) + (me * a.dst_ld + lo) * esize,
                     send + lo * esize, b);
      } else {
        const size_t base = a.dst_off + (me * a.dst_ld + lo) * esize;
        for (size_t p = threadIdx.x; p < b / 16; p += blockDim.x)
          multimem_st(a.mc + base + p * 16, reinterpret_cast<const uint4*>(send + lo * esize)[p]);
      }
      break;
    case DirectKind::kBroadcast: {
      if (me == a.root) {
        if (recv != send) copy_slice(recv + lo * esize, send + lo * esize, b);
        break;
      }
      // Scatter and allgather in one pass: the non-roots split the slice, each reads its part
      // from the root once and writes it to its own buffer and to every non-root that published
      // a destination window (its receive buffer, or its staging where it unstages). The root's
      // egress is the slice once, not once per peer. A rank without a destination window
      // receives no pushes: it reads the rest from the root too.
      const char* src = window<const char>(c, s, a.root, peers[a.root].src_off) + lo * esize;
      size_t plo, plen;
      partition_packs(len, n - 1, (me - a.root - 1 + n) % n, esize, &plo, &plen);
      __shared__ char* dsts[kMaxDirectRanks];
      __shared__ int nd;
      __syncthreads();
      if (threadIdx.x == 0) {
        nd = 0;
        dsts[nd++] = recv + (lo + plo) * esize;
        for (int k = 1; k < n; ++k) {
          const int j = (me + k) % n;  // next peer first: spread the traffic
          if (j != a.root && peers[j].dst_off != kNoWindow)
            dsts[nd++] = window<char>(c, s, j, peers[j].dst_off) + (lo + plo) * esize;
        }
      }
      __syncthreads();
      fanout_copy(dsts, nd, src + plo * esize, plen * esize);
      const size_t after = plo + plen;
      if (a.dst_off == kNoWindow) {
        copy_slice(recv + lo * esize, src, plo * esize);
        copy_slice(recv + (lo + after) * esize, src + after * esize, (len - after) * esize);
      }
      if (!a.unstage_dst) break;
      // The peers' parts arrived in the staging: after the exit barrier, into recv.
      if (!exit_to_unstage(c, s, a, e, &fail)) return;
      const char* stage = window<const char>(c, s, me, a.dst_off) + lo * esize;
      copy_slice(recv + lo * esize, stage, plo * esize);
      copy_slice(recv + (lo + after) * esize, stage + after * esize, (len - after) * esize);
      finish_epoch(c, s, e);
      return;
    }
    case DirectKind::kAllToAll: {
      if constexpr (kSwap) {
        __shared__ SwapBuffers buf;
        if (swap) {
          if (!swap_blocks(c, s, a, peers, e, esize, lo, len, buf, &fail)) return;
          break;  // the exit barrier: every store into this rank's buffer is complete
        }
      }
      // Push to peers with a destination window, pull from the others (as allgather); in push
      // mode (a rank without a source window: staged or in place) push to the others' inboxes.
      // Without local blocks, the first quarter of the threads copies this rank's own block in
      // HBM (nothing to copy in place) while the rest drive NVLink.
      const int local = a.local_blocks > 0 ? 0 : blockDim.x / 4;
      if (static_cast<int>(threadIdx.x) < local) {
        char* own = recv + (me * a.recv_ld + lo) * esize;
        const char* from = send + (me * a.send_ld + lo) * esize;
        if (own != from) copy_part(own, from, b, threadIdx.x, local);
      } else {
        const int r = threadIdx.x - local, nt = blockDim.x - local;
        for (int k = 1; k < n; ++k) {
          const int j = (me + k) % n;
          const Windows w = peers[j];
          const char* mine_j = send + (j * a.send_ld + lo) * esize;
          if (w.dst_off != kNoWindow)
            copy_part(window<char>(c, s, j, w.dst_off) + (me * w.dst_ld + lo) * esize, mine_j, b, r,
                      nt);
          else if (push)
            copy_part(inbox_at(c, s, a, e, j, me, esize) + lo * esize, mine_j, b, r, nt);
          if (a.dst_off == kNoWindow && !push)
            copy_part(recv + (j * a.recv_ld + lo) * esize,
                      window<const char>(c, s, j, w.src_off) + (me * w.src_ld + lo) * esize, b, r,
                      nt);
        }
      }
      if (push) {
        // Every peer's block for this rank is in recv (a destination window) or in the inbox;
        // nobody touches a peer after this barrier, so no exit barrier.
        flag_barrier(c, s.pushed, e, &fail);
        if (fail) return;
        if (a.dst_off == kNoWindow)
          for (int k = 1; k < n; ++k) {
            const int j = (me + k) % n;
            copy_slice(recv + (j * a.recv_ld + lo) * esize,
                       inbox_at(c, s, a, e, me, j, esize) + lo * esize, b);
          }
        finish_epoch(c, s, e);
        return;
      }
      break;
    }
    default:
      break;
  }
  if (!exit_to_unstage(c, s, a, e, &fail)) return;
  // Unstaging (NVLS allgather into staging): every rank's slice b arrived.
  const char* stage = window<const char>(c, s, me, a.dst_off);
  for (int j = 0; j < n; ++j)
    copy_slice(recv + (j * a.recv_ld + lo) * esize, stage + (j * a.dst_ld + lo) * esize, b);
  finish_epoch(c, s, e);
}

template <gicl_datatype_t D, gicl_redop_t Op>
struct ReduceKernel {
  static constexpr auto kernel = reduce_kernel<D, Op>;
};

const KernelFamily kDirectKernels("direct", [] {
  const cudaError_t e = load_family<ReduceKernel>();
  return e != cudaSuccess ? e : load_kernels(copy_kernel<false>, copy_kernel<true>);
});

}  // namespace

cudaError_t direct_blocks_per_sm(int* out) {
  const cudaError_t e = fewest_blocks_per_sm<ReduceKernel>(kThreads, out);
  if (e != cudaSuccess) return e;
  const cudaError_t f = fewest_blocks_per_sm(copy_kernel<false>, kThreads, out);
  if (f != cudaSuccess) return f;
  return fewest_blocks_per_sm(copy_kernel<true>, kThreads, out);
}

cudaError_t launch_direct(gicl_datatype_t dtype, gicl_redop_t op, const gicl_device_comm_t& c,
                          const CollScratch& s, const DirectArgs& a, int grid, const Launch& l) {
  switch (a.kind) {
    case DirectKind::kOneShot:
    case DirectKind::kTwoShot:
    case DirectKind::kReduceScatter:
    case DirectKind::kReduce:
    case DirectKind::kNvlsAllReduce:
      return launch_kernel(kernel_of<ReduceKernel>(dtype, op), grid, kThreads, l, c, s, a);
    default:
      return launch_kernel(a.swap_off != kNoWindow ? copy_kernel<true> : copy_kernel<false>, grid,
                           kThreads, l, c, s, a, static_cast<int>(dtype_size(dtype)));
  }
}

}  // namespace gicl::coll
