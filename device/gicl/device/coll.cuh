// SPDX-License-Identifier: Apache-2.0
// Team collectives callable from user kernels (NVSHMEM's team collectives): every member of the
// team calls the same function with the same arguments, at thread, warp or block scope, on
// symmetric `src` and `dst`. Each is barrier, data movement through the device API, barrier: on
// return the result is complete at every member and `src` may be reused. Broadcast, fcollect and
// alltoall also come with NVSHMEM's weaker contract (Completion::kLocal): one round of arrivals
// instead of two barriers. Reductions run in the team's member order with one rounding (fp16,
// bf16 and fp8 accumulate in fp32), so every member gets bitwise the same result. Ranks are team
// indices. With a member on the network path the reductions stage through the communicator's
// collective scratch (GICL_DEVICE_COLL_SCRATCH): one such reduction at a time per communicator.
#pragma once

#include <type_traits>

#include "gicl/device/reduce_op.cuh"
#include "gicl/device/rma.cuh"
#include "gicl/device/sync.cuh"
#include "gicl/types.h"

namespace gicl::dev {

/// Where a data-movement team collective (broadcast, fcollect, alltoall) is complete on return.
enum class Completion {
  /// At every member: the call opens and closes with a barrier, so it needs nothing around it.
  kAll,
  /// At the calling member only, as NVSHMEM's: its `dst` holds the result and `src` may be
  /// reused. The caller must make sure every member's `dst` may be written when any member
  /// enters (a barrier, or buffers that alternate, between a result's last read and the next
  /// call). The members' puts and one arrival from each sender make up the whole call.
  kLocal,
};

#include "gicl/device/detail/coll.cuh"

/// dst = the root member's src, at every member (count elements).
template <Scope S = Scope::kThread, Completion C = Completion::kAll, typename T>
__device__ __forceinline__ bool broadcast(const DeviceComm& c, const DeviceTeam& t, T* dst,
                                          const T* src, size_t count, int root) {
  return detail::broadcast_impl<S, C>(c, &t, dst, src, count, root);
}
/// dst block i (count elements) = member i's src, at every member (NVSHMEM's fcollect).
template <Scope S = Scope::kThread, Completion C = Completion::kAll, typename T>
__device__ __forceinline__ bool fcollect(const DeviceComm& c, const DeviceTeam& t, T* dst,
                                         const T* src, size_t count) {
  return detail::fcollect_impl<S, C>(c, &t, dst, src, count);
}
/// Block j of member i's src lands in block i of member j's dst (count elements per block).
template <Scope S = Scope::kThread, Completion C = Completion::kAll, typename T>
__device__ __forceinline__ bool alltoall(const DeviceComm& c, const DeviceTeam& t, T* dst,
                                         const T* src, size_t count) {
  return detail::alltoall_impl<S, C>(c, &t, dst, src, count);
}
/// dst = op over members of src, at every member (dst may equal src).
template <gicl_redop_t Op, Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool allreduce(const DeviceComm& c, const DeviceTeam& t, T* dst,
                                          const T* src, size_t count) {
  return detail::reduce_impl<Op, detail::ReduceShape::kAll, S>(c, &t, dst, src, count, 0);
}
/// Member i's dst (count elements) = op over members of block i of src.
template <gicl_redop_t Op, Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool reduce_scatter(const DeviceComm& c, const DeviceTeam& t, T* dst,
                                               const T* src, size_t count) {
  return detail::reduce_impl<Op, detail::ReduceShape::kScatter, S>(c, &t, dst, src, count, 0);
}
/// The root member's dst = op over members of src.
template <gicl_redop_t Op, Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool reduce(const DeviceComm& c, const DeviceTeam& t, T* dst,
                                       const T* src, size_t count, int root) {
  return detail::reduce_impl<Op, detail::ReduceShape::kRoot, S>(c, &t, dst, src, count, root);
}

// The same over every rank of the communicator.
template <Scope S = Scope::kThread, Completion C = Completion::kAll, typename T>
__device__ __forceinline__ bool broadcast(const DeviceComm& c, T* dst, const T* src, size_t count,
                                          int root) {
  return detail::broadcast_impl<S, C>(c, nullptr, dst, src, count, root);
}
template <Scope S = Scope::kThread, Completion C = Completion::kAll, typename T>
__device__ __forceinline__ bool fcollect(const DeviceComm& c, T* dst, const T* src, size_t count) {
  return detail::fcollect_impl<S, C>(c, nullptr, dst, src, count);
}
template <Scope S = Scope::kThread, Completion C = Completion::kAll, typename T>
__device__ __forceinline__ bool alltoall(const DeviceComm& c, T* dst, const T* src, size_t count) {
  return detail::alltoall_impl<S, C>(c, nullptr, dst, src, count);
}
template <gicl_redop_t Op, Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool allreduce(const DeviceComm& c, T* dst, const T* src, size_t count) {
  return detail::reduce_impl<Op, detail::ReduceShape::kAll, S>(c, nullptr, dst, src, count, 0);
}
template <gicl_redop_t Op, Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool reduce_scatter(const DeviceComm& c, T* dst, const T* src,
                                               size_t count) {
  return detail::reduce_impl<Op, detail::ReduceShape::kScatter, S>(c, nullptr, dst, src, count, 0);
}
template <gicl_redop_t Op, Scope S = Scope::kThread, typename T>
__device__ __forceinline__ bool reduce(const DeviceComm& c, T* dst, const T* src, size_t count,
                                       int root) {
  return detail::reduce_impl<Op, detail::ReduceShape::kRoot, S>(c, nullptr, dst, src, count, root);
}

}  // namespace gicl::dev
