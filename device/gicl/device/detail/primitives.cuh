// SPDX-License-Identifier: Apache-2.0
// Implementation of gicl/device/primitives.cuh, which includes it inside namespace gicl::dev where
// it stands (after the types it uses). Not part of the contract; not self-contained.
#pragma once

namespace detail {

template <Scope S>
__device__ __forceinline__ int scope_rank() {
  if constexpr (S == Scope::kThread)
    return 0;
  else if constexpr (S == Scope::kWarp)
    return static_cast<int>(threadIdx.x & 31);
  else
    return static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}

template <Scope S>
__device__ __forceinline__ int scope_size() {
  if constexpr (S == Scope::kThread)
    return 1;
  else if constexpr (S == Scope::kWarp)
    return 32;
  else
    return static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
}

/// Execution + memory barrier among the scope's threads (CTA-scope ordering of their accesses).
template <Scope S>
__device__ __forceinline__ void scope_sync() {
  if constexpr (S == Scope::kWarp)
    __syncwarp();
  else if constexpr (S == Scope::kBlock)
    __syncthreads();
}

template <Scope S>
__device__ __forceinline__ bool scope_leader() {
  return scope_rank<S>() == 0;
}

/// Orders this thread's earlier writes (and, cumulatively, writes it observed through a scope
/// barrier) before its later writes, for every observer in the system: payload before signal.
__device__ __forceinline__ void fence_system() {
  asm volatile("fence.acq_rel.sys;" ::: "memory");
}

/// Reader side of a signal: a value seen here makes the writer's earlier payload visible to the
/// loads that follow.
__device__ __forceinline__ uint64_t load_acquire_sys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t load_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t load_relaxed_sys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t load_relaxed_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_relaxed_sys(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void store_relaxed_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
/// Relaxed add without a result (a reduction): the cheapest remote update, no ordering.
__device__ __forceinline__ void add_relaxed_sys(uint64_t* p, uint64_t v) {
  asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void add_relaxed_sys(uint32_t* p, uint32_t v) {
  asm volatile("red.relaxed.sys.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/// Nanoseconds from the GPU's global timer (coarse but monotonic; enough for timeouts).
__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace detail
