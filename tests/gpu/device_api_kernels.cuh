// SPDX-License-Identifier: Apache-2.0
// Kernels of the device API tests (device_api_kernels.cu). Each writes what it saw into device
// counters that the host checks; none trusts its own success.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gicl/device_abi.h"

namespace gicl::test {

enum class RmaVariant : int {
  kPut,
  kPutNbi,
  kPutQp,
  kPutCounted,
  kPutTyped,
  kGet,
  kGetNbi,
  kGetTyped
};

struct RmaArgs {
  char* sym;      // symmetric buffer: nranks blocks of `block` bytes (+ slack)
  char* local;    // local scratch of nranks * block bytes
  size_t block;   // bytes per rank
  size_t offset;  // byte offset inside each block (exercises unaligned paths)
  size_t len;     // bytes moved per peer (<= block - offset)
  uint32_t seed;
  int scope;  // 0 thread, 1 warp, 2 block
  RmaVariant variant;
  unsigned long long* counter;  // local completion counter (kPutCounted)
};

__host__ __device__ inline uint8_t pattern8(uint32_t seed, int src, size_t i) {
  uint32_t x = seed * 0x9e3779b9u ^ static_cast<uint32_t>(src) * 0x85ebca6bu ^
               static_cast<uint32_t>(i) * 0xc2b2ae35u ^ static_cast<uint32_t>(i >> 32);
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  x ^= x >> 12;
  return static_cast<uint8_t>(x);
}

cudaError_t fill_pattern(char* p, size_t n, uint32_t seed, int src, cudaStream_t s);
/// Counts bytes of p[0, n) that differ from pattern8(seed, src, i).
cudaError_t count_bad(const char* p, size_t n, uint32_t seed, int src, unsigned long long* bad,
                      cudaStream_t s);
cudaError_t count_not(const char* p, size_t n, uint8_t value, unsigned long long* bad,
                      cudaStream_t s);
cudaError_t run_rma(const gicl_device_comm_t& c, const RmaArgs& a, cudaStream_t s);
cudaError_t run_scalar(const gicl_device_comm_t& c, int64_t* p64, int32_t* strided, uint32_t seed,
                       unsigned long long* bad, cudaStream_t s);
cudaError_t run_ordering(const gicl_device_comm_t& c, char* data, uint64_t* sig, uint64_t* ack,
                         char* stage, int rounds, size_t max_len, uint32_t seed,
                         unsigned long long* bad, cudaStream_t s);
cudaError_t run_atomics(const gicl_device_comm_t& c, uint64_t* ctr, int iters,
                        unsigned long long* bad, cudaStream_t s);
cudaError_t run_waits(const gicl_device_comm_t& c, int32_t* i32, int64_t* i64, uint64_t* u64,
                      uint64_t* sig, unsigned long long* bad, cudaStream_t s);
cudaError_t run_barrier_stress(const gicl_device_comm_t& c, const gicl_device_team_t* team,
                               uint64_t* counter, int iters, unsigned long long* bad,
                               cudaStream_t s);
/// One block lets the next kernel of the stream launch at once (the PDL trigger as its first
/// statement), then `delay_ns` later puts src[0, n) into dst at `pe`.
cudaError_t run_late_put(const gicl_device_comm_t& c, char* dst, const char* src, size_t n, int pe,
                         uint64_t delay_ns, cudaStream_t s);
/// One thread waits for a signal that never comes; *result = 1 if the wait returned false.
cudaError_t run_stuck_wait(const gicl_device_comm_t& c, uint64_t* sig, int* result, cudaStream_t s);
/// Bad operations for GICL_DEVICE_CHECKS: kind 0 rank out of range, 1 non-symmetric address,
/// 2 length past the heap.
cudaError_t run_bad_op(const gicl_device_comm_t& c, char* sym, char* not_sym, int kind,
                       cudaStream_t s);

/// The address of the stuck-wait kernel (for launch_collective's refusal test).
const void* stuck_kernel_address();

}  // namespace gicl::test
