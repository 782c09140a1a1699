// SPDX-License-Identifier: Apache-2.0
#include "collectives/common/launch_table.cuh"
#include "collectives/pipe/fifo.cuh"
#include "collectives/pipe/pipe.cuh"
#include "collectives/schedule/schedule.hpp"
#include "common/kernel_launch.cuh"

namespace gicl::coll {
namespace {

constexpr int kThreads = kPipeThreads;

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

/// Block-wide dst[i] = dst[i] (op) src[i] in the storage type.
template <gicl_datatype_t D, gicl_redop_t Op>
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

/// Block-wide: one message of schedule range [o0, o0 + len) of `from` to `peer`.
__device__ bool send_range(const gicl_device_comm_t& c, const CollScratch& s, Fifo& f,
                           const Map& from, size_t o0, size_t len, int peer) {
  uint64_t m;
  char* slot = send_begin(c, s, f, peer, &m);
  if (slot == nullptr) return false;
  for (size_t o = 0; o < len;) {
    const size_t r = from.run(o0 + o, len - o);
    send_store(c, slot, o * from.esize, from.at(o0 + o), r * from.esize, peer);
    o += r;
  }
  send_end(c, s, f, peer, m, len * from.esize);
  return true;
}

/// Sends schedule range [o, o + len) of `from` to `peer` as messages of at most one slot, and
/// receives into `w` likewise (`from` is `w` but for alltoall, whose input and output differ);
/// the two are interleaved message by message, sends first, so that no pair of ranks waits on
/// each other (see docs/collectives.md, "pipe").
template <gicl_datatype_t D, gicl_redop_t Op>
__device__ bool run_step(const gicl_device_comm_t& c, const CollScratch& s, Fifo& f,
                         const Map& from, const Map& w, const Step& st) {
  const size_t per = s.slot_bytes / w.esize;
  const size_t ns = st.send.peer >= 0 ? (st.send.count + per - 1) / per : 0;
  const size_t nr = st.recv.peer >= 0 ? (st.recv.count + per - 1) / per : 0;
  for (size_t k = 0; k < ns || k < nr; ++k) {
    if (k < ns && !send_range(c, s, f, from, st.send.offset + k * per,
                              min(per, st.send.count - k * per), st.send.peer))
      return false;
    if (k < nr) {
      uint64_t m;
      const size_t o0 = st.recv.offset + k * per;
      const size_t len = min(per, st.recv.count - k * per);
      const char* slot = recv_begin(c, s, f, st.recv.peer, &m, len * w.esize);
      if (slot == nullptr) return false;
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
template <gicl_datatype_t D, gicl_redop_t Op>
__device__ bool canonical_reduce_scatter(const gicl_device_comm_t& c, const CollScratch& s, Fifo& f,
                                         const Map& w, size_t count) {
  using T = typename DType<D>::Storage;
  const int n = c.nranks, me = c.rank;
  const size_t per = s.slot_bytes / w.esize;
  __shared__ const T* in[kMaxPipeRanks];
  __shared__ T* out[1];
  size_t mlo, mlen;
  partition(count, n, me, &mlo, &mlen);
  const size_t rounds = (count / n + 1 + per - 1) / per;
  for (size_t k = 0; k < rounds; ++k) {
    for (int j = 0; j < n; ++j) {
      size_t lo, len;
      partition(count, n, j, &lo, &len);
      if (j == me || k * per >= len) continue;
      if (!send_range(c, s, f, w, lo + k * per, min(per, len - k * per), j)) return false;
    }
    if (k * per >= mlen) continue;
    const size_t o0 = mlo + k * per, l = min(per, mlen - k * per);
    // Message f.rcvd[q] + 1 from every q: recv_end counts each only once all are reduced.
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      uint64_t m;
      if (recv_begin(c, s, f, q, &m, l * w.esize) == nullptr) return false;
    }
    // The rank block is contiguous in memory run by run; reduce each run over all inputs.
    for (size_t o = 0; o < l;) {
      const size_t r = w.run(o0 + o, l - o);
      __syncthreads();
      if (threadIdx.x == 0) {
        for (int q = 0; q < n; ++q)
          in[q] = q == me ? reinterpret_cast<const T*>(w.at(o0 + o))
                          : reinterpret_cast<const T*>(slot_of(s, f, q, f.rcvd[q] + 1)) + o;
        out[0] = reinterpret_cast<T*>(w.at(o0 + o));
      }
      __syncthreads();
      reduce_slice<D, Op>(in, n, out, 1, r);
      o += r;
    }
    for (int q = 0; q < n; ++q)
      if (q != me) recv_end(c, s, f, q, f.rcvd[q] + 1);
  }
  return true;
}

template <gicl_datatype_t D, gicl_redop_t Op>
__global__ void __launch_bounds__(kThreads)
    pipe_kernel(gicl_device_comm_t c, CollScratch s, PipeArgs a) {
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
  Map from{};  // alltoall: where the sends read (the others send from w)
  switch (a.coll) {
    case Collective::kAllReduce:
      if (send != recv) copy_slice(recv + lo * E, send + lo * E, len * E);
      break;
    case Collective::kReduce:
      // The ring's chain into the root (ring::reduce); in the canonical order, or with another
      // pipe algorithm, an allreduce whose result only the root keeps. The others work in the
      // local temp buffer (the host cuts the call into pieces it holds).
      if (a.canonical || a.algo != Algorithm::kRing) sh.coll = Collective::kAllReduce;
      if (me != a.root) w.base = s.temp;
      if (send != w.base) copy_slice(w.base + lo * E, send + lo * E, len * E);
      break;
    case Collective::kAllToAll:
      // Direct's pairwise schedule, input block j to rank j. In place, the input is first copied
      // to the local temp buffer: a block is received over before it is sent otherwise.
      w.ld = a.send_ld * E;
      w.blk = len;
      sh.count = n * len;
      from = w;  // the blocks' layout; the base follows
      if (send == recv) {
        from = Map{s.temp, a.count * E, len, lo, E};
        for (int j = 0; j < n; ++j)
          copy_slice(s.temp + (j * a.count + lo) * E, send + (j * a.send_ld + lo) * E, len * E);
      } else {
        from.base = const_cast<char*>(send);
        copy_slice(recv + (me * a.send_ld + lo) * E, send + (me * a.send_ld + lo) * E, len * E);
      }
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
  if (a.canonical && is_reduction(a.coll)) {
    // Reduce-scatter in the canonical order, then the algorithm's allgather (allreduce).
    if (!canonical_reduce_scatter<D, Op>(c, s, f, w, sh.count)) return;
    if (sh.coll == Collective::kAllReduce) {
      sh.coll = Collective::kAllGather;
      if (sh.algo != Algorithm::kRing) sh.algo = Algorithm::kRecursiveDoubling;
    } else {
      sh.algo = Algorithm::kDirect;  // nothing left to do
      sh.nranks = 1;
    }
  }
  const int steps = num_steps(sh);
  const Map& src = a.coll == Collective::kAllToAll ? from : w;
  for (int i = 0; i < steps; ++i)
    if (!run_step<D, Op>(c, s, f, src, w, make_step(sh, me, i))) return;
  if (a.coll == Collective::kReduceScatter) {
    __syncthreads();
    copy_slice(recv + lo * E, s.temp + (me * a.count + lo) * E, len * E);
  }
  fifo_store(c, s, f);
}

template <gicl_datatype_t D, gicl_redop_t Op>
struct PipeKernel {
  static constexpr auto kernel = pipe_kernel<D, Op>;
};

const KernelFamily kPipeKernels("pipe", [] { return load_family<PipeKernel>(); });

}  // namespace

cudaError_t pipe_blocks_per_sm(int* out) {
  return fewest_blocks_per_sm<PipeKernel>(kThreads, out);
}

cudaError_t launch_pipe(gicl_datatype_t dtype, gicl_redop_t op, const gicl_device_comm_t& c,
                        const CollScratch& s, const PipeArgs& a, int grid, const Launch& l) {
  // Copy-only collectives do not depend on the operation: one instantiation per type.
  return launch_kernel(kernel_of<PipeKernel>(dtype, is_reduction(a.coll) ? op : gicl_sum), grid,
                       kThreads, l, c, s, a);
}

}  // namespace gicl::coll
