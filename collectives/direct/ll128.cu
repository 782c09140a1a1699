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

namespace ccl::coll {
namespace {

constexpr int kThreads = kLLThreads;
constexpr unsigned kWarp = 0xffffffffu;

/// Warp-wide (every lane calls it together): this lane's 16 bytes of a line of row `p`, once the
/// flag lanes of every active line see `flag`. One load instruction reads each line whole, so a
/// flag seen vouches for the line it came with. False on timeout or abort (reported), on every
/// lane alike.
__device__ bool ll128_recv(const ccl_device_comm_t& c, const char* p, uint64_t flag,
                           const LL128Slot& sl, bool active, int peer, uint64_t v[2]) {
  dev::detail::Deadline deadline;
  for (uint32_t spin = 0;; ++spin) {
    uint64_t a = 0, b = 0;
    if (active)
      asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                   : "=l"(a), "=l"(b)
                   : "l"(p)
                   : "memory");
    if (__all_sync(kWarp, !active || !sl.flag_lane || b == flag)) {
      v[0] = a;
      v[1] = b;
      return true;
    }
    if ((spin & 1023) == 1023) {
      int stop = 0;
      const uint64_t seen = __shfl_sync(kWarp, b, 7);
      if ((threadIdx.x & 31) == 0)
        stop = deadline.expired(dev::detail::reporter(c), CCL_OP_SIGNAL_WAIT, peer, p + 8, flag,
                                seen, CCL_CMP_EQ);
      if (__shfl_sync(kWarp, stop, 0)) return false;
    }
  }
}

template <ccl_datatype_t D, ccl_redop_t Op>
__global__ void __launch_bounds__(kThreads)
    ll128_kernel(ccl_device_comm_t c, CollScratch s, LLArgs a) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  constexpr int V = 8 / sizeof(T);
  // What follows from the parameters alone is written before the PDL wait (as in the LL kernel).
  read_before_wait(comm_fields(c), s.epoch, s.ll128, s.ll128_row, s.finished, a.send, a.recv,
                   a.block_bytes, a.root, a.coll);
  const int n = c.nranks, me = c.rank;
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  const size_t bb = a.block_bytes, lines = ll128_lines(bb), groups = ll128_groups(bb);
  const Collective k = a.coll;
  const bool blocked_src = k == Collective::kReduceScatter || k == Collective::kAllToAll;
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
  // The warp's first group, loaded before the epoch so that both loads are in flight together.
  uint64_t v_first[2];
  whole(warp, v_first);
  // This parity's rows were last read by the peers two launches ago.
  bool late;
  const uint64_t e = begin_epoch(c, ep, 2, &late);
  if (late) return;
  const uint64_t flag = e;  // epochs start at 1: never the zeroed rows' 0
  const size_t parity = (e & 1) * static_cast<size_t>(n);
  char* mine = s.ll128 + (parity + me) * s.ll128_row;  // my row at every rank
  // Send: every line a peer needs, 16 bytes per lane, the warp's 4 lines in one store.
  for (size_t g = warp; g < groups && sends; g += warps) {
    const LL128Slot sl = ll128_slot(g, lane);
    const bool active = sl.line < lines;
    uint64_t same[2] = {v_first[0], v_first[1]};
    if (g != warp) whole(g, same);
    for (int step = 1; step < n; ++step) {
      int j = me + step;
      if (j >= n) j -= n;
      if (k == Collective::kReduce && j != a.root) continue;
      uint64_t v0 = same[0], v1 = sl.flag_lane ? flag : same[1];
      if (active && blocked_src) {
        v0 = load_unit(blk(send, j, bb), sl.unit * 8, bb);
        if (!sl.flag_lane) v1 = load_unit(blk(send, j, bb), (sl.unit + 1) * 8, bb);
      }
      char* dst = dev::peer_ptr(c, mine + sl.row_off, j);
      __syncwarp();  // the line's 8 lanes store in one instruction
      if (active)
        asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(dst), "l"(v0), "l"(v1)
                     : "memory");
    }
  }
  // Receive, warp by warp; `failed` is the same on every lane of a warp.
  bool failed = false;
  for (size_t g = warp; g < groups && !failed; g += warps) {
    const LL128Slot sl = ll128_slot(g, lane);
    const bool active = sl.line < lines;
    // Rank r's part of this lane's line: received from its row, or (r == me) read from this
    // rank's own input. False when a receive failed (reported).
    auto fetch = [&](int r, uint64_t v[2]) {
      if (r != me) {
        const char* row = s.ll128 + (parity + r) * s.ll128_row + sl.row_off;
        return ll128_recv(c, row, flag, sl, active, r, v);
      }
      if (active) {
        v[0] = load_unit(own, sl.unit * 8, bb);
        v[1] = load_unit(own, (sl.unit + 1) * 8, bb);
      }
      return true;
    };
    switch (k) {
      case Collective::kAllReduce:
      case Collective::kReduceScatter:
      case Collective::kReduce: {
        if (k == Collective::kReduce && me != a.root) break;
        // Reduce in rank order.
        A acc[2][V];
        for (int r = 0; r < n && !failed; ++r) {
          uint64_t v[2] = {0, 0};
          if (!fetch(r, v)) {
            failed = true;
            break;
          }
          for (int u = 0; u < 2; ++u) {
            T t[V];
            memcpy(t, &v[u], 8);
#pragma unroll
            for (int q = 0; q < V; ++q)
              acc[u][q] =
                  r == 0 ? to_acc<T, A>(t[q]) : combine<Op, A>(acc[u][q], to_acc<T, A>(t[q]));
          }
        }
        if (failed || !active) break;
        for (int u = 0; u < sl.units; ++u) {
          T res[V];
#pragma unroll
          for (int q = 0; q < V; ++q) res[q] = from_acc<T, A>(finish<Op, A>(acc[u][q], n));
          uint64_t out;
          memcpy(&out, res, 8);
          store_unit(recv, (sl.unit + u) * 8, bb, out);
        }
        break;
      }
      case Collective::kAllGather:
      case Collective::kAllToAll:
        for (int r = 0; r < n && !failed; ++r) {
          uint64_t v[2] = {0, 0};
          if (!fetch(r, v)) {
            failed = true;
            break;
          }
          if (!active) continue;
          char* out = recv + static_cast<size_t>(r) * bb;
          for (int u = 0; u < sl.units; ++u) store_unit(out, (sl.unit + u) * 8, bb, v[u]);
        }
        break;
      case Collective::kBroadcast: {
        uint64_t v[2] = {0, 0};
        if (me == a.root) {
          if (active && recv != send)
            for (int u = 0; u < sl.units; ++u)
              store_unit(recv, (sl.unit + u) * 8, bb, load_unit(send, (sl.unit + u) * 8, bb));
        } else if (!fetch(a.root, v)) {
          failed = true;
        } else if (active) {
          for (int u = 0; u < sl.units; ++u) store_unit(recv, (sl.unit + u) * 8, bb, v[u]);
        }
        break;
      }
    }
  }
  if (__syncthreads_or(failed)) return;
  // The values read were consumed (stored above): no fence needed before telling the peers.
  publish_epoch(s, ep, e, false);
}

template <ccl_datatype_t D, ccl_redop_t Op>
struct LL128Kernel {
  static constexpr auto kernel = ll128_kernel<D, Op>;
};

const KernelFamily kLL128Kernels("LL128", [] { return load_family<LL128Kernel>(); });

}  // namespace

cudaError_t ll128_blocks_per_sm(int* out) {
  return fewest_blocks_per_sm<LL128Kernel>(kThreads, out);
}

cudaError_t launch_ll128(ccl_datatype_t dtype, ccl_redop_t op, const ccl_device_comm_t& c,
                         const CollScratch& s, const LLArgs& a, const Launch& l) {
  return launch_kernel(byte_kernel_of<LL128Kernel>(is_reduction(a.coll), dtype, op),
                       ll128_blocks(a.block_bytes), kThreads, l, c, s, a);
}

}  // namespace ccl::coll
