// SPDX-License-Identifier: Apache-2.0
// Implementation of gicl/device/rma.cuh, which includes it inside namespace gicl::dev where
// it stands (after the types it uses). Not part of the contract; not self-contained.
#pragma once

namespace detail {

/// The network path of put, put_nbi, put_signal and put_signal_nbi: the scope's leader posts the
/// request (a put with signal where `sig` is set), then the scope meets; `wait`: the leader
/// returns once it is complete at the target.
template <Scope S>
__device__ __forceinline__ void net_put_scoped(const DeviceComm& c, const ProxyRing& q, void* dst,
                                               const void* src, size_t bytes, uint64_t* sig,
                                               uint64_t value, bool add, int pe, bool wait,
                                               uint32_t op) {
  if (scope_leader<S>()) net_put(c, q, dst, src, bytes, sig, value, add, pe, wait, op);
  scope_sync<S>();
}

/// The network path of iput (kPut) and iget (kGet): one request per element, the scope's threads
/// taking elements in turn, each thread then waiting until its own requests are complete (iput:
/// `src` reusable and the data at `pe`; iget: `dst` filled). Both buffers in the heap.
template <Scope S, typename T>
__device__ __forceinline__ void net_strided(const DeviceComm& c, const ProxyRing& q, ProxyOp kind,
                                            T* dst, const T* src, ptrdiff_t dst_stride,
                                            ptrdiff_t src_stride, size_t nelems, int pe,
                                            uint32_t op) {
  uint64_t end = 0;
  bool ok = true;
  for (size_t i = scope_rank<S>(); ok && i < nelems; i += scope_size<S>())
    ok = net_transfer(c, q, kind, dst + i * dst_stride, src + i * src_stride, sizeof(T), pe, op,
                      &end);
  if (ok && end != 0) proxy_wait_done(reporter(c), q, end, op, pe);
  scope_sync<S>();
}

/// A value's bytes as the low bytes of a 64-bit word (p and g over the network path), and back.
template <typename T>
__device__ __forceinline__ uint64_t value_bits(T v) {
  uint64_t w = 0;
  memcpy(&w, &v, sizeof(T));
  return w;
}
template <typename T>
__device__ __forceinline__ T bits_value(uint64_t w) {
  T v;
  memcpy(&v, &w, sizeof(T));
  return v;
}

/// Loads for scope_copy: a peer's memory (get) is read with ld.global.cg so that no stale copy
/// stays in L1; a local source (put) may be anywhere, stack and shared memory included.
template <bool kPeerSrc, typename T>
__device__ __forceinline__ T copy_load(const T* p) {
  if constexpr (kPeerSrc)
    return __ldcg(p);
  else
    return *p;
}

/// Copies `bytes` with all threads of scope S. Loads are issued eight at a time before the stores
/// so that each thread keeps several NVLink transactions in flight.
template <Scope S, bool kPeerSrc = false>
__device__ __forceinline__ void scope_copy(void* dst, const void* src, size_t bytes) {
  const int r = scope_rank<S>(), n = scope_size<S>();
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  size_t done = 0;
  if (((reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s)) & 15) == 0) {
    const size_t n16 = bytes / 16;
    int4* d4 = reinterpret_cast<int4*>(d);
    const int4* s4 = reinterpret_cast<const int4*>(s);
    size_t i = r;
    constexpr int kDepth = 8;
    for (; i + (kDepth - 1) * static_cast<size_t>(n) < n16; i += kDepth * static_cast<size_t>(n)) {
      int4 v[kDepth];
#pragma unroll
      for (int k = 0; k < kDepth; ++k)
        v[k] = copy_load<kPeerSrc>(s4 + i + k * static_cast<size_t>(n));
#pragma unroll
      for (int k = 0; k < kDepth; ++k) d4[i + k * static_cast<size_t>(n)] = v[k];
    }
    for (; i < n16; i += n) d4[i] = copy_load<kPeerSrc>(s4 + i);
    done = n16 * 16;
  } else if (((reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s)) & 3) == 0) {
    const size_t n4 = bytes / 4;
    for (size_t i = r; i < n4; i += n)
      reinterpret_cast<uint32_t*>(d)[i] =
          copy_load<kPeerSrc>(reinterpret_cast<const unsigned int*>(s) + i);
    done = n4 * 4;
  }
  for (size_t i = done + r; i < bytes; i += n) d[i] = s[i];
}

}  // namespace detail
