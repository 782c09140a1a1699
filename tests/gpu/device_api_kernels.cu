// SPDX-License-Identifier: Apache-2.0
#include "gicl/device.cuh"
#include "gpu/device_api_kernels.cuh"
#include "gpu/late_writer.cuh"

namespace gicl::test {
using namespace gicl::dev;

namespace {

__device__ __forceinline__ size_t gtid() {
  return blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
}
__device__ __forceinline__ size_t gthreads() {
  return static_cast<size_t>(gridDim.x) * blockDim.x;
}

__global__ void fill_kernel(char* p, size_t n, uint32_t seed, int src) {
  for (size_t i = gtid(); i < n; i += gthreads()) p[i] = static_cast<char>(pattern8(seed, src, i));
}

__global__ void bad_kernel(const char* p, size_t n, uint32_t seed, int src,
                           unsigned long long* bad) {
  unsigned long long b = 0;
  for (size_t i = gtid(); i < n; i += gthreads())
    b += static_cast<uint8_t>(p[i]) != pattern8(seed, src, i);
  if (b) atomicAdd(bad, b);
}

__global__ void not_kernel(const char* p, size_t n, uint8_t v, unsigned long long* bad) {
  unsigned long long b = 0;
  for (size_t i = gtid(); i < n; i += gthreads()) b += static_cast<uint8_t>(p[i]) != v;
  if (b) atomicAdd(bad, b);
}

__global__ void late_put_kernel(DeviceComm c, char* dst, const char* src, size_t n, int pe,
                                uint64_t delay_ns) {
  trigger_dependents_then_sleep(delay_ns);
  put<Scope::kBlock>(c, dst, src, n, pe);
}

// One call of the variant by scope instance `unit` of `units`, for every peer.
template <Scope S>
__device__ void rma_unit(const DeviceComm& c, const RmaArgs& a, int unit, int units) {
  const bool typed = a.variant == RmaVariant::kPutTyped || a.variant == RmaVariant::kGetTyped;
  size_t chunk = (a.len + units - 1) / units;
  if (typed) chunk = (chunk + 1) & ~size_t{1};  // whole 16-bit elements per unit
  const size_t lo = unit * chunk, hi = lo + chunk < a.len ? lo + chunk : a.len;
  if (lo >= hi) return;
  const size_t n = hi - lo;
  for (int pe = 0; pe < c.nranks; ++pe) {
    const size_t me_block = static_cast<size_t>(c.rank) * a.block + a.offset + lo;
    const size_t pe_block = static_cast<size_t>(pe) * a.block + a.offset + lo;
    switch (a.variant) {
      case RmaVariant::kPut:
        put<S>(c, a.sym + me_block, a.local + a.offset + lo, n, pe);
        break;
      case RmaVariant::kPutNbi:
        put_nbi<S>(c, a.sym + me_block, a.local + a.offset + lo, n, pe);
        break;
      case RmaVariant::kPutQp:
        put<S>(c, Qp{GICL_QP_DEFAULT_ID}, a.sym + me_block, a.local + a.offset + lo, n, pe);
        break;
      case RmaVariant::kPutCounted:
        put_nbi<S>(c, a.sym + me_block, a.local + a.offset + lo, n, pe, a.counter);
        break;
      case RmaVariant::kPutTyped:  // whole 16-bit elements: offset and len are even here
        put<S>(c, reinterpret_cast<uint16_t*>(a.sym + me_block),
               reinterpret_cast<const uint16_t*>(a.local + a.offset + lo), n / 2, pe);
        break;
      case RmaVariant::kGet:
        get<S>(c, a.local + pe_block, a.sym + a.offset + lo, n, pe);
        break;
      case RmaVariant::kGetNbi:
        get_nbi<S>(c, a.local + pe_block, a.sym + a.offset + lo, n, pe);
        break;
      case RmaVariant::kGetTyped:
        get<S>(c, reinterpret_cast<uint16_t*>(a.local + pe_block),
               reinterpret_cast<const uint16_t*>(a.sym + a.offset + lo), n / 2, pe);
        break;
    }
  }
}

__global__ void rma_kernel(DeviceComm c, RmaArgs a) {
  const int warps = blockDim.x / 32;
  if (a.scope == 0)
    rma_unit<Scope::kThread>(c, a, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
  else if (a.scope == 1)
    rma_unit<Scope::kWarp>(c, a, blockIdx.x * warps + threadIdx.x / 32, gridDim.x * warps);
  else
    rma_unit<Scope::kBlock>(c, a, blockIdx.x, gridDim.x);
}

__global__ void scalar_kernel(DeviceComm c, int64_t* p64, int32_t* strided, uint32_t seed,
                              unsigned long long* bad) {
  const int t = threadIdx.x, n = c.nranks;
  // p: thread t stores one value into slot [rank][t] of every peer.
  for (int pe = 0; pe < n; ++pe)
    p(c, p64 + c.rank * blockDim.x + t, static_cast<int64_t>(seed) * 1000 + c.rank * 100 + t, pe);
  // iput: every third element of the peer's row `rank`, from every second of ours.
  if (t == 0) {
    int32_t src[64];
    for (int i = 0; i < 64; ++i) src[i] = static_cast<int32_t>(seed + c.rank * 7 + i);
    for (int pe = 0; pe < n; ++pe) iput(c, strided + c.rank * 256, src, 3, 2, 32, pe);
  }
  quiet(c);
  __syncthreads();
  if (t == 0) barrier(c);
  __syncthreads();
  unsigned long long b = 0;
  for (int pe = 0; pe < n; ++pe) {
    // Our own copy received every rank's values; g reads each peer's copy of our slot.
    b += p64[pe * blockDim.x + t] != static_cast<int64_t>(seed) * 1000 + pe * 100 + t;
    b += g(c, p64 + c.rank * blockDim.x + t, pe) !=
         static_cast<int64_t>(seed) * 1000 + c.rank * 100 + t;
  }
  if (t == 0) {
    // Element 3k of row r came from element 2k of rank r's source: seed + 7r + 2k.
    for (int pe = 0; pe < n; ++pe) {
      for (int k = 0; k < 32; ++k)
        b += strided[pe * 256 + 3 * k] != static_cast<int32_t>(seed + pe * 7 + 2 * k);
      int32_t got[32];
      iget(c, got, strided + c.rank * 256, 1, 3, 32, pe);
      for (int k = 0; k < 32; ++k) b += got[k] != static_cast<int32_t>(seed + c.rank * 7 + 2 * k);
    }
  }
  if (b) atomicAdd(bad, b);
}

// Ring: block 0 streams rounds to the next rank, block 1 checks rounds from the previous one.
__global__ void ordering_kernel(DeviceComm c, char* data, uint64_t* sig, uint64_t* ack, char* stage,
                                int rounds, size_t max_len, uint32_t seed,
                                unsigned long long* bad) {
  const int next = (c.rank + 1) % c.nranks, prev = (c.rank + c.nranks - 1) % c.nranks;
  __shared__ unsigned long long b;
  if (threadIdx.x == 0) b = 0;
  __syncthreads();
  for (int r = 1; r <= rounds; ++r) {
    const uint32_t h = pattern8(seed, r, 0) * 2654435761u ^ static_cast<uint32_t>(r) * 40503u;
    const size_t len = 1 + h % max_len, off = (h >> 16) % 61;
    if (blockIdx.x == 0) {
      // The consumer must have checked round r-1 before we overwrite its data.
      if (threadIdx.x == 0 &&
          !signal_wait_until(c, ack, Cmp::kAtLeast, static_cast<uint64_t>(r - 1)))
        b = ~0ull;
      __syncthreads();
      if (b == ~0ull) break;
      for (size_t i = threadIdx.x; i < len; i += blockDim.x)
        stage[i] = static_cast<char>(pattern8(seed ^ r, c.rank, i));
      __syncthreads();
      put_signal<Scope::kBlock>(c, data + off, stage, len, sig, 1, SignalOp::kAdd, next);
    } else {
      if (threadIdx.x == 0 && !signal_wait_until(c, sig, Cmp::kAtLeast, static_cast<uint64_t>(r)))
        b = ~0ull;
      __syncthreads();
      if (b == ~0ull) break;
      unsigned long long mine = 0;
      for (size_t i = threadIdx.x; i < len; i += blockDim.x)
        mine += static_cast<uint8_t>(data[off + i]) != pattern8(seed ^ r, prev, i);
      if (mine) atomicAdd(&b, mine);
      __syncthreads();
      if (threadIdx.x == 0) signal(c, ack, 1, SignalOp::kAdd, prev);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0 && b) atomicAdd(bad, b);
}

// Counters at every rank: [0] fetch_add, [1] inc, [2] add 3 (int64), [3] CAS increments (uint32
// pair), [4] or-mask, [5] xor twice (unchanged), [6..] set/swap/cas checks by one thread.
__global__ void atomics_kernel(DeviceComm c, uint64_t* ctr, int iters, unsigned long long* bad) {
  const int n = c.nranks;
  const unsigned bit = (c.rank * 997u + blockIdx.x * blockDim.x + threadIdx.x) % 64u;
  for (int k = 0; k < iters; ++k) {
    for (int pe = 0; pe < n; ++pe) {
      atomic_fetch_add(c, ctr + 0, uint64_t{1}, pe);
      atomic_inc(c, ctr + 1, pe);
      atomic_add(c, reinterpret_cast<int64_t*>(ctr + 2), int64_t{3}, pe);
      uint32_t* cas = reinterpret_cast<uint32_t*>(ctr + 3);
      uint32_t old = atomic_fetch(c, cas, pe);
      for (;;) {
        uint32_t seen = atomic_compare_swap(c, cas, old, old + 1, pe);
        if (seen == old) break;
        old = seen;
      }
      atomic_or(c, ctr + 4, uint64_t{1} << bit, pe);
      atomic_xor(c, ctr + 5, uint64_t{0x5a5a} << (bit % 8), pe);
      atomic_xor(c, ctr + 5, uint64_t{0x5a5a} << (bit % 8), pe);
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const int pe = (c.rank + 1) % n;
    uint64_t* x = ctr + 6 + c.rank;  // our own slot in the peer's array: no contention
    unsigned long long b = 0;
    atomic_set(c, x, uint64_t{42}, pe);
    b += atomic_fetch(c, x, pe) != 42;
    b += atomic_swap(c, x, uint64_t{7}, pe) != 42;
    b += atomic_compare_swap(c, x, uint64_t{7}, uint64_t{9}, pe) != 7;
    b += atomic_compare_swap(c, x, uint64_t{7}, uint64_t{11}, pe) != 9;
    b += atomic_fetch_and(c, x, uint64_t{1}, pe) != 9;  // 9 & 1 = 1
    b += atomic_fetch_or(c, x, uint64_t{6}, pe) != 1;   // 1 | 6 = 7
    b += atomic_fetch_xor(c, x, uint64_t{5}, pe) != 7;  // 7 ^ 5 = 2
    b += atomic_fetch_inc(c, x, pe) != 2;
    b += atomic_fetch(c, x, pe) != 3;
    int32_t* y = reinterpret_cast<int32_t*>(ctr + 6 + 64 + c.rank);
    atomic_set(c, y, int32_t{-5}, pe);
    b += atomic_fetch_add(c, y, int32_t{-2}, pe) != -5;
    b += atomic_fetch(c, y, pe) != -7;
    if (b) atomicAdd(bad, b);
  }
}

__global__ void waits_kernel(DeviceComm c, int32_t* i32, int64_t* i64, uint64_t* u64, uint64_t* sig,
                             unsigned long long* bad) {
  const int next = (c.rank + 1) % c.nranks;
  unsigned long long b = 0;
  // Tell the next rank its values, then a signal; check ours with every comparison.
  p(c, i32, int32_t{5}, next);
  p(c, i64, int64_t{-3}, next);
  p(c, u64, uint64_t{~0ull - 1}, next);  // two below wrap
  quiet(c);
  atomic_add(c, u64, uint64_t{4}, next);  // wraps to 2
  fence(c, next);                         // signal() is relaxed: order the values before it
  signal(c, sig, 77, SignalOp::kSet, next);
  b += !signal_wait_until(c, sig, Cmp::kEq, 77);
  b += read_signal(sig) != 77;
  b += !signal_test(sig, Cmp::kGe, 77) + signal_test(sig, Cmp::kGt, 77);
  b += !wait_until(c, i32, Cmp::kEq, int32_t{5}) + !wait_until(c, i32, Cmp::kGe, int32_t{5});
  b += !wait_until(c, i32, Cmp::kGt, int32_t{4}) + !wait_until(c, i32, Cmp::kLe, int32_t{5});
  b += !wait_until(c, i32, Cmp::kLt, int32_t{6}) + !wait_until(c, i32, Cmp::kNe, int32_t{4});
  b += !wait_until(c, i64, Cmp::kLt, int64_t{0}) + dev::test(i64, Cmp::kGt, int64_t{0});
  // Wrap-safe counter: 2 is "at least" 2^64 - 1 (three steps past it), though numerically smaller.
  b += !wait_until(c, u64, Cmp::kAtLeast, uint64_t{~0ull}) +
       dev::test(u64, Cmp::kGe, uint64_t{~0ull});
  b += !dev::test(u64, Cmp::kEq, uint64_t{2});
  reset_signal(sig);
  b += read_signal(sig) != 0;
  if (b) atomicAdd(bad, b);
}

__global__ void barrier_kernel(DeviceComm c, DeviceTeam t, bool use_team, uint64_t* counter,
                               int iters, unsigned long long* bad) {
  __shared__ unsigned long long b;
  if (threadIdx.x == 0) b = 0;
  __syncthreads();
  const int n = use_team ? t.size : c.nranks;
  for (int i = 1; i <= iters; ++i) {
    if (threadIdx.x == 0) {
      // Stagger ranks so that barriers really wait for each other.
      const uint64_t spin = (static_cast<uint64_t>(i) * 7919u * (c.rank + 1)) % 2000;
      const uint64_t t0 = clock64();
      while (clock64() - t0 < spin) {
      }
      detail::store_relaxed_sys(counter, static_cast<uint64_t>(i));
    }
    __syncthreads();
    const bool ok = use_team ? barrier<Scope::kBlock>(c, t) : barrier<Scope::kBlock>(c);
    if (!ok) {
      if (threadIdx.x == 0) b += 1000000;
      break;
    }
    if (threadIdx.x < n) {
      const int pe = use_team ? t.members[threadIdx.x] : threadIdx.x;
      const uint64_t v = atomic_fetch(c, counter, pe);
      // Every member wrote i before the barrier and cannot pass the next one without us.
      if (v != static_cast<uint64_t>(i) && v != static_cast<uint64_t>(i) + 1) atomicAdd(&b, 1ull);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && b) atomicAdd(bad, b);
}

__global__ void stuck_kernel(DeviceComm c, uint64_t* sig, int* result) {
  *result = signal_wait_until(c, sig, Cmp::kEq, 12345) ? 0 : 1;
}

__global__ void bad_op_kernel(DeviceComm c, char* sym, char* not_sym, int kind) {
  if (kind == 0)
    put(c, sym, sym + 64, 16, c.nranks);  // rank out of range
  else if (kind == 1)
    put(c, not_sym, sym, 16, c.rank);  // not a symmetric address
  else
    put(c, sym, not_sym, size_t{1} << 40, c.rank);  // length past the heap
}

}  // namespace

cudaError_t run_late_put(const gicl_device_comm_t& c, char* dst, const char* src, size_t n, int pe,
                         uint64_t delay_ns, cudaStream_t s) {
  late_put_kernel<<<1, 256, 0, s>>>(c, dst, src, n, pe, delay_ns);
  return cudaGetLastError();
}
cudaError_t fill_pattern(char* p, size_t n, uint32_t seed, int src, cudaStream_t s) {
  fill_kernel<<<64, 256, 0, s>>>(p, n, seed, src);
  return cudaGetLastError();
}
cudaError_t count_bad(const char* p, size_t n, uint32_t seed, int src, unsigned long long* bad,
                      cudaStream_t s) {
  bad_kernel<<<64, 256, 0, s>>>(p, n, seed, src, bad);
  return cudaGetLastError();
}
cudaError_t count_not(const char* p, size_t n, uint8_t value, unsigned long long* bad,
                      cudaStream_t s) {
  not_kernel<<<64, 256, 0, s>>>(p, n, value, bad);
  return cudaGetLastError();
}
cudaError_t run_rma(const gicl_device_comm_t& c, const RmaArgs& a, cudaStream_t s) {
  rma_kernel<<<4, 128, 0, s>>>(c, a);
  return cudaGetLastError();
}
cudaError_t run_scalar(const gicl_device_comm_t& c, int64_t* p64, int32_t* strided, uint32_t seed,
                       unsigned long long* bad, cudaStream_t s) {
  scalar_kernel<<<1, 64, 0, s>>>(c, p64, strided, seed, bad);
  return cudaGetLastError();
}
cudaError_t run_ordering(const gicl_device_comm_t& c, char* data, uint64_t* sig, uint64_t* ack,
                         char* stage, int rounds, size_t max_len, uint32_t seed,
                         unsigned long long* bad, cudaStream_t s) {
  ordering_kernel<<<2, 512, 0, s>>>(c, data, sig, ack, stage, rounds, max_len, seed, bad);
  return cudaGetLastError();
}
cudaError_t run_atomics(const gicl_device_comm_t& c, uint64_t* ctr, int iters,
                        unsigned long long* bad, cudaStream_t s) {
  atomics_kernel<<<8, 128, 0, s>>>(c, ctr, iters, bad);
  return cudaGetLastError();
}
cudaError_t run_waits(const gicl_device_comm_t& c, int32_t* i32, int64_t* i64, uint64_t* u64,
                      uint64_t* sig, unsigned long long* bad, cudaStream_t s) {
  waits_kernel<<<1, 1, 0, s>>>(c, i32, i64, u64, sig, bad);
  return cudaGetLastError();
}
cudaError_t run_barrier_stress(const gicl_device_comm_t& c, const gicl_device_team_t* team,
                               uint64_t* counter, int iters, unsigned long long* bad,
                               cudaStream_t s) {
  gicl_device_team_t t{};
  if (team) t = *team;
  barrier_kernel<<<1, 128, 0, s>>>(c, t, team != nullptr, counter, iters, bad);
  return cudaGetLastError();
}
cudaError_t run_stuck_wait(const gicl_device_comm_t& c, uint64_t* sig, int* result,
                           cudaStream_t s) {
  stuck_kernel<<<1, 1, 0, s>>>(c, sig, result);
  return cudaGetLastError();
}
const void* stuck_kernel_address() {
  return reinterpret_cast<const void*>(&stuck_kernel);
}

cudaError_t run_bad_op(const gicl_device_comm_t& c, char* sym, char* not_sym, int kind,
                       cudaStream_t s) {
  bad_op_kernel<<<1, 1, 0, s>>>(c, sym, not_sym, kind);
  return cudaGetLastError();
}

}  // namespace gicl::test
