// SPDX-License-Identifier: Apache-2.0
// The device API to ranks on the network path: kernels post puts, puts with signal, signals,
// non-fetching atomics (32- and 64-bit add, and, or, xor, set), fences and quiets into the proxy
// ring; the proxy carries them over libfabric's tcp;ofi_rxm on
// loopback (GPU memory is not registrable there: the staged delivery). Two ranks (on two GPUs,
// or two processes sharing one) made "remote" by GICL_P2P_DISABLE=1, and by a GICL_HOSTID per rank
// (node emulation); with four GPUs, 2 nodes x 2 GPUs, where each rank puts to every other over
// NVLink or the network as the path says and the results must be the same bytes. Every check is on
// the receiver; the stream barrier, whose arrivals to network peers travel through the proxy,
// follows. Then the operations answered by the target: 256 threads' fetching atomics (fetch-adds
// whose answers are each count exactly once, a compare-swap only one thread wins, a chain of swaps,
// fetching or and xor), blocking and non-blocking gets through several staging chunks, g() and p()
// of every width, puts of 1 to 8 bytes (inside their requests on the staged path), iput and iget
// with strides. Last, three queue pairs, each on a request ring of
// its own: each one's payload lands before its signal (a fence on that queue pair), and its gets
// are complete after its own quiet.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/net_path.hpp"
#include "gicl/device.cuh"
#include "gicl/gicl.h"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

constexpr int kBlocks = 8;
constexpr size_t kChunk = 192 << 10;  // per block: several staging chunks each
constexpr int kAdders = 256;

__host__ __device__ uint8_t pattern(int from, int to, size_t i) {
  return static_cast<uint8_t>(from * 53 + to * 11 + i * 3 + (i >> 10) + 1);
}

__global__ void fill(uint8_t* p, size_t n, int from, int to) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = pattern(from, to, i);
}

struct Bufs {
  uint8_t* src;       // [nranks][kBlocks * kChunk]: what this rank sends to each peer
  uint8_t* plain;     // [nranks][kBlocks * kChunk]: put_nbi from each peer
  uint8_t* sig_data;  // [nranks][kBlocks * kChunk]: put_signal from each peer
  uint64_t* sig;      // [nranks][kBlocks]: one signal per block from each peer
  uint64_t* adds;     // [nranks]: signal adds from each peer
  uint64_t* atom64;   // [nranks]: 64-bit atomic adds from each peer
  uint32_t* atom32;   // [nranks][2]: 32-bit atomic adds from each peer, and an untouched neighbour
  uint32_t* bits;     // [nranks][4]: atomic or, two xors, and (preset to all ones), unused
  uint64_t* set64;    // [nranks]: a 64-bit atomic set from each peer
};

constexpr uint64_t kSet64 = 0x923456789abcdef0ull;  // the top bit set: all 64 bits travel

/// Every block sends its chunk to every peer: a put_nbi, a fence, a put with signal, and each
/// thread of block 0 a signal add; then one quiet.
__global__ void send_all(gicl_device_comm_t c, Bufs b) {
  const size_t span = kBlocks * kChunk;
  for (int pe = 0; pe < c.nranks; ++pe) {
    if (pe == c.rank) continue;
    const size_t off = blockIdx.x * kChunk;
    uint8_t* src = b.src + pe * span + off;
    gicl::dev::put_nbi<gicl::dev::Scope::kBlock>(c, b.plain + c.rank * span + off, src, kChunk, pe);
    if (threadIdx.x == 0) gicl::dev::fence(c, pe);
    __syncthreads();
    gicl::dev::put_signal<gicl::dev::Scope::kBlock>(c, b.sig_data + c.rank * span + off, src,
                                                    kChunk, b.sig + c.rank * kBlocks + blockIdx.x,
                                                    blockIdx.x + 1, gicl::dev::SignalOp::kSet, pe);
    if (blockIdx.x == 0) gicl::dev::signal(c, b.adds + c.rank, 1, gicl::dev::SignalOp::kAdd, pe);
    // Non-fetching atomics (unordered with the rest until the quiet below).
    if (blockIdx.x == 1)
      gicl::dev::atomic_add<uint64_t>(c, b.atom64 + c.rank, (uint64_t{1} << 32) | 1, pe);
    if (blockIdx.x == 2) gicl::dev::atomic_add<uint32_t>(c, b.atom32 + 2 * c.rank, 0x01000001u, pe);
    if (blockIdx.x == 3 && threadIdx.x == 0) {
      gicl::dev::atomic_or<uint32_t>(c, b.bits + 4 * c.rank, 0xa5u, pe);
      gicl::dev::atomic_xor<uint32_t>(c, b.bits + 4 * c.rank + 1, 0x3cu, pe);
      gicl::dev::atomic_xor<uint32_t>(c, b.bits + 4 * c.rank + 1, 0x0fu, pe);
      gicl::dev::atomic_and<uint32_t>(c, b.bits + 4 * c.rank + 2, 0x0ff0u, pe);
      gicl::dev::atomic_set<uint64_t>(c, b.set64 + c.rank, kSet64, pe);
    }
  }
  __syncthreads();  // every thread's requests are in the ring before the quiet reads its head
  if (threadIdx.x == 0) gicl::dev::quiet(c);
}

