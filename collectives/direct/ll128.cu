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

/// What every function of one launch reads: the call (pure: ll128_role) and where this thread's
/// warp sits. Built once per thread, passed by reference into inlined code.
struct LL128Thread {
  const char* send;
  char* recv;
  const char* own;  // this rank's part of its input for itself
  size_t bb, lines, groups;
  int n, me, root, lane;
  size_t warp, warps;
  LL128Role role;
};

__device__ __forceinline__ LL128Thread ll128_thread(const gicl_device_comm_t& c, const LLArgs& a) {
  LL128Thread t;
  t.n = c.nranks;
  t.me = c.rank;
  t.root = a.root;
  t.send = static_cast<const char*>(a.send);
  t.recv = static_cast<char*>(a.recv);
  t.bb = a.block_bytes;
  t.lines = ll128_lines(t.bb);
  t.groups = ll128_groups(t.bb);
  t.role = ll128_role(a.coll, t.me, a.root);
  t.own = t.role.blocked_src ? blk(t.send, t.me, t.bb) : t.send;
  t.lane = threadIdx.x & 31;
  t.warp = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  t.warps = static_cast<size_t>(gridDim.x) * blockDim.x / 32;
  return t;
}

/// This lane's 16 bytes of a buffer every peer gets whole, line group g (2 units); zeros where
/// the rank sends each peer its own block instead, or sends nothing.
__device__ __forceinline__ void ll128_whole(const LL128Thread& t, size_t g, uint64_t v[2]) {
  const LL128Slot sl = ll128_slot(g, t.lane);
  v[0] = v[1] = 0;
  if (!t.role.sends || t.role.blocked_src || sl.line >= t.lines) return;
  v[0] = load_unit(t.send, sl.unit * 8, t.bb);
  if (!sl.flag_lane) v[1] = load_unit(t.send, (sl.unit + 1) * 8, t.bb);
}

/// Send: every line a peer needs, 16 bytes per lane, the warp's 4 lines in one store; U groups
/// loaded before any is stored (`first`: the warp's first groups, loaded before the epoch).
template <int U>
__device__ __forceinline__ void ll128_send(const gicl_device_comm_t& c, const LL128Thread& t,
                                           const uint64_t (&first)[U][2], uint64_t flag,
                                           char* mine) {
  for (size_t g0 = t.warp; g0 < t.groups; g0 += U * t.warps) {
    uint64_t same[U][2];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (g0 != t.warp) {
        ll128_whole(t, g0 + u * t.warps, same[u]);
      } else {
        same[u][0] = first[u][0];
        same[u][1] = first[u][1];
      }
    }
    for (int step = 1; step < t.n; ++step) {
      int j = t.me + step;
      if (j >= t.n) j -= t.n;
      if (t.role.only_peer >= 0 && j != t.role.only_peer) continue;
      uint64_t v[U][2];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const LL128Slot sl = ll128_slot(g0 + u * t.warps, t.lane);
        v[u][0] = same[u][0];
        v[u][1] = same[u][1];
        if (sl.line < t.lines && t.role.blocked_src) {
          v[u][0] = load_unit(blk(t.send, j, t.bb), sl.unit * 8, t.bb);
          if (!sl.flag_lane) v[u][1] = load_unit(blk(t.send, j, t.bb), (sl.unit + 1) * 8, t.bb);
        }
        if (sl.flag_lane) v[u][1] = flag;
      }
      char* dst = dev::peer_ptr(c, mine, j);
      __syncwarp();  // each line's 8 lanes store in one instruction
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const LL128Slot sl = ll128_slot(g0 + u * t.warps, t.lane);
        if (sl.line < t.lines)
          asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(dst + sl.row_off),
                       "l"(v[u][0]), "l"(v[u][1])
                       : "memory");
      }
    }
  }
}

