// SPDX-License-Identifier: Apache-2.0
// The LL128 protocol: the LL kernel's shape (each rank stores what a peer needs straight into
// that peer's row, receivers spin on local rows, no barrier) with one flag per 128-byte line
// instead of one per 8-byte word, so 120 of every 128 bytes crossing NVLink are data (LL: 64).
// Line layout and its hardware premise: collectives/schedule/ll128.hpp.
#include "collectives/common/kernel_util.cuh"
#include "collectives/common/launch_table.cuh"
#include "collectives/common/ll_units.cuh"
#include "collectives/direct/direct.cuh"
#include "collectives/schedule/ll128.hpp"
#include "common/kernel_launch.cuh"

namespace gicl::coll {
namespace {

constexpr int kThreads = kLLThreads;
constexpr unsigned kWarp = 0xffffffffu;

/// This lane's 16 bytes of a line, in one load instruction (volatile: a peer writes it).
__device__ __forceinline__ void ll128_load(const char* p, uint64_t v[2]) {
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
               : "=l"(v[0]), "=l"(v[1])
               : "l"(p)
               : "memory");
}

/// Line groups a warp has in flight at once (its groups g, g + warps, ...) where it has more than
/// one: one at a time left each warp a load's latency per 512 bytes, sending and receiving
/// (2 x H200, allreduce 2 MiB 14.5 -> 13.8 us). Where a warp has one group (the grid is smaller
/// than kMaxLL128Blocks), the loop for two cost 0.3 us at 256 KiB and runs for one. The reductions
/// hold U x 2 x V accumulators a lane: the 1-byte types keep one group (two spilled).
template <typename T>
inline constexpr int kLL128Unroll = sizeof(T) >= 2 ? 2 : 1;

template <gicl_datatype_t D, gicl_redop_t Op, int U>
__device__ __forceinline__ void ll128_run(const gicl_device_comm_t& c, const CollScratch& s,
                                          const LLArgs& a) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  constexpr int V = 8 / sizeof(T);
  const int n = c.nranks, me = c.rank;
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  const size_t bb = a.block_bytes, lines = ll128_lines(bb), groups = ll128_groups(bb);
  const Collective k = a.coll;
  const bool blocked_src = send_splits(k);
  const char* own = blocked_src ? blk(send, me, bb) : send;  // this rank's part for itself
  const int lane = threadIdx.x & 31;
  const size_t warp = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const size_t warps = static_cast<size_t>(gridDim.x) * blockDim.x / 32;
  // A broadcast's non-roots may pass no send buffer (NCCL's contract).
  const bool sends = k != Collective::kBroadcast || me == a.root;
  // This lane's 16 bytes of a buffer every peer gets whole, line group g (2 units).
  auto whole = [&](size_t g, uint64_t v[2]) {
    const LL128Slot sl = ll128_slot(g, lane);
    v[0] = v[1] = 0;
    if (!sends || blocked_src || sl.line >= lines) return;
    v[0] = load_unit(send, sl.unit * 8, bb);
    if (!sl.flag_lane) v[1] = load_unit(send, (sl.unit + 1) * 8, bb);
  };
  const EpochPlan ep = plan_epochs(c, s);
  pdl_prologue();
  // The warp's first groups, loaded before the epoch so that all those loads are in flight
  // together.
  uint64_t first[U][2];
#pragma unroll
  for (int u = 0; u < U; ++u) whole(warp + u * warps, first[u]);
  // This parity's rows were last read by the peers two launches ago.
  bool late;
  const uint64_t e = begin_epoch(c, ep, 2, &late);
  if (late) return;
  const uint64_t flag = e;  // epochs start at 1: never the zeroed rows' 0
  const size_t parity = (e & 1) * static_cast<size_t>(n);
  char* mine = s.ll128 + (parity + me) * s.ll128_row;  // my row at every rank
  // Send: every line a peer needs, 16 bytes per lane, the warp's 4 lines in one store; U groups
  // loaded before any is stored.
  for (size_t g0 = warp; g0 < groups && sends; g0 += U * warps) {
    uint64_t same[U][2];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (g0 != warp) {
        whole(g0 + u * warps, same[u]);
      } else {
        same[u][0] = first[u][0];
        same[u][1] = first[u][1];
      }
    }
    for (int step = 1; step < n; ++step) {
      int j = me + step;
      if (j >= n) j -= n;
      if (k == Collective::kReduce && j != a.root) continue;
      uint64_t v[U][2];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const LL128Slot sl = ll128_slot(g0 + u * warps, lane);
        v[u][0] = same[u][0];
        v[u][1] = same[u][1];
        if (sl.line < lines && blocked_src) {
          v[u][0] = load_unit(blk(send, j, bb), sl.unit * 8, bb);
          if (!sl.flag_lane) v[u][1] = load_unit(blk(send, j, bb), (sl.unit + 1) * 8, bb);
        }
        if (sl.flag_lane) v[u][1] = flag;
      }
      char* dst = dev::peer_ptr(c, mine, j);
      __syncwarp();  // each line's 8 lanes store in one instruction
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const LL128Slot sl = ll128_slot(g0 + u * warps, lane);
        if (sl.line < lines)
          asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(dst + sl.row_off),
                       "l"(v[u][0]), "l"(v[u][1])
                       : "memory");
      }
    }
  }
  // Receive, warp by warp, U groups at a time; `failed` is the same on every lane of a warp.
  bool failed = false;
  for (size_t g0 = warp; g0 < groups && !failed; g0 += U * warps) {
    // Slot u of this lane, worked out where used (kept, U of them took registers that spilled).
    auto slot = [&](int u) { return ll128_slot(g0 + u * warps, lane); };
    // Rank r's part of this lane's lines: received from its row (every line's load issued before
    // any is waited for), or (r == me) read from this rank's own input. False when a receive
    // failed (reported).
    auto fetch = [&](int r, uint64_t v[U][2]) {
      if (r != me) {
        const char* row = s.ll128 + (parity + r) * s.ll128_row;
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const LL128Slot sl = slot(u);
          v[u][0] = v[u][1] = 0;
          if (sl.line < lines) ll128_load(row + sl.row_off, v[u]);
        }
        // Every line's flag lanes must see the flag. One load instruction reads each line
        // whole, so a flag seen vouches for the line it came with; lines not yet arrived are
        // loaded again, all of them (a line that had arrived stays until two launches on).
        auto here = [&] {
          bool ok = true;
#pragma unroll
          for (int u = 0; u < U; ++u) {
            const LL128Slot sl = slot(u);
            ok = ok && (sl.line >= lines || !sl.flag_lane || v[u][1] == flag);
          }
          return __all_sync(kWarp, ok);
        };
        dev::detail::Deadline deadline;
        for (uint32_t spin = 0; !here(); ++spin) {
          if ((spin & 1023) == 1023) {
            // The report names a line still missing (the first flag lane, at its first group,
            // whose flag has not come) and what its flag word holds; lane 0 keeps the deadline.
            int first = U;
#pragma unroll
            for (int u = U - 1; u >= 0; --u)
              if (slot(u).line < lines && slot(u).flag_lane && v[u][1] != flag) first = u;
            const unsigned who = __ballot_sync(kWarp, first < U);
            const int from = who != 0 ? __ffs(who) - 1 : 7;
            uint64_t mine = v[0][1];
#pragma unroll
            for (int u = 1; u < U; ++u)
              if (first == u) mine = v[u][1];
            const uint64_t seen = __shfl_sync(kWarp, mine, from);
            const int at = __shfl_sync(kWarp, first < U ? first : 0, from);
            int stop = 0;
            if (lane == 0)
              stop = deadline.expired(dev::detail::reporter(c), GICL_OP_SIGNAL_WAIT, r,
                                      row + ll128_slot(g0 + at * warps, from).row_off + 8, flag,
                                      seen, GICL_CMP_EQ);
            if (__shfl_sync(kWarp, stop, 0)) return false;
          }
#pragma unroll
          for (int u = 0; u < U; ++u) {
            const LL128Slot sl = slot(u);
            if (sl.line < lines) ll128_load(row + sl.row_off, v[u]);
          }
        }
        return true;
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const LL128Slot sl = slot(u);
        v[u][0] = v[u][1] = 0;
        if (sl.line < lines) {
          v[u][0] = load_unit(own, sl.unit * 8, bb);
          v[u][1] = load_unit(own, (sl.unit + 1) * 8, bb);
        }
      }
      return true;
    };
    switch (k) {
      case Collective::kAllReduce:
      case Collective::kReduceScatter:
      case Collective::kReduce: {
        if (k == Collective::kReduce && me != a.root) break;
        // Reduce in rank order.
        A acc[U][2][V];
        for (int r = 0; r < n && !failed; ++r) {
          uint64_t v[U][2];
          if (!fetch(r, v)) {
            failed = true;
            break;
          }
#pragma unroll
          for (int u = 0; u < U; ++u)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              T t[V];
              memcpy(t, &v[u][h], 8);
#pragma unroll
              for (int q = 0; q < V; ++q)
                acc[u][h][q] =
                    r == 0 ? to_acc<T, A>(t[q]) : combine<Op, A>(acc[u][h][q], to_acc<T, A>(t[q]));
            }
        }
        if (failed) break;
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const LL128Slot sl = slot(u);
          if (sl.line >= lines) continue;
          for (int h = 0; h < sl.units; ++h) {
            T res[V];
#pragma unroll
            for (int q = 0; q < V; ++q) res[q] = from_acc<T, A>(finish<Op, A, T>(acc[u][h][q], n));
            uint64_t out;
            memcpy(&out, res, 8);
            store_unit(recv, (sl.unit + h) * 8, bb, out);
          }
        }
        break;
      }
      case Collective::kAllGather:
      case Collective::kAllToAll:
        for (int r = 0; r < n && !failed; ++r) {
          uint64_t v[U][2];
          if (!fetch(r, v)) {
            failed = true;
            break;
          }
          char* out = recv + static_cast<size_t>(r) * bb;
#pragma unroll
          for (int u = 0; u < U; ++u) {
            const LL128Slot sl = slot(u);
            if (sl.line < lines)
              for (int h = 0; h < sl.units; ++h) store_unit(out, (sl.unit + h) * 8, bb, v[u][h]);
          }
        }
        break;
      case Collective::kBroadcast: {
        if (me == a.root) {
          if (recv != send)
#pragma unroll
            for (int u = 0; u < U; ++u) {
              const LL128Slot sl = slot(u);
              if (sl.line < lines)
                for (int h = 0; h < sl.units; ++h)
                  store_unit(recv, (sl.unit + h) * 8, bb, load_unit(send, (sl.unit + h) * 8, bb));
            }
          break;
        }
        uint64_t v[U][2];
        if (!fetch(a.root, v)) {
          failed = true;
          break;
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const LL128Slot sl = slot(u);
          if (sl.line < lines)
            for (int h = 0; h < sl.units; ++h) store_unit(recv, (sl.unit + h) * 8, bb, v[u][h]);
        }
        break;
      }
    }
  }
  if (__syncthreads_or(failed)) return;
  // At the end, where little is live (inline: refresh_own_ll_rows says why).
  if (blockIdx.x == 0 && ll_refresh(e, 2)) refresh_own_ll_rows(c, s.ll, s.ll_entries, e);
  // The values read were consumed (stored above): no fence needed before telling the peers.
  publish_epoch(s, ep, e, false);
}