/// Each block waits for its signal from every peer, then checks that peer's chunk.
__global__ void check_signalled(gicl_device_comm_t c, Bufs b, unsigned long long* bad) {
  const size_t span = kBlocks * kChunk;
  __shared__ bool ok;
  for (int from = 0; from < c.nranks; ++from) {
    if (from == c.rank) continue;
    if (threadIdx.x == 0)
      ok = gicl::dev::signal_wait_until(c, b.sig + from * kBlocks + blockIdx.x, gicl::dev::Cmp::kEq,
                                        blockIdx.x + 1);
    __syncthreads();
    if (!ok) {
      if (threadIdx.x == 0) atomicAdd(bad, 1ull << 32);
      continue;
    }
    const size_t off = blockIdx.x * kChunk;
    for (size_t i = threadIdx.x; i < kChunk; i += blockDim.x)
      if (b.sig_data[from * span + off + i] != pattern(from, c.rank, off + i)) atomicAdd(bad, 1ull);
  }
}

// ---- fetching atomics, gets, p, g, iput and iget -----------------------------------------------

constexpr int kFetchThreads = 256;       // 2 blocks of 128
constexpr size_t kGetBytes = 300 << 10;  // several staging chunks, not a multiple of one
constexpr int kStrided = 500;
constexpr uint64_t kChainStart = 7;
constexpr int kAnswers = 3 * kFetchThreads + 16 + 8 + 8;  // per peer, see fetch_all
constexpr uint64_t kP64 = 0xfedcba9876543210ull;
// Puts of k = 1 to 8 bytes (inline in their requests on the staged path): from source offset
// small_at(k) + 2 to small_at(k), both misaligned, with untouched bytes between them.
constexpr size_t kSmallSpan = 80;
__host__ __device__ constexpr size_t small_at(size_t k) {
  return 10 * (k - 1) + 1;
}

struct FetchBufs {
  uint64_t* c64;        // [nranks]: 64-bit fetch-adds from each peer
  uint32_t* c32;        // [nranks][2]: 32-bit fetch-adds from each peer into [1]; [0] untouched
  uint64_t* cas;        // [nranks]: compare-swaps of 0 from each peer
  uint64_t* chain;      // [nranks]: swaps from each peer, starting at kChainStart
  uint32_t* bits;       // [nranks][2]: fetching or, fetching xor
  uint8_t* got;         // [2][nranks][kGetBytes]: get, then get_nbi, from each peer
  uint8_t* pbytes;      // [nranks][32]: p() of 1, 2, 4 and 8 bytes and a double from each peer
  uint8_t* small;       // [nranks][kSmallSpan]: puts of 1 to 8 bytes from each peer (small_at)
  uint64_t* small_sig;  // [nranks]: the 8-byte one's signal add
  uint32_t* strided;    // [nranks][3 * kStrided]: iput from each peer (destination stride 3)
  uint32_t* igot;       // [nranks][kStrided]: iget from each peer (source stride 3)
  uint64_t* answers;    // device memory, [nranks][kAnswers]
};