/// Rank r's part of this lane's lines of groups g0, g0 + warps, ...: received from its row at
/// this rank (every line's load issued before any is waited for), or (r == me) read from this
/// rank's own input. False when a receive timed out or the communicator was aborted (reported);
/// the same on every lane of the warp.
template <int U>
__device__ __forceinline__ bool ll128_fetch(const gicl_device_comm_t& c, const CollScratch& s,
                                            const LL128Thread& t, size_t g0, size_t parity,
                                            uint64_t flag, int r, uint64_t (&v)[U][2]) {
  // Slot u of this lane, worked out where used (kept, U of them took registers that spilled).
  auto slot = [&](int u) { return ll128_slot(g0 + u * t.warps, t.lane); };
  if (r == t.me) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const LL128Slot sl = slot(u);
      v[u][0] = v[u][1] = 0;
      if (sl.line < t.lines) {
        v[u][0] = load_unit(t.own, sl.unit * 8, t.bb);
        v[u][1] = load_unit(t.own, (sl.unit + 1) * 8, t.bb);
      }
    }
    return true;
  }
  const char* row = s.ll128 + (parity + r) * s.ll128_row;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const LL128Slot sl = slot(u);
    v[u][0] = v[u][1] = 0;
    if (sl.line < t.lines) ll128_load(row + sl.row_off, v[u]);
  }
  // Every line's flag lanes must see the flag. One load instruction reads each line whole, so a
  // flag seen vouches for the line it came with; lines not yet arrived are loaded again, all of
  // them (a line that had arrived stays until two launches on).
  auto here = [&] {
    bool ok = true;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const LL128Slot sl = slot(u);
      ok = ok && (sl.line >= t.lines || !sl.flag_lane || v[u][1] == flag);
    }
    return __all_sync(kWarp, ok);
  };
  dev::detail::Deadline deadline;
  for (uint32_t spin = 0; !here(); ++spin) {
    if ((spin & 1023) == 1023) {
      // The report names a line still missing (the first flag lane, at its first group, whose
      // flag has not come) and what its flag word holds; lane 0 keeps the deadline.
      int first = U;
#pragma unroll
      for (int u = U - 1; u >= 0; --u)
        if (slot(u).line < t.lines && slot(u).flag_lane && v[u][1] != flag) first = u;
      const unsigned who = __ballot_sync(kWarp, first < U);
      const int from = who != 0 ? __ffs(who) - 1 : 7;
      uint64_t mine = v[0][1];
#pragma unroll
      for (int u = 1; u < U; ++u)
        if (first == u) mine = v[u][1];
      const uint64_t seen = __shfl_sync(kWarp, mine, from);
      const int at = __shfl_sync(kWarp, first < U ? first : 0, from);
      int stop = 0;
      if (t.lane == 0)
        stop = deadline.expired(dev::detail::reporter(c), GICL_OP_SIGNAL_WAIT, r,
                                row + ll128_slot(g0 + at * t.warps, from).row_off + 8, flag, seen,
                                GICL_CMP_EQ);
      if (__shfl_sync(kWarp, stop, 0)) return false;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const LL128Slot sl = slot(u);
      if (sl.line < t.lines) ll128_load(row + sl.row_off, v[u]);
    }
  }
  return true;
}

/// This lane's units of U groups into `out` (a rank block's worth).
template <int U>
__device__ __forceinline__ void ll128_store(const LL128Thread& t, size_t g0, char* out,
                                            const uint64_t (&v)[U][2]) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const LL128Slot sl = ll128_slot(g0 + u * t.warps, t.lane);
    if (sl.line < t.lines)
      for (int h = 0; h < sl.units; ++h) store_unit(out, (sl.unit + h) * 8, t.bb, v[u][h]);
  }
}