template <gicl_datatype_t D, gicl_redop_t Op>
__global__ void __launch_bounds__(kThreads)
    ll128_kernel(gicl_device_comm_t c, CollScratch s, LLArgs a) {
  // What follows from the parameters alone is written before the PDL wait (as in the LL kernel).
  read_before_wait(comm_fields(c), s.epoch, s.ll128, s.ll128_row, s.finished, a.send, a.recv,
                   a.block_bytes, a.root, a.coll);
  const size_t warps = static_cast<size_t>(gridDim.x) * blockDim.x / 32;
  constexpr int U = kLL128Unroll<typename DType<D>::Storage>;
  if (U > 1 && ll128_groups(a.block_bytes) > warps)
    ll128_run<D, Op, U>(c, s, a);
  else
    ll128_run<D, Op, 1>(c, s, a);
}

template <gicl_datatype_t D, gicl_redop_t Op>
struct LL128Kernel {
  static constexpr auto kernel = ll128_kernel<D, Op>;
};

const KernelFamily kLL128Kernels("LL128", [] { return load_family<LL128Kernel>(); });

}  // namespace

cudaError_t ll128_blocks_per_sm(int* out) {
  return fewest_blocks_per_sm<LL128Kernel>(kThreads, out);
}

cudaError_t launch_ll128(gicl_datatype_t dtype, gicl_redop_t op, const gicl_device_comm_t& c,
                         const CollScratch& s, const LLArgs& a, const Launch& l) {
  return launch_kernel(byte_kernel_of<LL128Kernel>(is_reduction(a.coll), dtype, op),
                       ll128_blocks(a.block_bytes), kThreads, l, c, s, a);
}

}  // namespace gicl::coll
