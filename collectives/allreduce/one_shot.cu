#include "ccl/device.cuh"
#include "collectives/allreduce/one_shot.cuh"
#include "collectives/common/dtypes.cuh"
#include "collectives/schedule/step.hpp"

namespace ccl::coll {
namespace {

using namespace ccl::dev;

// A peer's element through L2 only (never a stale L1 line), for any 1/2/4/8-byte type.
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

// Per block b: ready[b][j] at rank i = the epoch whose input rank j has staged for rank i to
// read; done[b][j] = the epoch whose staging of rank i rank j has finished reading. Epochs come
// from a device counter, so CUDA graph replays keep counting.
template <ccl_datatype_t D, ccl_redop_t Op>
__global__ void __launch_bounds__(512)
    one_shot_kernel(ccl_device_comm_t c, CollScratch s, const void* send_v, void* recv_v,
                    size_t count, bool zero_copy) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  const int n = c.nranks, me = c.rank, b = blockIdx.x, t = threadIdx.x;
  const uint64_t e = *s.epoch + 1;
  const T* send = static_cast<const T*>(send_v);
  T* recv = static_cast<T*>(recv_v);
  T* stage = reinterpret_cast<T*>(s.stage[e & 1]);
  size_t lo, len;
  partition(count, gridDim.x, b, &lo, &len);
  uint64_t* ready = s.ready + static_cast<size_t>(b) * n;
  uint64_t* done = s.done + static_cast<size_t>(b) * n;
  const bool peer_thread = t < n && t != me;
  // A failed (timed out or aborted) wait ends the whole block together, never one thread alone.
  __shared__ int failed;
  if (t == 0) failed = 0;
  __syncthreads();

  if (!zero_copy) {
    // This staging buffer was last used two calls ago: every peer must have read it by now.
    if (peer_thread && e > 2 && !signal_wait_until(c, done + t, Cmp::kAtLeast, e - 2)) failed = 1;
    __syncthreads();
    if (failed) return;
    for (size_t i = t; i < len; i += blockDim.x) stage[lo + i] = send[lo + i];
  }
  const T* mine = zero_copy ? send : stage;
  // Our input (staged by every thread of the block, ordered to the signalling thread by the
  // barrier) before "ready" at the peers: the fence must be in the thread that signals.
  __syncthreads();
  if (peer_thread) {
    detail::fence_system();
    detail::store_relaxed_sys(peer_ptr(c, ready + me, t), e);
  }
  if (peer_thread && !signal_wait_until(c, ready + t, Cmp::kAtLeast, e)) failed = 1;
  __syncthreads();
  if (failed) return;

  for (size_t i = lo + t; i < lo + len; i += blockDim.x) {
    A acc = to_acc<T, A>(load_cg(peer_ptr(c, mine, 0) + i));
    for (int r = 1; r < n; ++r)
      acc = reduce<Op, A>(acc, to_acc<T, A>(load_cg(peer_ptr(c, mine, r) + i)));
    recv[i] = from_acc<T, A>(finish<Op, A>(acc, n));
  }
  // Our reads of the peers' inputs are complete before we tell them (fence in the signaller).
  __syncthreads();
  if (peer_thread) {
    detail::fence_system();
    detail::store_relaxed_sys(peer_ptr(c, done + me, t), e);
  }
  // A symmetric send buffer is the caller's again only when every peer has read it.
  if (zero_copy && peer_thread && !signal_wait_until(c, done + t, Cmp::kAtLeast, e)) failed = 1;
  __syncthreads();
  if (failed) return;
  if (t == 0) {
    __threadfence();
    if (atomicAdd(s.finished, 1u) == gridDim.x - 1) {
      *s.finished = 0;
      *s.epoch = e;  // the next launch on the stream starts from here
      __threadfence();
    }
  }
}

using Launch = void (*)(const ccl_device_comm_t&, const CollScratch&, const void*, void*, size_t,
                        bool, int, cudaStream_t);

template <ccl_datatype_t D, ccl_redop_t Op>
void launch(const ccl_device_comm_t& c, const CollScratch& s, const void* send, void* recv,
            size_t count, bool zero_copy, int grid, cudaStream_t stream) {
  one_shot_kernel<D, Op><<<grid, 512, 0, stream>>>(c, s, send, recv, count, zero_copy);
}

// The instantiation table: every type x every reduction, generated from the one type table.
#define CCL_OP_ENTRY(op, name) launch<D, op>,
template <ccl_datatype_t D>
struct Row {
  static constexpr Launch kOps[ccl_num_redops] = {CCL_FOR_EACH_REDOP(CCL_OP_ENTRY)};
};
#undef CCL_OP_ENTRY
#define CCL_ROW(e, T, A, name) Row<e>::kOps,
constexpr const Launch* kTable[ccl_num_datatypes] = {CCL_FOR_EACH_DTYPE(CCL_ROW)};
#undef CCL_ROW

}  // namespace

cudaError_t launch_one_shot(ccl_datatype_t dtype, ccl_redop_t op, const ccl_device_comm_t& c,
                            const CollScratch& s, const void* send, void* recv, size_t count,
                            bool zero_copy, int grid, cudaStream_t stream) {
  kTable[dtype][op](c, s, send, recv, count, zero_copy, grid, stream);
  return cudaGetLastError();
}

}  // namespace ccl::coll
