// SPDX-License-Identifier: Apache-2.0
// The device API to ranks on the network path: kernels post puts, puts with signal, signals,
// non-fetching atomics (32- and 64-bit add, and, or, xor, set), fences and quiets into the proxy
// ring; the proxy carries them over libfabric's tcp;ofi_rxm on
// loopback (GPU memory is not registrable there: the staged delivery). Two ranks (on two GPUs,
// or two processes sharing one) made "remote" by GICL_P2P_DISABLE=1, and by a GICL_HOSTID per rank (node emulation); with
// four GPUs, 2 nodes x 2 GPUs, where each rank puts to every other over NVLink or the network
// as the path says and the results must be the same bytes. Every check is on the receiver; the
// stream barrier, whose arrivals to network peers travel through the proxy, follows.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/comm.hpp"
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

TEST(NetworkDeviceApi, TwoNodesOfTwoGpusByHostId) {
  REQUIRE_GPUS(4);
  run(4, "hostid");
}

}  // namespace
}  // namespace gicl::test