/// Reduces every rank's lines of U groups in rank order and stores the result. False on a
/// failed receive.
template <gicl_datatype_t D, gicl_redop_t Op, int U>
__device__ __forceinline__ bool ll128_reduce(const gicl_device_comm_t& c, const CollScratch& s,
                                             const LL128Thread& t, size_t g0, size_t parity,
                                             uint64_t flag) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  constexpr int V = 8 / sizeof(T);
  A acc[U][2][V];
  for (int r = 0; r < t.n; ++r) {
    uint64_t v[U][2];
    if (!ll128_fetch<U>(c, s, t, g0, parity, flag, r, v)) return false;
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        T x[V];
        memcpy(x, &v[u][h], 8);
#pragma unroll
        for (int q = 0; q < V; ++q)
          acc[u][h][q] =
              r == 0 ? to_acc<T, A>(x[q]) : combine<Op, A>(acc[u][h][q], to_acc<T, A>(x[q]));
      }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const LL128Slot sl = ll128_slot(g0 + u * t.warps, t.lane);
    if (sl.line >= t.lines) continue;
    for (int h = 0; h < sl.units; ++h) {
      T res[V];
#pragma unroll
      for (int q = 0; q < V; ++q) res[q] = from_acc<T, A>(finish<Op, A>(acc[u][h][q], t.n));
      uint64_t out;
      memcpy(&out, res, 8);
      store_unit(t.recv, (sl.unit + h) * 8, t.bb, out);
    }
  }
  return true;
}

/// Receive, warp by warp, U groups at a time, as the rank's role says. False on a failed receive
/// (the same on every lane of a warp).
template <gicl_datatype_t D, gicl_redop_t Op, int U>
__device__ __forceinline__ bool ll128_receive(const gicl_device_comm_t& c, const CollScratch& s,
                                              const LL128Thread& t, size_t parity, uint64_t flag) {
  for (size_t g0 = t.warp; g0 < t.groups; g0 += U * t.warps) {
    switch (t.role.receive) {
      case LL128Receive::kNone:
        return true;
      case LL128Receive::kReduce:
        if (!ll128_reduce<D, Op, U>(c, s, t, g0, parity, flag)) return false;
        break;
      case LL128Receive::kGather:
        for (int r = 0; r < t.n; ++r) {
          uint64_t v[U][2];
          if (!ll128_fetch<U>(c, s, t, g0, parity, flag, r, v)) return false;
          ll128_store<U>(t, g0, t.recv + static_cast<size_t>(r) * t.bb, v);
        }
        break;
      case LL128Receive::kFromRoot: {
        uint64_t v[U][2];
        if (!ll128_fetch<U>(c, s, t, g0, parity, flag, t.root, v)) return false;
        ll128_store<U>(t, g0, t.recv, v);
        break;
      }
      case LL128Receive::kCopyOwn:
        if (t.recv != t.send) {
          uint64_t v[U][2];
          ll128_fetch<U>(c, s, t, g0, parity, flag, t.me, v);
          ll128_store<U>(t, g0, t.recv, v);
        }
        break;
    }
  }
  return true;
}

template <gicl_datatype_t D, gicl_redop_t Op, int U>
__device__ __forceinline__ void ll128_run(const gicl_device_comm_t& c, const CollScratch& s,
                                          const LLArgs& a) {
  const LL128Thread t = ll128_thread(c, a);
  const EpochPlan ep = plan_epochs(c, s);
  pdl_prologue();
  // The warp's first groups, loaded before the epoch so that all those loads are in flight
  // together.
  uint64_t first[U][2];
#pragma unroll
  for (int u = 0; u < U; ++u) ll128_whole(t, t.warp + u * t.warps, first[u]);
  // This parity's rows were last read by the peers two launches ago.
  bool late;
  const uint64_t e = begin_epoch(c, ep, 2, &late);
  if (late) return;
  const uint64_t flag = e;  // epochs start at 1: never the zeroed rows' 0
  const size_t parity = (e & 1) * static_cast<size_t>(t.n);
  if (t.role.sends) ll128_send<U>(c, t, first, flag, s.ll128 + (parity + t.me) * s.ll128_row);
  const bool failed = !ll128_receive<D, Op, U>(c, s, t, parity, flag);
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
