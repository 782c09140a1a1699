// SPDX-License-Identifier: Apache-2.0
#include "collectives/common/kernel_util.cuh"
#include "collectives/common/launch_table.cuh"
#include "collectives/common/ll_units.cuh"
#include "collectives/direct/direct.cuh"
#include "common/kernel_launch.cuh"

namespace gicl::coll {
namespace {

constexpr int kThreads = kLLThreads;

/// Whether rank `me` stores anything in an LL call of `k`: a broadcast's non-roots do not (and
/// may pass no send buffer, NCCL's contract).
__device__ __forceinline__ bool sends_at_all(Collective k, int me, int root) {
  return k != Collective::kBroadcast || me == root;
}
/// Whether a sending rank stores into rank j's row: a reduce's ranks only into the root's.
__device__ __forceinline__ bool sends_to(Collective k, int root, int j) {
  return k != Collective::kReduce || j == root;
}

/// This rank's row at every peer rewritten whole at epoch `e` (ll_refresh): the units past the
/// call's where the call sent to that peer, all of them where it sent nothing there.
__device__ __noinline__ void refresh_rows(gicl_device_comm_t c, CollScratch s, LLArgs a,
                                          uint64_t e) {
  const int n = c.nranks, me = c.rank;
  const size_t units = (a.block_bytes + 7) / 8, row_units = s.ll_entries / 2;
  const size_t first = blockIdx.x * blockDim.x + threadIdx.x,
               stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  uint64_t* const mine = s.ll + ((e & 1) * n + me) * s.ll_entries;
  const bool sends = sends_at_all(a.coll, me, a.root);
  for (int j = 0; j < n; ++j) {
    if (j == me) continue;
    const bool sent = sends && sends_to(a.coll, a.root, j);
    ll_refresh_row(dev::peer_ptr(c, mine, j), sent ? units : 0, row_units, ll_flag(e), first,
                   stride);
  }
  // Complete before the epoch goes out unfenced: a peer's launch of e + 2 reads these units.
  dev::detail::fence_system();
}

template <gicl_datatype_t D, gicl_redop_t Op>
__global__ void __launch_bounds__(kThreads)
    ll_kernel(gicl_device_comm_t c, CollScratch s, LLArgs a) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  constexpr int V = 8 / sizeof(T);
  // What follows from the parameters alone is worked out before the PDL wait, while the previous
  // kernel drains: a one-block call runs on one warp, and each instruction or constant-cache miss
  // left after the wait adds its latency to the call (common/kernel_launch.cuh).
  int n = c.nranks, me = c.rank;
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  const size_t bb = a.block_bytes;
  Collective k = a.coll;
  int root = a.root;
  const bool blocked_src = send_splits(k);
  // The grid has a thread per 8-byte unit of the rank block (ll_blocks): a thread carries at
  // most one, so the small call's path is straight code rather than unit loops.
  const uint32_t u = blockIdx.x * blockDim.x + threadIdx.x;
  const size_t off = static_cast<size_t>(u) * 8;
  bool has_unit = off < bb;
  // This thread's unit of the send and receive buffers, and whether it is one aligned word.
  const char* src = send + off;
  char* dst = recv + off;
  bool src_word = whole_word(send, off, bb);
  bool dst_word = whole_word(recv, off, bb);
  bool sends = sends_at_all(k, me, root);
  // Rank r's entries of this unit at epoch parity p: rows + (p * n + r) * ll_entries.
  uint64_t* rows = s.ll + 2 * static_cast<size_t>(u);
  size_t row_stride = s.ll_entries;
  EpochPlan ep = plan_epochs(c, s);
  keep_in_registers(n, me, k, root, has_unit, src, dst, src_word, dst_word, sends, rows, row_stride,
                    ep.own, ep.seen, ep.push, ep.rank_thread, ep.peer_thread);
  pdl_prologue();
  // This thread's unit of the result (allreduce, reduce-scatter, reduce, broadcast).
  auto put = [&](uint64_t v) {
    if (dst_word)
      *reinterpret_cast<uint64_t*>(dst) = v;
    else
      store_unit(recv, off, bb, v);
  };
  // The unit of a buffer every peer gets whole, loaded before the epoch: the two loads are in
  // flight together rather than one after the other (a small call is little else).
  uint64_t whole = 0;
  if (sends && !blocked_src && has_unit)
    whole = src_word ? *reinterpret_cast<const uint64_t*>(src) : load_unit(send, off, bb);
  // This parity's rows were last read by the peers two launches ago.
  bool failed;
  const uint64_t e = begin_epoch(c, ep, 2, &failed);
  if (failed) return;
  const uint32_t flag = ll_flag(e);
  uint64_t* const here = rows + (e & 1) * n * row_stride;
  // Send: the unit as two (data, flag) entries in one 16-byte store to every peer that needs it.
  if (has_unit && sends) {
    uint64_t* const mine = here + me * row_stride;  // my row at every rank
    for (int step = 1; step < n; ++step) {
      int j = me + step;
      if (j >= n) j -= n;
      if (!sends_to(k, root, j)) continue;
      const uint64_t v = blocked_src ? load_unit(blk(send, j, bb), off, bb) : whole;
      ll_store(dev::peer_ptr(c, mine, j), v, flag);
    }
  }
  auto row = [&](int r, uint64_t* v) { return ll_wait(c, here + r * row_stride, flag, r, v); };
  if (has_unit) {
    switch (k) {
      case Collective::kAllReduce:
      case Collective::kReduceScatter:
      case Collective::kReduce: {
        if (k == Collective::kReduce && me != root) break;
        // Reduce in rank order, this rank's own contribution read locally.
        A acc[V];
        for (int r = 0; r < n; ++r) {
          uint64_t v;
          if (r == me) {
            v = k == Collective::kReduceScatter ? load_unit(blk(send, me, bb), off, bb) : whole;
          } else if (!row(r, &v)) {
            failed = true;
            break;
          }
          T t[V];
          memcpy(t, &v, 8);
#pragma unroll
          for (int q = 0; q < V; ++q)
            acc[q] = r == 0 ? to_acc<T, A>(t[q]) : combine<Op, A>(acc[q], to_acc<T, A>(t[q]));
        }
        if (failed) break;
        T res[V];
#pragma unroll
        for (int q = 0; q < V; ++q) res[q] = from_acc<T, A>(finish<Op, A, T>(acc[q], n));
        uint64_t out;
        memcpy(&out, res, 8);
        put(out);
        break;
      }
      case Collective::kAllGather:
      case Collective::kAllToAll:
        for (int r = 0; r < n && !failed; ++r) {
          uint64_t v;
          if (r == me)
            v = k == Collective::kAllToAll ? load_unit(blk(send, me, bb), off, bb) : whole;
          else if (!row(r, &v))
            failed = true;
          if (!failed) store_unit(recv + static_cast<size_t>(r) * bb, off, bb, v);
        }
        break;
      case Collective::kBroadcast: {
        uint64_t v;
        if (me == root) {
          if (recv != send) put(whole);
        } else if (row(root, &v)) {
          put(v);
        } else {
          failed = true;
        }
        break;
      }
    }
  }
  if (__syncthreads_or(failed)) return;
  // Once every 2^31 epochs per parity (ll_refresh); out of line and from the parameters alone,
  // so the call's path keeps no value alive for it.
  if (ll_refresh(e, 2)) refresh_rows(c, s, a, e);
  // The values read were consumed (stored above): no fence needed before telling the peers.
  publish_epoch(s, ep, e, false);
}

template <gicl_datatype_t D, gicl_redop_t Op>
struct LLKernel {
  static constexpr auto kernel = ll_kernel<D, Op>;
};

const KernelFamily kLLKernels("LL", [] { return load_family<LLKernel>(); });

}  // namespace

cudaError_t ll_blocks_per_sm(int* out) {
  return fewest_blocks_per_sm<LLKernel>(kThreads, out);
}

cudaError_t launch_ll(gicl_datatype_t dtype, gicl_redop_t op, const gicl_device_comm_t& c,
                      const CollScratch& s, const LLArgs& a, const Launch& l) {
  const int grid = ll_blocks(a.block_bytes);
  return launch_kernel(byte_kernel_of<LLKernel>(is_reduction(a.coll), dtype, op), grid,
                       grid == 1 ? ll_threads(a.block_bytes, c.nranks) : kThreads, l, c, s, a);
}

}  // namespace gicl::coll
