#include "collectives/common/kernel_util.cuh"
#include "collectives/common/launch_table.cuh"
#include "collectives/direct/direct.cuh"
#include "collectives/direct/ll_units.cuh"
#include "common/kernel_launch.cuh"

namespace ccl::coll {
namespace {

constexpr int kThreads = kLLThreads;

/// Spins until both entries of a unit carry `flag`; false on timeout or abort (reported).
__device__ bool ll_wait(const ccl_device_comm_t& c, const uint64_t* e2, uint32_t flag, int peer,
                        uint64_t* out) {
  const uint64_t start = dev::detail::global_ns();
  for (uint32_t spin = 0;; ++spin) {
    uint64_t a, b;
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                 : "=l"(a), "=l"(b)
                 : "l"(e2)
                 : "memory");
    if (static_cast<uint32_t>(a >> 32) == flag && static_cast<uint32_t>(b >> 32) == flag) {
      *out = (a & 0xffffffffull) | (b << 32);
      return true;
    }
    if ((spin & 1023) == 1023) {
      if (c.state->abort)
        return dev::detail::report(dev::detail::reporter(c), CCL_DEVICE_ERROR_ABORTED,
                                   CCL_OP_SIGNAL_WAIT, peer, e2, flag, a >> 32, CCL_CMP_EQ);
      if (c.state->error.state != 0) return false;
      if (c.wait_timeout_ns != 0 && dev::detail::global_ns() - start > c.wait_timeout_ns)
        return dev::detail::report(dev::detail::reporter(c), CCL_DEVICE_ERROR_TIMEOUT,
                                   CCL_OP_SIGNAL_WAIT, peer, e2, flag, a >> 32, CCL_CMP_EQ);
    }
  }
}

template <ccl_datatype_t D, ccl_redop_t Op>
__global__ void __launch_bounds__(kThreads)
    ll_kernel(ccl_device_comm_t c, CollScratch s, LLArgs a) {
  // Read the parameters the small-call path uses before waiting for the previous kernel: the
  // first read of a parameter line in a launch misses the constant cache, and here the misses
  // overlap that kernel's drain instead of following the wait (one-rank 8-byte call in a graph:
  // 1.48 -> 1.42 us). The volatile store of a value made of them keeps the compiler from
  // dropping the reads or moving them past the wait.
  {
    __shared__ uint64_t sink;
    const uint64_t x =
        c.flags ^ c.rank ^ c.nranks ^ c.own_slot ^ c.slot_bytes ^
        reinterpret_cast<uint64_t>(c.state) ^ reinterpret_cast<uint64_t>(c.heap_base) ^
        reinterpret_cast<uint64_t>(s.epoch) ^ reinterpret_cast<uint64_t>(s.ll) ^ s.ll_entries ^
        reinterpret_cast<uint64_t>(a.send) ^ reinterpret_cast<uint64_t>(a.recv) ^ a.block_bytes ^
        a.root ^ static_cast<uint64_t>(a.coll);
    if (threadIdx.x == 0) *static_cast<volatile uint64_t*>(&sink) = x;
  }
  pdl_prologue();
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  constexpr int V = 8 / sizeof(T);
  const int n = c.nranks, me = c.rank;
  __shared__ int fail;
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  const size_t bb = a.block_bytes;
  const Collective k = a.coll;
  const bool blocked_src = k == Collective::kReduceScatter || k == Collective::kAllToAll;
  // The grid has a thread per 8-byte unit of the rank block (ll_blocks): a thread carries at
  // most one, so the small call's path is straight code rather than unit loops.
  const uint32_t u = blockIdx.x * blockDim.x + threadIdx.x;
  const size_t off = static_cast<size_t>(u) * 8;
  const bool has_unit = off < bb;
  // A broadcast's non-roots may pass no send buffer (NCCL's contract).
  const bool sends = k != Collective::kBroadcast || me == a.root;
  // The unit of a buffer every peer gets whole, loaded before the epoch: the two loads are in
  // flight together rather than one after the other (a small call is little else).
  const uint64_t whole = sends && !blocked_src && has_unit ? load_unit(send, off, bb) : 0;
  // This parity's rows were last read by the peers two launches ago.
  const uint64_t e = begin_epoch(c, s, 2, &fail);
  if (fail) return;
  const uint32_t flag = static_cast<uint32_t>(e);             // epochs start at 1: never 0
  uint64_t* mine = s.ll + ((e & 1) * n + me) * s.ll_entries;  // my row at every rank
  // Send: the unit as two (data, flag) entries in one 16-byte store to every peer that needs it.
  if (has_unit && sends) {
    for (int step = 1; step < n; ++step) {
      const int j = (me + step) % n;
      if (k == Collective::kReduce && j != a.root) continue;
      const uint64_t v = blocked_src ? load_unit(blk(send, j, bb), off, bb) : whole;
      const uint64_t lo = (v & 0xffffffffull) | (static_cast<uint64_t>(flag) << 32);
      const uint64_t hi = (v >> 32) | (static_cast<uint64_t>(flag) << 32);
      uint64_t* dst = dev::peer_ptr(c, mine + 2 * u, j);
      asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(dst), "l"(lo), "l"(hi)
                   : "memory");
    }
  }
  auto row = [&](int r, uint64_t* v) {
    return ll_wait(c, s.ll + ((e & 1) * n + r) * s.ll_entries + 2 * u, flag, r, v);
  };
  if (has_unit) {
    switch (k) {
      case Collective::kAllReduce:
      case Collective::kReduceScatter:
      case Collective::kReduce: {
        if (k == Collective::kReduce && me != a.root) break;
        // Reduce in rank order, this rank's own contribution read locally.
        A acc[V];
        for (int r = 0; r < n; ++r) {
          uint64_t v;
          if (r == me) {
            v = k == Collective::kReduceScatter ? load_unit(blk(send, me, bb), off, bb) : whole;
          } else if (!row(r, &v)) {
            fail = 1;
            break;
          }
          T t[V];
          memcpy(t, &v, 8);
#pragma unroll
          for (int q = 0; q < V; ++q)
            acc[q] = r == 0 ? to_acc<T, A>(t[q]) : combine<Op, A>(acc[q], to_acc<T, A>(t[q]));
        }
        if (fail) break;
        T res[V];
#pragma unroll
        for (int q = 0; q < V; ++q) res[q] = from_acc<T, A>(finish<Op, A>(acc[q], n));
        uint64_t out;
        memcpy(&out, res, 8);
        store_unit(recv, off, bb, out);
        break;
      }
      case Collective::kAllGather:
      case Collective::kAllToAll:
        for (int r = 0; r < n && !fail; ++r) {
          uint64_t v;
          if (r == me)
            v = k == Collective::kAllToAll ? load_unit(blk(send, me, bb), off, bb) : whole;
          else if (!row(r, &v))
            fail = 1;
          if (!fail) store_unit(recv + static_cast<size_t>(r) * bb, off, bb, v);
        }
        break;
      case Collective::kBroadcast: {
        uint64_t v;
        if (me == a.root) {
          if (recv != send) store_unit(recv, off, bb, whole);
        } else if (row(a.root, &v)) {
          store_unit(recv, off, bb, v);
        } else {
          fail = 1;
        }
        break;
      }
    }
  }
  __syncthreads();
  if (fail) return;
  // The values read were consumed (stored above): no fence needed before telling the peers.
  finish_epoch(c, s, e, false);
}

template <ccl_datatype_t D, ccl_redop_t Op>
struct LLKernel {
  static constexpr auto kernel = ll_kernel<D, Op>;
};

}  // namespace

cudaError_t launch_ll(ccl_datatype_t dtype, ccl_redop_t op, const ccl_device_comm_t& c,
                      const CollScratch& s, const LLArgs& a, const Launch& l) {
  const int grid = ll_blocks(a.block_bytes);
  return launch_kernel(byte_kernel_of<LLKernel>(is_reduction(a.coll), dtype, op), grid,
                       grid == 1 ? ll_threads(a.block_bytes, c.nranks) : kThreads, l, c, s, a);
}

}  // namespace ccl::coll
