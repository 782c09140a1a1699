#include "collectives/common/kernel_util.cuh"
#include "collectives/common/launch_table.cuh"
#include "collectives/direct/direct.cuh"

namespace ccl::coll {
namespace {

constexpr int kThreads = 512;
constexpr size_t kEntries = kLLMaxBytes / 4;  // two 8-byte entries per 8 data bytes

/// 8 bytes of `p` from byte `off` (zero past `bytes`), any alignment.
__device__ __forceinline__ uint64_t load_unit(const char* p, size_t off, size_t bytes) {
  if (off + 8 <= bytes && (reinterpret_cast<uintptr_t>(p + off) & 7) == 0)
    return *reinterpret_cast<const uint64_t*>(p + off);
  uint64_t v = 0;
  for (int k = 0; k < 8 && off + k < bytes; ++k)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[off + k])) << (8 * k);
  return v;
}

__device__ __forceinline__ void store_unit(char* p, size_t off, size_t bytes, uint64_t v) {
  if (off + 8 <= bytes && (reinterpret_cast<uintptr_t>(p + off) & 7) == 0) {
    *reinterpret_cast<uint64_t*>(p + off) = v;
    return;
  }
  for (int k = 0; k < 8 && off + k < bytes; ++k) p[off + k] = static_cast<char>(v >> (8 * k));
}

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
        return dev::detail::report(c, CCL_DEVICE_ERROR_ABORTED, CCL_OP_SIGNAL_WAIT, peer, e2, flag,
                                   a >> 32, CCL_CMP_EQ);
      if (c.state->error.state != 0) return false;
      if (c.wait_timeout_ns != 0 && dev::detail::global_ns() - start > c.wait_timeout_ns)
        return dev::detail::report(c, CCL_DEVICE_ERROR_TIMEOUT, CCL_OP_SIGNAL_WAIT, peer, e2, flag,
                                   a >> 32, CCL_CMP_EQ);
    }
  }
}

template <ccl_datatype_t D, ccl_redop_t Op>
__global__ void __launch_bounds__(kThreads)
    ll_kernel(ccl_device_comm_t c, CollScratch s, const void* send_v, void* recv_v, size_t bytes) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  constexpr int V = 8 / sizeof(T);
  const int n = c.nranks, me = c.rank;
  __shared__ int fail;
  if (threadIdx.x == 0) fail = 0;
  __syncthreads();
  const uint64_t e = next_epoch(c, s);
  const uint32_t flag = static_cast<uint32_t>(e);  // epochs start at 1: never 0
  // This parity's buffers were last read by the peers two launches ago.
  if (e > 2) wait_peer_epochs(c, s, e - 2, &fail);
  if (fail) return;
  const char* send = static_cast<const char*>(send_v);
  char* recv = static_cast<char*>(recv_v);
  const size_t units = (bytes + 7) / 8;
  uint64_t* mine = s.ll + ((e & 1) * n + me) * kEntries;  // my row at every rank
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // Send: each unit as two (data, flag) entries in one 16-byte store to every peer.
  for (size_t u = first; u < units; u += stride) {
    const uint64_t v = load_unit(send, u * 8, bytes);
    const uint64_t lo = (v & 0xffffffffull) | (static_cast<uint64_t>(flag) << 32);
    const uint64_t hi = (v >> 32) | (static_cast<uint64_t>(flag) << 32);
    for (int k = 1; k < n; ++k) {
      const int j = (me + k) % n;
      uint64_t* dst = dev::peer_ptr(c, mine + 2 * u, j);
      asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(dst), "l"(lo), "l"(hi)
                   : "memory");
    }
  }
  // Receive and reduce in rank order.
  for (size_t u = first; u < units; u += stride) {
    A acc[V];
    for (int r = 0; r < n; ++r) {
      uint64_t v;
      if (r == me) {
        v = load_unit(send, u * 8, bytes);
      } else if (!ll_wait(c, s.ll + ((e & 1) * n + r) * kEntries + 2 * u, flag, r, &v)) {
        fail = 1;
        break;
      }
      T t[V];
      memcpy(t, &v, 8);
#pragma unroll
      for (int k = 0; k < V; ++k)
        acc[k] = r == 0 ? to_acc<T, A>(t[k]) : reduce<Op, A>(acc[k], to_acc<T, A>(t[k]));
    }
    if (fail) break;
    T res[V];
#pragma unroll
    for (int k = 0; k < V; ++k) res[k] = from_acc<T, A>(finish<Op, A>(acc[k], n));
    uint64_t out;
    memcpy(&out, res, 8);
    store_unit(recv, u * 8, bytes, out);
  }
  __syncthreads();
  if (fail) return;
  // The values read were consumed (stored above): no fence needed before telling the peers.
  finish_epoch(c, s, e, false);
}

template <ccl_datatype_t D, ccl_redop_t Op>
struct LLLaunch {
  static void run(const ccl_device_comm_t& c, const CollScratch& s, const void* send, void* recv,
                  size_t bytes, int grid, cudaStream_t stream) {
    ll_kernel<D, Op><<<grid, kThreads, 0, stream>>>(c, s, send, recv, bytes);
  }
};

}  // namespace

cudaError_t launch_ll_one_shot(ccl_datatype_t dtype, ccl_redop_t op, const ccl_device_comm_t& c,
                               const CollScratch& s, const void* send, void* recv, size_t count,
                               cudaStream_t stream) {
  const size_t bytes = count * dtype_size(dtype);
  const size_t units = (bytes + 7) / 8;
  const int grid = static_cast<int>(std::max<size_t>(1, (units + kThreads - 1) / kThreads));
  launcher<LLLaunch>(dtype, op)(c, s, send, recv, bytes, grid, stream);
  return cudaGetLastError();
}

}  // namespace ccl::coll