/// 256 threads, to every peer: a 64-bit and a 32-bit fetch-add each, a compare-swap of 0 each,
/// 16 swaps, 8 fetching ors and xors, gets and get_nbi of kGetBytes, four g() reads, p() of every
/// width, an iput and an iget; then a quiet. g() mismatches count into `bad`.
__global__ void fetch_all(gicl_device_comm_t c, FetchBufs f, Bufs b, unsigned long long* bad) {
  const size_t span = kBlocks * kChunk;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  for (int pe = 0; pe < c.nranks; ++pe) {
    if (pe == c.rank) continue;
    uint64_t* a = f.answers + pe * kAnswers;
    a[t] = gicl::dev::atomic_fetch_add<uint64_t>(c, f.c64 + c.rank, 1, pe);
    a[kFetchThreads + t] = gicl::dev::atomic_fetch_add<uint32_t>(c, f.c32 + 2 * c.rank + 1, 1u, pe);
    a[2 * kFetchThreads + t] =
        gicl::dev::atomic_compare_swap<uint64_t>(c, f.cas + c.rank, 0, t + 1, pe);
    if (t < 16)
      a[3 * kFetchThreads + t] = gicl::dev::atomic_swap<uint64_t>(c, f.chain + c.rank, 100 + t, pe);
    if (t < 8) {
      a[3 * kFetchThreads + 16 + t] =
          gicl::dev::atomic_fetch_or<uint32_t>(c, f.bits + 2 * c.rank, 1u << t, pe);
      a[3 * kFetchThreads + 24 + t] =
          gicl::dev::atomic_fetch_xor<uint32_t>(c, f.bits + 2 * c.rank + 1, 1u << t, pe);
    }
    // The peer's b.src + rank * span holds pattern(pe, rank, i).
    const uint8_t* theirs = b.src + c.rank * span;
    if (blockIdx.x == 0)
      gicl::dev::get<gicl::dev::Scope::kBlock>(c, f.got + pe * kGetBytes, theirs, kGetBytes, pe);
    else
      gicl::dev::get_nbi<gicl::dev::Scope::kBlock>(c, f.got + (c.nranks + pe) * kGetBytes, theirs,
                                                   kGetBytes, pe);
    if (t == 0) {
      const uint8_t g8 = gicl::dev::g(c, theirs + 5, pe);
      const uint16_t g16 = gicl::dev::g(c, reinterpret_cast<const uint16_t*>(theirs + 6), pe);
      const uint32_t g32 = gicl::dev::g(c, reinterpret_cast<const uint32_t*>(theirs + 12), pe);
      const uint64_t g64 = gicl::dev::g(c, reinterpret_cast<const uint64_t*>(theirs + 24), pe);
      uint64_t want16 = 0, want32 = 0, want64 = 0;
      for (int i = 7; i >= 0; --i) {
        if (i < 2) want16 = want16 << 8 | pattern(pe, c.rank, 6 + i);
        if (i < 4) want32 = want32 << 8 | pattern(pe, c.rank, 12 + i);
        want64 = want64 << 8 | pattern(pe, c.rank, 24 + i);
      }
      if (g8 != pattern(pe, c.rank, 5) || g16 != want16 || g32 != want32 || g64 != want64)
        atomicAdd(bad, 1ull);
    }
    if (t == 1) {
      uint8_t* mine = f.pbytes + c.rank * 32;
      gicl::dev::p<uint8_t>(c, mine + 1, static_cast<uint8_t>(0xa0 + c.rank), pe);
      gicl::dev::p<uint16_t>(c, reinterpret_cast<uint16_t*>(mine + 2),
                             static_cast<uint16_t>(0xbe00 + c.rank), pe);
      gicl::dev::p<uint32_t>(c, reinterpret_cast<uint32_t*>(mine + 4), 0xc0ffee00u + c.rank, pe);
      gicl::dev::p<uint64_t>(c, reinterpret_cast<uint64_t*>(mine + 8), kP64 + c.rank, pe);
      gicl::dev::p<double>(c, reinterpret_cast<double*>(mine + 16), 3.25 + c.rank, pe);
    }
    if (t == 2) {
      const uint8_t* src = b.src + pe * span;  // pattern(rank, pe, i)
      uint8_t* dst = f.small + c.rank * kSmallSpan;
      for (uint32_t k = 1; k < 8; ++k)
        gicl::dev::put(c, dst + small_at(k), src + small_at(k) + 2, k, pe);
      gicl::dev::put_signal(c, dst + small_at(8), src + small_at(8) + 2, 8, f.small_sig + c.rank, 1,
                            gicl::dev::SignalOp::kAdd, pe);
    }
    // What this rank sends `pe` (pattern(rank, pe, i)) as 32-bit elements, every second one.
    const uint32_t* src32 = reinterpret_cast<const uint32_t*>(b.src + pe * span);
    if (blockIdx.x == 0)
      gicl::dev::iput<gicl::dev::Scope::kBlock>(c, f.strided + c.rank * 3 * kStrided, src32, 3, 2,
                                                kStrided, pe);
    else
      gicl::dev::iget<gicl::dev::Scope::kBlock>(
          c, f.igot + pe * kStrided, reinterpret_cast<const uint32_t*>(theirs), 1, 3, kStrided, pe);
  }
  __syncthreads();
  if (threadIdx.x == 0) gicl::dev::quiet(c);
}

uint32_t pattern32(int from, int to, size_t byte) {
  return uint32_t(pattern(from, to, byte)) | uint32_t(pattern(from, to, byte + 1)) << 8 |
         uint32_t(pattern(from, to, byte + 2)) << 16 | uint32_t(pattern(from, to, byte + 3)) << 24;
}

