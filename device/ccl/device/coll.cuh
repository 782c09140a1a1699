// Team collectives callable from user kernels (NVSHMEM's team collectives): every member of the
// team calls the same function with the same arguments, at thread, warp or block scope, on
// symmetric `src` and `dst`. Each is barrier, data movement through the device API, barrier: on
// return the result is complete at every member and `src` may be reused. Reductions run in the
// team's member order with one rounding (fp16, bf16 and fp8 accumulate in fp32), so every member
// gets bitwise the same result. Ranks are team indices.
#pragma once

#include <type_traits>

#include "ccl/device/reduce_op.cuh"
#include "ccl/device/rma.cuh"
#include "ccl/device/sync.cuh"
#include "ccl/types.h"

namespace ccl::dev {
namespace detail {

/// A team as a member list (or the whole communicator when `team` is null).
struct Members {
  const DeviceTeam* team;
  int nranks;
  __device__ int size() const { return team ? team->size : nranks; }
  __device__ int rank(int i) const { return team ? team->members[i] : i; }
};

template <Scope S>
__device__ __forceinline__ bool team_barrier(const DeviceComm& c, const DeviceTeam* t) {
  return t ? barrier<S>(c, *t) : barrier<S>(c);
}

/// Element i reduced over the members in order, read through L2 from each member's `src`.
template <ccl_redop_t Op, typename T>
__device__ __forceinline__ T reduce_element(const DeviceComm& c, const Members& m, const T* src,
                                            size_t i) {
  using A = AccOf<T>;
  A acc{};
  for (int k = 0; k < m.size(); ++k) {
    const T* p = peer_ptr(c, src, m.rank(k)) + i;
    T v;
    if constexpr (sizeof(T) == 8)
      *reinterpret_cast<unsigned long long*>(&v) =
          __ldcg(reinterpret_cast<const unsigned long long*>(p));
    else if constexpr (sizeof(T) == 4)
      *reinterpret_cast<unsigned int*>(&v) = __ldcg(reinterpret_cast<const unsigned int*>(p));
    else if constexpr (sizeof(T) == 2)
      *reinterpret_cast<unsigned short*>(&v) = __ldcg(reinterpret_cast<const unsigned short*>(p));
    else
      *reinterpret_cast<unsigned char*>(&v) = __ldcg(reinterpret_cast<const unsigned char*>(p));
    const A a = to_acc<T, A>(v);
    acc = k == 0 ? a : combine<Op, A>(acc, a);
  }
  return from_acc<T, A>(finish<Op, A>(acc, m.size()));
}

template <Scope S, typename T>
__device__ bool broadcast_impl(const DeviceComm& c, const DeviceTeam* t, T* dst, const T* src,
                               size_t count, int root) {
  const Members m{t, c.nranks};
  if (!team_barrier<S>(c, t)) return false;
  // Every member pulls from the root: the root's outgoing links carry the data once per member.
  get<S>(c, dst, src, count, m.rank(root));
  return team_barrier<S>(c, t);
}

template <Scope S, typename T>
__device__ bool fcollect_impl(const DeviceComm& c, const DeviceTeam* t, T* dst, const T* src,
                              size_t count) {
  const Members m{t, c.nranks};
  const int me = t ? t->my_index : c.rank, n = m.size();
  if (!team_barrier<S>(c, t)) return false;
  for (int k = 0; k < n; ++k) {
    const int j = (me + k) % n;  // start with the next member: spread the traffic
    put<S>(c, dst + static_cast<size_t>(me) * count, src, count, m.rank(j));
  }
  return team_barrier<S>(c, t);
}

template <Scope S, typename T>
__device__ bool alltoall_impl(const DeviceComm& c, const DeviceTeam* t, T* dst, const T* src,
                              size_t count) {
  const Members m{t, c.nranks};
  const int me = t ? t->my_index : c.rank, n = m.size();
  if (!team_barrier<S>(c, t)) return false;
  for (int k = 0; k < n; ++k) {
    const int j = (me + k) % n;
    put<S>(c, dst + static_cast<size_t>(me) * count, src + static_cast<size_t>(j) * count, count,
           m.rank(j));
  }
  return team_barrier<S>(c, t);
}

/// kAll: every member reduces its share and stores it to every member (allreduce, two-shot);
/// kScatter: member i reduces block i into its own dst (reduce-scatter); kRoot: the root reduces
/// everything into its dst (reduce).
enum class ReduceShape { kAll, kScatter, kRoot };

template <ccl_redop_t Op, ReduceShape Shape, Scope S, typename T>
__device__ bool reduce_impl(const DeviceComm& c, const DeviceTeam* t, T* dst, const T* src,
                            size_t count, int root) {
  const Members m{t, c.nranks};
  const int me = t ? t->my_index : c.rank, n = m.size();
  if (!team_barrier<S>(c, t)) return false;
  const int r = scope_rank<S>(), threads = scope_size<S>();
  if constexpr (Shape == ReduceShape::kAll) {
    const size_t base = count / n, extra = count % n;
    const size_t lo = me * base + (static_cast<size_t>(me) < extra ? me : extra);
    const size_t len = base + (static_cast<size_t>(me) < extra ? 1 : 0);
    // In place is safe: each element is read from every member and then written to every member
    // by the same thread of its one owner.
    for (size_t i = lo + r; i < lo + len; i += threads) {
      const T v = reduce_element<Op>(c, m, src, i);
      for (int k = 0; k < n; ++k) peer_ptr(c, dst, m.rank(k))[i] = v;
    }
  } else if constexpr (Shape == ReduceShape::kScatter) {
    const T* block = src + static_cast<size_t>(me) * count;
    for (size_t i = r; i < count; i += threads) dst[i] = reduce_element<Op>(c, m, block, i);
  } else {
    if (me == root)
      for (size_t i = r; i < count; i += threads) dst[i] = reduce_element<Op>(c, m, src, i);
  }
  return team_barrier<S>(c, t);
}

}  // namespace detail

/// dst = the root member's src, at every member (count elements).
template <Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool broadcast(const DeviceComm& c, const DeviceTeam& t, T* dst,
                                          const T* src, size_t count, int root) {
  return detail::broadcast_impl<S>(c, &t, dst, src, count, root);
}
/// dst block i (count elements) = member i's src, at every member (NVSHMEM's fcollect).
template <Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool fcollect(const DeviceComm& c, const DeviceTeam& t, T* dst,
                                         const T* src, size_t count) {
  return detail::fcollect_impl<S>(c, &t, dst, src, count);
}
/// Block j of member i's src lands in block i of member j's dst (count elements per block).
template <Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool alltoall(const DeviceComm& c, const DeviceTeam& t, T* dst,
                                         const T* src, size_t count) {
  return detail::alltoall_impl<S>(c, &t, dst, src, count);
}
/// dst = op over members of src, at every member (dst may equal src).
template <ccl_redop_t Op, Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool allreduce(const DeviceComm& c, const DeviceTeam& t, T* dst,
                                          const T* src, size_t count) {
  return detail::reduce_impl<Op, detail::ReduceShape::kAll, S>(c, &t, dst, src, count, 0);
}
/// Member i's dst (count elements) = op over members of block i of src.
template <ccl_redop_t Op, Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool reduce_scatter(const DeviceComm& c, const DeviceTeam& t, T* dst,
                                               const T* src, size_t count) {
  return detail::reduce_impl<Op, detail::ReduceShape::kScatter, S>(c, &t, dst, src, count, 0);
}
/// The root member's dst = op over members of src.
template <ccl_redop_t Op, Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool reduce(const DeviceComm& c, const DeviceTeam& t, T* dst,
                                       const T* src, size_t count, int root) {
  return detail::reduce_impl<Op, detail::ReduceShape::kRoot, S>(c, &t, dst, src, count, root);
}

// The same over every rank of the communicator.
template <Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool broadcast(const DeviceComm& c, T* dst, const T* src, size_t count,
                                          int root) {
  return detail::broadcast_impl<S>(c, nullptr, dst, src, count, root);
}
template <Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool fcollect(const DeviceComm& c, T* dst, const T* src, size_t count) {
  return detail::fcollect_impl<S>(c, nullptr, dst, src, count);
}
template <Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool alltoall(const DeviceComm& c, T* dst, const T* src, size_t count) {
  return detail::alltoall_impl<S>(c, nullptr, dst, src, count);
}
template <ccl_redop_t Op, Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool allreduce(const DeviceComm& c, T* dst, const T* src, size_t count) {
  return detail::reduce_impl<Op, detail::ReduceShape::kAll, S>(c, nullptr, dst, src, count, 0);
}
template <ccl_redop_t Op, Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool reduce_scatter(const DeviceComm& c, T* dst, const T* src,
                                               size_t count) {
  return detail::reduce_impl<Op, detail::ReduceShape::kScatter, S>(c, nullptr, dst, src, count, 0);
}
template <ccl_redop_t Op, Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool reduce(const DeviceComm& c, T* dst, const T* src, size_t count,
                                       int root) {
  return detail::reduce_impl<Op, detail::ReduceShape::kRoot, S>(c, nullptr, dst, src, count, root);
}

}  // namespace ccl::dev