/// Runs fetch_all on every rank and checks its answers here and its updates at each target,
/// for network peers and (2 x 2 GPUs) NVLink peers alike.
int fetches_and_gets(gicl_comm_t comm, gicl_device_comm_t dc, const Bufs& b, int n, int r,
                     const char* how) {
  FetchBufs f{};
  RANK_OK(gicl_mem_alloc(comm, n * 8, reinterpret_cast<void**>(&f.c64)));
  RANK_OK(gicl_mem_alloc(comm, n * 8, reinterpret_cast<void**>(&f.c32)));
  RANK_OK(gicl_mem_alloc(comm, n * 8, reinterpret_cast<void**>(&f.cas)));
  RANK_OK(gicl_mem_alloc(comm, n * 8, reinterpret_cast<void**>(&f.chain)));
  RANK_OK(gicl_mem_alloc(comm, n * 8, reinterpret_cast<void**>(&f.bits)));
  RANK_OK(gicl_mem_alloc(comm, 2 * n * kGetBytes, reinterpret_cast<void**>(&f.got)));
  RANK_OK(gicl_mem_alloc(comm, n * 32, reinterpret_cast<void**>(&f.pbytes)));
  RANK_OK(gicl_mem_alloc(comm, n * kSmallSpan, reinterpret_cast<void**>(&f.small)));
  RANK_OK(gicl_mem_alloc(comm, n * 8, reinterpret_cast<void**>(&f.small_sig)));
  RANK_OK(gicl_mem_alloc(comm, n * 3 * kStrided * 4, reinterpret_cast<void**>(&f.strided)));
  RANK_OK(gicl_mem_alloc(comm, n * kStrided * 4, reinterpret_cast<void**>(&f.igot)));
  RANK_CUDA(cudaMalloc(&f.answers, n * kAnswers * 8));
  RANK_CUDA(cudaMemset(f.c64, 0, n * 8));
  RANK_CUDA(cudaMemset(f.c32, 0xff, n * 8));  // [1] is reset below: the adds count from 0
  for (int q = 0; q < n; ++q) RANK_CUDA(cudaMemset(f.c32 + 2 * q + 1, 0, 4));
  RANK_CUDA(cudaMemset(f.cas, 0, n * 8));
  {
    std::vector<uint64_t> chain(n, kChainStart);
    RANK_CUDA(cudaMemcpy(f.chain, chain.data(), n * 8, cudaMemcpyHostToDevice));
  }
  RANK_CUDA(cudaMemset(f.bits, 0, n * 8));
  RANK_CUDA(cudaMemset(f.got, 0, 2 * n * kGetBytes));
  RANK_CUDA(cudaMemset(f.pbytes, 0x11, n * 32));
  RANK_CUDA(cudaMemset(f.small, 0x11, n * kSmallSpan));
  RANK_CUDA(cudaMemset(f.small_sig, 0, n * 8));
  RANK_CUDA(cudaMemset(f.strided, 0, n * 3 * kStrided * 4));
  RANK_CUDA(cudaMemset(f.igot, 0, n * kStrided * 4));
  RANK_CUDA(cudaMemset(f.answers, 0xff, n * kAnswers * 8));
  unsigned long long* bad = nullptr;
  RANK_CUDA(cudaMalloc(&bad, sizeof(*bad)));
  RANK_CUDA(cudaMemset(bad, 0, sizeof(*bad)));
  RANK_CUDA(cudaDeviceSynchronize());
  cudaFuncAttributes attrs;
  RANK_CUDA(cudaFuncGetAttributes(&attrs, fetch_all));
  RANK_OK(comm->bootstrap->barrier());  // every rank's words are reset
  fetch_all<<<2, kFetchThreads / 2>>>(dc, f, b, bad);
  RANK_CUDA(cudaDeviceSynchronize());
  gicl_result_t async = GICL_SUCCESS;
  const char* msg = nullptr;
  RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
  RANK_CHECK(async == GICL_SUCCESS, "async error after fetch_all %d: %s", async, msg);
  unsigned long long h_bad = 0;
  RANK_CUDA(cudaMemcpy(&h_bad, bad, sizeof(h_bad), cudaMemcpyDeviceToHost));
  RANK_CHECK(h_bad == 0, "%llu g() reads wrong (%s)", h_bad, how);
  // The answers this rank got.
  std::vector<uint64_t> ans(n * kAnswers);
  RANK_CUDA(cudaMemcpy(ans.data(), f.answers, ans.size() * 8, cudaMemcpyDeviceToHost));
  std::vector<uint8_t> got(2 * n * kGetBytes);
  RANK_CUDA(cudaMemcpy(got.data(), f.got, got.size(), cudaMemcpyDeviceToHost));
  std::vector<uint32_t> igot(n * kStrided);
  RANK_CUDA(cudaMemcpy(igot.data(), f.igot, igot.size() * 4, cudaMemcpyDeviceToHost));
  for (int pe = 0; pe < n; ++pe) {
    if (pe == r) continue;
    const uint64_t* a = ans.data() + pe * kAnswers;
    std::vector<int> seen64(kFetchThreads, 0), seen32(kFetchThreads, 0);
    int winners = 0;
    for (int t = 0; t < kFetchThreads; ++t) {
      RANK_CHECK(a[t] < kFetchThreads && a[kFetchThreads + t] < kFetchThreads,
                 "fetch-add answers %llu and %llu from rank %d (%s)", (unsigned long long)a[t],
                 (unsigned long long)a[kFetchThreads + t], pe, how);
      ++seen64[a[t]];
      ++seen32[a[kFetchThreads + t]];
      if (a[2 * kFetchThreads + t] == 0) ++winners;
    }
    for (int v = 0; v < kFetchThreads; ++v)
      RANK_CHECK(seen64[v] == 1 && seen32[v] == 1,
                 "fetch-add answer %d from rank %d seen %d (64-bit) and %d (32-bit) times (%s)", v,
                 pe, seen64[v], seen32[v], how);
    RANK_CHECK(winners == 1, "%d compare-swaps of 0 at rank %d won (%s)", winners, pe, how);
    std::vector<uint64_t> chain(a + 3 * kFetchThreads, a + 3 * kFetchThreads + 16);
    std::sort(chain.begin(), chain.end());
    RANK_CHECK(chain[0] == kChainStart, "no swap at rank %d answered the initial value (%s)", pe,
               how);
    for (size_t i = 1; i < chain.size(); ++i)
      RANK_CHECK(chain[i] >= 100 && chain[i] < 116 && chain[i] != chain[i - 1],
                 "swap answers at rank %d out of one chain: %llu (%s)", pe,
                 (unsigned long long)chain[i], how);
    uint32_t or_seen = 0;
    for (int t = 0; t < 8; ++t) {
      RANK_CHECK((a[3 * kFetchThreads + 16 + t] & (1u << t)) == 0 &&
                     (a[3 * kFetchThreads + 24 + t] & (1u << t)) == 0,
                 "a fetching or/xor at rank %d answered its own bit (%s)", pe, how);
      or_seen |= static_cast<uint32_t>(a[3 * kFetchThreads + 16 + t]);
    }
    RANK_CHECK(or_seen < 0x100, "fetching or answers beyond the 8 bits set: %x (%s)", or_seen, how);
    for (int k = 0; k < 2; ++k)
      for (size_t i = 0; i < kGetBytes; ++i)
        RANK_CHECK(got[(k * n + pe) * kGetBytes + i] == pattern(pe, r, i),
                   "byte %zu of the %s from rank %d (%s)", i, k ? "get_nbi" : "get", pe, how);
    for (int i = 0; i < kStrided; ++i)
      RANK_CHECK(igot[pe * kStrided + i] == pattern32(pe, r, 12 * i),
                 "iget element %d from rank %d (%s)", i, pe, how);
  }
  RANK_OK(comm->bootstrap->barrier());  // every rank's kernel and quiet returned
  // The updates every peer made here.
  std::vector<uint64_t> c64(n), cas(n), chain(n);
  std::vector<uint32_t> c32(2 * n), bits(2 * n), strided(n * 3 * kStrided);
  std::vector<uint8_t> pbytes(n * 32), small(n * kSmallSpan);
  std::vector<uint64_t> small_sig(n);
  RANK_CUDA(cudaMemcpy(small.data(), f.small, small.size(), cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaMemcpy(small_sig.data(), f.small_sig, n * 8, cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaMemcpy(c64.data(), f.c64, n * 8, cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaMemcpy(cas.data(), f.cas, n * 8, cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaMemcpy(chain.data(), f.chain, n * 8, cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaMemcpy(c32.data(), f.c32, n * 8, cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaMemcpy(bits.data(), f.bits, n * 8, cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaMemcpy(strided.data(), f.strided, strided.size() * 4, cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaMemcpy(pbytes.data(), f.pbytes, pbytes.size(), cudaMemcpyDeviceToHost));
  for (int from = 0; from < n; ++from) {
    if (from == r) continue;
    RANK_CHECK(c64[from] == kFetchThreads && c32[2 * from + 1] == kFetchThreads &&
                   c32[2 * from] == 0xffffffffu,
               "rank %d's fetch-adds: %llu, %u (neighbour %x) (%s)", from,
               (unsigned long long)c64[from], c32[2 * from + 1], c32[2 * from], how);
    RANK_CHECK(cas[from] >= 1 && cas[from] <= kFetchThreads, "rank %d's compare-swap left %llu",
               from, (unsigned long long)cas[from]);
    RANK_CHECK(chain[from] >= 100 && chain[from] < 116, "rank %d's swaps left %llu", from,
               (unsigned long long)chain[from]);
    RANK_CHECK(bits[2 * from] == 0xff && bits[2 * from + 1] == 0xff,
               "rank %d's fetching or %x, xor %x (%s)", from, bits[2 * from], bits[2 * from + 1],
               how);
    const uint8_t* pb = pbytes.data() + from * 32;
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;
    double vd;
    std::memcpy(&v16, pb + 2, 2);
    std::memcpy(&v32, pb + 4, 4);
    std::memcpy(&v64, pb + 8, 8);
    std::memcpy(&vd, pb + 16, 8);
    RANK_CHECK(pb[0] == 0x11 && pb[1] == 0xa0 + from && v16 == 0xbe00 + from &&
                   v32 == 0xc0ffee00u + from && v64 == kP64 + from && vd == 3.25 + from &&
                   pb[24] == 0x11,
               "rank %d's p(): %x %x %x %x %llx %g %x (%s)", from, pb[0], pb[1], v16, v32,
               (unsigned long long)v64, vd, pb[24], how);
    for (size_t i = 0, k = 0; i < kSmallSpan; ++i) {
      while (k < 8 && i >= small_at(k + 1)) ++k;  // the put whose range starts at or below i
      const bool inside = k >= 1 && i < small_at(k) + k;
      const uint8_t want = inside ? pattern(from, r, i + 2) : 0x11;
      RANK_CHECK(small[from * kSmallSpan + i] == want,
                 "byte %zu of rank %d's small puts: %x, not %x (%s)", i, from,
                 small[from * kSmallSpan + i], want, how);
    }
    RANK_CHECK(small_sig[from] == 1, "rank %d's 8-byte put_signal added %llu (%s)", from,
               (unsigned long long)small_sig[from], how);
    for (int i = 0; i < kStrided; ++i) {
      const uint32_t* s = strided.data() + from * 3 * kStrided + 3 * i;
      RANK_CHECK(s[0] == pattern32(from, r, 8 * i) && s[1] == 0 && s[2] == 0,
                 "iput element %d from rank %d: %x %x %x (%s)", i, from, s[0], s[1], s[2], how);
    }
  }
  RANK_CUDA(cudaFree(bad));
  RANK_CUDA(cudaFree(f.answers));
  RANK_OK(comm->bootstrap->barrier());
  return 0;
}

// ---- queue pairs: one request ring each --------------------------------------------------------

constexpr int kQps = 3;
constexpr size_t kQpBytes = 100 << 10;

/// Block b, on queue pair b, to every peer: a put_nbi of its part, a fence and a signal on that
/// queue pair (the payload before the signal), then a get_nbi of the peer's part and a quiet of
/// that queue pair alone.
__global__ void qp_send(gicl_device_comm_t c, gicl_qp_t* qps, Bufs b, uint8_t* qp_dst,
                        uint8_t* qp_got, uint64_t* qp_sig) {
  const gicl_qp_t qp = qps[blockIdx.x];
  const size_t span = kBlocks * kChunk;
  for (int pe = 0; pe < c.nranks; ++pe) {
    if (pe == c.rank) continue;
    const size_t off = blockIdx.x * kQpBytes;
    gicl::dev::put_nbi<gicl::dev::Scope::kBlock>(c, qp, qp_dst + c.rank * kQps * kQpBytes + off,
                                                 b.src + pe * span + off, kQpBytes, pe);
    if (threadIdx.x == 0) {
      gicl::dev::fence(c, pe, &qp, 1);
      gicl::dev::signal(c, qp, qp_sig + c.rank * kQps + blockIdx.x, 1, gicl::dev::SignalOp::kSet,
                        pe);
    }
    __syncthreads();
    gicl::dev::get_nbi<gicl::dev::Scope::kBlock>(c, qp, qp_got + pe * kQps * kQpBytes + off,
                                                 b.src + c.rank * span + off, kQpBytes, pe);
  }
  __syncthreads();
  if (threadIdx.x == 0) gicl::dev::quiet(c, GICL_RANK_ALL, &qp, 1);
}

/// Block b waits for queue pair b's signal from every peer, then checks that peer's part.
__global__ void qp_check(gicl_device_comm_t c, uint8_t* qp_dst, uint64_t* qp_sig,
                         unsigned long long* bad) {
  __shared__ bool ok;
  for (int from = 0; from < c.nranks; ++from) {
    if (from == c.rank) continue;
    if (threadIdx.x == 0)
      ok = gicl::dev::signal_wait_until(c, qp_sig + from * kQps + blockIdx.x, gicl::dev::Cmp::kEq,
                                        1);
    __syncthreads();
    if (!ok) {
      if (threadIdx.x == 0) atomicAdd(bad, 1ull << 32);
      continue;
    }
    const size_t off = blockIdx.x * kQpBytes;
    for (size_t i = threadIdx.x; i < kQpBytes; i += blockDim.x)
      if (qp_dst[(from * kQps) * kQpBytes + off + i] != pattern(from, c.rank, off + i))
        atomicAdd(bad, 1ull);
  }
}

/// Queue pairs on the network path: distinct ids, each on its own ring; every queue pair's
/// payload lands before its signal, its gets are complete after its own quiet.
int queue_pairs(gicl_comm_t comm, gicl_device_comm_t dc, const Bufs& b, int n, int r,
                const char* how) {
  gicl_qp_t qps[kQps];
  RANK_OK(gicl_qp_create(comm, kQps, qps));
  for (int i = 0; i < kQps; ++i)
    RANK_CHECK(qps[i].id != GICL_QP_DEFAULT_ID && (i == 0 || qps[i].id != qps[i - 1].id),
               "queue pair %d has id %d with a network path", i, qps[i].id);
  RANK_CHECK(comm->net->rings.size() >= 2 + kQps, "%zu request rings", comm->net->rings.size());
  gicl_qp_t* d_qps = nullptr;
  RANK_CUDA(cudaMalloc(&d_qps, sizeof(qps)));
  RANK_CUDA(cudaMemcpy(d_qps, qps, sizeof(qps), cudaMemcpyHostToDevice));
  uint8_t *qp_dst, *qp_got;
  uint64_t* qp_sig;
  RANK_OK(gicl_mem_alloc(comm, n * kQps * kQpBytes, reinterpret_cast<void**>(&qp_dst)));
  RANK_OK(gicl_mem_alloc(comm, n * kQps * kQpBytes, reinterpret_cast<void**>(&qp_got)));
  RANK_OK(gicl_mem_alloc(comm, n * kQps * 8, reinterpret_cast<void**>(&qp_sig)));
  RANK_CUDA(cudaMemset(qp_dst, 0, n * kQps * kQpBytes));
  RANK_CUDA(cudaMemset(qp_got, 0, n * kQps * kQpBytes));
  RANK_CUDA(cudaMemset(qp_sig, 0, n * kQps * 8));
  unsigned long long* bad = nullptr;
  RANK_CUDA(cudaMalloc(&bad, sizeof(*bad)));
  RANK_CUDA(cudaMemset(bad, 0, sizeof(*bad)));
  cudaFuncAttributes attrs;
  RANK_CUDA(cudaFuncGetAttributes(&attrs, qp_send));
  RANK_CUDA(cudaFuncGetAttributes(&attrs, qp_check));
  RANK_CUDA(cudaDeviceSynchronize());
  RANK_OK(comm->bootstrap->barrier());
  cudaStream_t s1, s2;
  RANK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  RANK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  qp_check<<<kQps, 256, 0, s2>>>(dc, qp_dst, qp_sig, bad);
  qp_send<<<kQps, 256, 0, s1>>>(dc, d_qps, b, qp_dst, qp_got, qp_sig);
  RANK_CUDA(cudaStreamSynchronize(s1));
  RANK_CUDA(cudaStreamSynchronize(s2));
  gicl_result_t async = GICL_SUCCESS;
  const char* msg = nullptr;
  RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
  RANK_CHECK(async == GICL_SUCCESS, "async error after the queue pairs %d: %s", async, msg);
  unsigned long long h_bad = 0;
  RANK_CUDA(cudaMemcpy(&h_bad, bad, sizeof(h_bad), cudaMemcpyDeviceToHost));
  RANK_CHECK(h_bad == 0, "queue pairs: %llu signal waits failed, %llu bytes wrong (%s)",
             h_bad >> 32, h_bad & 0xffffffffull, how);
  std::vector<uint8_t> got(n * kQps * kQpBytes);
  RANK_CUDA(cudaMemcpy(got.data(), qp_got, got.size(), cudaMemcpyDeviceToHost));
  for (int pe = 0; pe < n; ++pe) {
    if (pe == r) continue;
    for (size_t i = 0; i < kQps * kQpBytes; ++i)
      RANK_CHECK(got[pe * kQps * kQpBytes + i] == pattern(pe, r, i),
                 "byte %zu of the queue pairs' get_nbi from rank %d (%s)", i, pe, how);
  }
  RANK_CUDA(cudaStreamDestroy(s1));
  RANK_CUDA(cudaStreamDestroy(s2));
  RANK_CUDA(cudaFree(bad));
  RANK_CUDA(cudaFree(d_qps));
  RANK_OK(comm->bootstrap->barrier());
  return 0;
}

int run_rank(gicl_unique_id_t id, int n, int r, const char* how) {
  use_network_path(how, n, r);
  setenv("GICL_WAIT_TIMEOUT", "60000", 1);
  gicl_comm_t comm;
  if (init_on_gpu(id, n, r, &comm)) return 1;
  RANK_CHECK(comm->net != nullptr, "no network path opened (%s)", how);
  gicl_device_comm_t dc;
  RANK_OK(gicl_comm_get_device_comm(comm, &dc));
  const size_t span = kBlocks * kChunk;
  Bufs b{};
  RANK_OK(gicl_mem_alloc(comm, n * span, reinterpret_cast<void**>(&b.src)));
  RANK_OK(gicl_mem_alloc(comm, n * span, reinterpret_cast<void**>(&b.plain)));
  RANK_OK(gicl_mem_alloc(comm, n * span, reinterpret_cast<void**>(&b.sig_data)));
  RANK_OK(gicl_mem_alloc(comm, n * kBlocks * 8, reinterpret_cast<void**>(&b.sig)));
  RANK_OK(gicl_mem_alloc(comm, n * 8, reinterpret_cast<void**>(&b.adds)));
  RANK_OK(gicl_mem_alloc(comm, n * 8, reinterpret_cast<void**>(&b.atom64)));
  RANK_OK(gicl_mem_alloc(comm, n * 8, reinterpret_cast<void**>(&b.atom32)));
  RANK_OK(gicl_mem_alloc(comm, n * 16, reinterpret_cast<void**>(&b.bits)));
  RANK_OK(gicl_mem_alloc(comm, n * 8, reinterpret_cast<void**>(&b.set64)));
  RANK_CUDA(cudaMemset(b.atom64, 0, n * 8));
  RANK_CUDA(cudaMemset(b.atom32, 0, n * 8));
  RANK_CUDA(cudaMemset(b.set64, 0, n * 8));
  {
    std::vector<uint32_t> bits(4 * n, 0);
    for (int q = 0; q < n; ++q) bits[4 * q + 2] = 0xffffffffu;
    RANK_CUDA(cudaMemcpy(b.bits, bits.data(), bits.size() * 4, cudaMemcpyHostToDevice));
  }
  RANK_CUDA(cudaMemset(b.plain, 0, n * span));
  RANK_CUDA(cudaMemset(b.sig_data, 0, n * span));
  RANK_CUDA(cudaMemset(b.sig, 0, n * kBlocks * 8));
  RANK_CUDA(cudaMemset(b.adds, 0, n * 8));
  for (int pe = 0; pe < n; ++pe) fill<<<64, 256>>>(b.src + pe * span, span, r, pe);
  unsigned long long* bad = nullptr;
  RANK_CUDA(cudaMalloc(&bad, sizeof(*bad)));
  RANK_CUDA(cudaMemset(bad, 0, sizeof(*bad)));
  RANK_CUDA(cudaDeviceSynchronize());
  RANK_OK(comm->bootstrap->barrier());  // every rank's buffers are ready
  // Both kernels loaded before either runs: a lazy load at launch would wait for the other,
  // already running and waiting for this rank's peer.
  cudaFuncAttributes attrs;
  RANK_CUDA(cudaFuncGetAttributes(&attrs, check_signalled));
  RANK_CUDA(cudaFuncGetAttributes(&attrs, send_all));
  cudaStream_t s1, s2;
  RANK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  RANK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  check_signalled<<<kBlocks, 256, 0, s2>>>(dc, b, bad);
  send_all<<<kBlocks, 256, 0, s1>>>(dc, b);
  RANK_CUDA(cudaStreamSynchronize(s1));
  RANK_CUDA(cudaStreamSynchronize(s2));
  gicl_result_t async = GICL_SUCCESS;
  const char* msg = nullptr;
  RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
  RANK_CHECK(async == GICL_SUCCESS, "async error %d: %s", async, msg);
  unsigned long long h_bad = 0;
  RANK_CUDA(cudaMemcpy(&h_bad, bad, sizeof(h_bad), cudaMemcpyDeviceToHost));
  RANK_CHECK(h_bad == 0, "%llu signal waits failed, %llu bytes wrong when their signal was set",
             h_bad >> 32, h_bad & 0xffffffffull);
  // Every sender's quiet returned before this barrier: the plain puts and the adds are in place.
  RANK_OK(comm->bootstrap->barrier());
  std::vector<uint8_t> got(n * span);
  std::vector<uint64_t> adds(n);
  RANK_CUDA(cudaMemcpy(got.data(), b.plain, n * span, cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaMemcpy(adds.data(), b.adds, n * 8, cudaMemcpyDeviceToHost));
  for (int from = 0; from < n; ++from) {
    if (from == r) continue;
    for (size_t i = 0; i < span; ++i)
      RANK_CHECK(got[from * span + i] == pattern(from, r, i),
                 "byte %zu of rank %d's put_nbi wrong after its quiet (%s)", i, from, how);
    RANK_CHECK(adds[from] == kAdders, "rank %d's signal adds: %llu of %d (%s)", from,
               static_cast<unsigned long long>(adds[from]), kAdders, how);
  }
  std::vector<uint64_t> atom64(n), set64(n);
  std::vector<uint32_t> atom32(2 * n), bits(4 * n);
  RANK_CUDA(cudaMemcpy(atom64.data(), b.atom64, n * 8, cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaMemcpy(set64.data(), b.set64, n * 8, cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaMemcpy(atom32.data(), b.atom32, n * 8, cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaMemcpy(bits.data(), b.bits, n * 16, cudaMemcpyDeviceToHost));
  for (int from = 0; from < n; ++from) {
    if (from == r) continue;
    // 256 threads: 64-bit adds of 2^32 + 1; 32-bit adds of 0x01000001, which wrap to 0x100.
    RANK_CHECK(atom64[from] == ((uint64_t{256} << 32) | 256), "rank %d's 64-bit adds: %llx (%s)",
               from, static_cast<unsigned long long>(atom64[from]), how);
    RANK_CHECK(atom32[2 * from] == 0x100u && atom32[2 * from + 1] == 0,
               "rank %d's 32-bit adds: %x, neighbour %x (%s)", from, atom32[2 * from],
               atom32[2 * from + 1], how);
    RANK_CHECK(bits[4 * from] == 0xa5u && bits[4 * from + 1] == 0x33u &&
                   bits[4 * from + 2] == 0x0ff0u && set64[from] == kSet64,
               "rank %d's or %x, xor %x, and %x, set %llx (%s)", from, bits[4 * from],
               bits[4 * from + 1], bits[4 * from + 2], static_cast<unsigned long long>(set64[from]),
               how);
  }
  // The stream barrier (a device barrier: arrivals to network peers through the proxy).
  for (int i = 0; i < 20; ++i) RANK_OK(gicl_barrier_on_stream(comm, s1));
  RANK_CUDA(cudaStreamSynchronize(s1));
  RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
  RANK_CHECK(async == GICL_SUCCESS, "async error after barriers %d: %s", async, msg);
  RANK_CUDA(cudaFree(bad));
  if (const int rc = fetches_and_gets(comm, dc, b, n, r, how)) return 100 + rc;
  if (const int rc = queue_pairs(comm, dc, b, n, r, how)) return 200 + rc;
  RANK_OK(comm->bootstrap->barrier());
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

void run(int n, const char* how) {
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(
      n, [&](int r) { return run_rank(id, n, r, how); }, 300000);
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r << " (" << how << ")";
}

TEST(NetworkDeviceApi, TwoRanksWithP2pDisabled) {
  REQUIRE_GPUS(1);  // on one GPU the two ranks share it as processes
  run(2, "p2p_disable");
}

TEST(NetworkDeviceApi, TwoNodesByHostId) {
  REQUIRE_GPUS(1);  // on one GPU the two ranks share it as processes
  run(2, "hostid");
}

TEST(NetworkDeviceApi, FourRanksWithP2pDisabled) {
  REQUIRE_GPU_EACH_OR_MPS(4);
  run(4, "p2p_disable");
}

TEST(NetworkDeviceApi, TwoNodesOfTwoGpusByHostId) {
  REQUIRE_GPU_EACH_OR_MPS(4);
  run(4, "hostid");
}

}  // namespace
}  // namespace gicl::test
