// SPDX-License-Identifier: Apache-2.0
// The soak: 4 ranks (rank r on GPU r % GPUs) run a random mix, the same sequence on every rank,
// for GICL_TEST_SOAK_SECONDS (default 20): every collective with random types, reductions, sizes
// and roots, in place and not; device-API put_signal rings; replays of a captured allreduce;
// split, use and destroy of a sub-communicator; register, use and deregister of cudaMalloc
// buffers; barriers. Every output element is checked against the value it must have (inputs are
// small integers, so every reduction order gives the same result in float32 too). The process's
// resident memory, open descriptors and the GPU's used memory are sampled after a warm-up and at
// the end: they must stay flat.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gicl/device.cuh"
#include "gicl/gicl.h"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

constexpr int kRanks = 4;
constexpr size_t kMaxCount = size_t{1} << 20;  // elements per rank block
constexpr size_t kRingBytes = size_t{1} << 20;
constexpr size_t kGraphCount = 4096;

enum Coll : int { kAllreduce, kReduceScatter, kAllgather, kBroadcast, kReduce, kAlltoall, kColls };
const char* coll_name(int c) {
  static const char* names[] = {"allreduce", "reduce_scatter", "allgather",
                                "broadcast", "reduce",         "alltoall"};
  return names[c];
}

/// Rank r's input element i in round `seed`: a small integer (-30..30).
__host__ __device__ inline int value(int r, uint32_t seed, size_t i) {
  const uint32_t h = static_cast<uint32_t>(i) * 2654435761u + seed * 40503u;
  return static_cast<int>((static_cast<uint32_t>(r + 1) * (h % 13 + 1) + h % 61) % 61) - 30;
}

template <typename T>
__global__ void fill(T* p, size_t n, int r, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<T>(value(r, seed, i));
}

/// op over the ranks in `members` (a bit per rank) of element i.
__device__ inline int reduced(gicl_redop_t op, unsigned members, uint32_t seed, size_t i) {
  bool first = true;
  int acc = 0;
  for (int r = 0; r < 32; ++r) {
    if (!((members >> r) & 1u)) continue;
    const int v = value(r, seed, i);
    acc = first ? v : op == gicl_sum ? acc + v : op == gicl_max ? max(acc, v) : min(acc, v);
    first = false;
  }
  return acc;
}

/// Counts the elements of `out` (n of them) that differ from what collective `coll` must give
/// rank `me` of the ranks in `members`, for blocks of `count` elements.
template <typename T>
__global__ void check(const T* out, size_t n, int coll, gicl_redop_t op, unsigned members, int me,
                      int root, size_t count, uint32_t seed, unsigned long long* bad) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    int want = 0;
    switch (coll) {
      case kAllreduce:
      case kReduce:
        want = reduced(op, members, seed, i);
        break;
      case kReduceScatter:
        want = reduced(op, members, seed, me * count + i);
        break;
      case kAllgather:
        want = value(static_cast<int>(i / count), seed, i % count);
        break;
      case kBroadcast:
        want = value(root, seed, i);
        break;
      case kAlltoall:
        want = value(static_cast<int>(i / count), seed, me * count + i % count);
        break;
    }
    if (out[i] != static_cast<T>(want)) atomicAdd(bad, 1ull);
  }
}

/// One block: this rank's pattern into the next rank's inbox with a signal add, then a wait for
/// the previous rank's and a check of every byte it put here.
__global__ void put_ring(gicl_device_comm_t c, char* inbox, char* out, uint64_t* sig, size_t bytes,
                         uint64_t expect, uint32_t seed, unsigned long long* bad) {
  const int next = (c.rank + 1) % c.nranks, prev = (c.rank + c.nranks - 1) % c.nranks;
  for (size_t i = threadIdx.x; i < bytes; i += blockDim.x)
    out[i] = static_cast<char>(value(c.rank, seed, i));
  __syncthreads();
  dev::put_signal<dev::Scope::kBlock>(c, inbox, out, bytes, sig, 1, dev::SignalOp::kAdd, next);
  __shared__ bool ok;
  if (threadIdx.x == 0) ok = dev::signal_wait_until(c, sig, dev::Cmp::kAtLeast, expect);
  __syncthreads();
  if (!ok) {
    if (threadIdx.x == 0) atomicAdd(bad, 1ull << 40);
    return;
  }
  for (size_t i = threadIdx.x; i < bytes; i += blockDim.x)
    if (inbox[i] != static_cast<char>(value(prev, seed, i))) atomicAdd(bad, 1ull);
}

struct Footprint {
  double rss_mib;
  int fds;
  double gpu_used_mib;
};
int footprint(Footprint* f) {
  long pages = 0, resident = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  RANK_CHECK(statm != nullptr && std::fscanf(statm, "%ld %ld", &pages, &resident) == 2,
             "/proc/self/statm");
  std::fclose(statm);
  f->rss_mib = static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1048576;
  DIR* d = opendir("/proc/self/fd");
  RANK_CHECK(d != nullptr, "/proc/self/fd");
  f->fds = 0;
  while (readdir(d) != nullptr) ++f->fds;
  closedir(d);
  size_t free_b = 0, total_b = 0;
  RANK_CUDA(cudaMemGetInfo(&free_b, &total_b));
  f->gpu_used_mib = static_cast<double>(total_b - free_b) / 1048576;
  return 0;
}

template <typename T>
int check_out(const T* out, size_t n, int coll, gicl_redop_t op, unsigned members, int me, int root,
              size_t count, uint32_t seed, unsigned long long* bad, cudaStream_t s,
              const std::string& what) {
  check<T><<<64, 256, 0, s>>>(out, n, coll, op, members, me, root, count, seed, bad);
  RANK_CUDA(cudaGetLastError());
  RANK_CUDA(cudaStreamSynchronize(s));
  unsigned long long wrong = 0;
  RANK_CUDA(cudaMemcpy(&wrong, bad, sizeof(wrong), cudaMemcpyDeviceToHost));
  RANK_CHECK(wrong == 0, "%s: %llu elements wrong", what.c_str(), wrong);
  return 0;
}

/// One random collective over all kRanks ranks (this one is `me`), its output checked.
template <typename T>
int one_collective(gicl_comm_t comm, int me, std::mt19937& rng, gicl_datatype_t dt, T* send,
                   T* recv, unsigned long long* bad, cudaStream_t s, uint32_t seed) {
  const int n = kRanks;
  const unsigned members = (1u << kRanks) - 1;
  const int coll = static_cast<int>(rng() % kColls);
  const size_t count = std::max<size_t>(1, size_t{1} << (rng() % 21)) - (rng() % 2);
  const size_t elems = std::max<size_t>(count, 1);
  const gicl_redop_t ops[] = {gicl_sum, gicl_max, gicl_min};
  const gicl_redop_t op = ops[rng() % 3];
  const int root = static_cast<int>(rng() % n);
  const bool in_place = rng() % 2 == 0 && (coll == kAllreduce || coll == kBroadcast);
  const bool blocked_in = coll == kReduceScatter || coll == kAlltoall;
  const size_t in_elems = blocked_in ? n * elems : elems;
  const size_t out_elems = coll == kAllgather || coll == kAlltoall ? n * elems : elems;
  T* in = in_place ? recv : send;
  fill<T><<<64, 256, 0, s>>>(in, in_elems, me, seed);
  RANK_CUDA(cudaGetLastError());
  RANK_CUDA(cudaMemsetAsync(bad, 0, sizeof(*bad), s));
  switch (coll) {
    case kAllreduce:
      RANK_OK(gicl_allreduce(in, recv, elems, dt, op, comm, s));
      break;
    case kReduceScatter:
      RANK_OK(gicl_reduce_scatter(in, recv, elems, dt, op, comm, s));
      break;
    case kAllgather:
      RANK_OK(gicl_allgather(in, recv, elems, dt, comm, s));
      break;
    case kBroadcast:
      RANK_OK(gicl_broadcast(in, recv, elems, dt, root, comm, s));
      break;
    case kReduce:
      RANK_OK(gicl_reduce(in, recv, elems, dt, op, root, comm, s));
      break;
    case kAlltoall:
      RANK_OK(gicl_alltoall(in, recv, elems, dt, comm, s));
      break;
  }
  if (coll == kReduce && me != root) return 0;  // only the root's output is defined
  const std::string what = std::string(coll_name(coll)) + " of " + std::to_string(elems) +
                           (dt == gicl_float32 ? " float32" : " int32") +
                           (in_place ? " in place" : "") + " on " + std::to_string(n) + " ranks";
  return check_out(recv, out_elems, coll, op, members, me, root, elems, seed, bad, s, what);
}

int run_rank(int r, gicl_unique_id_t id, int seconds) {
  gicl_comm_t comm;
  if (init_on_gpu(id, kRanks, r, &comm)) return 1;
  cudaStream_t s;
  RANK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t max_bytes = kRanks * kMaxCount * sizeof(float);
  void *send = nullptr, *recv = nullptr;
  RANK_CUDA(cudaMalloc(&send, max_bytes));
  RANK_CUDA(cudaMalloc(&recv, max_bytes));
  unsigned long long* bad = nullptr;
  RANK_CUDA(cudaMalloc(&bad, sizeof(*bad)));
  char* sym = nullptr;
  RANK_OK(gicl_mem_alloc(comm, 2 * kRingBytes + 64, reinterpret_cast<void**>(&sym)));
  uint64_t* sig = reinterpret_cast<uint64_t*>(sym + 2 * kRingBytes);
  RANK_CUDA(cudaMemset(sig, 0, 8));
  gicl_device_comm_t dc;
  RANK_OK(gicl_comm_get_device_comm(comm, &dc));
  // The captured allreduce: kGraphCount float32 from gin into gout.
  float *gin = nullptr, *gout = nullptr;
  RANK_CUDA(cudaMalloc(&gin, kGraphCount * sizeof(float)));
  RANK_CUDA(cudaMalloc(&gout, kGraphCount * sizeof(float)));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  RANK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  RANK_OK(gicl_allreduce(gin, gout, kGraphCount, gicl_float32, gicl_sum, comm, s));
  RANK_CUDA(cudaStreamEndCapture(s, &graph));
  RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  RANK_OK(gicl_barrier(comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));

  std::mt19937 rng(12345);  // the same sequence on every rank
  const unsigned all = (1u << kRanks) - 1;
  const auto t0 = std::chrono::steady_clock::now();
  const auto warm = t0 + std::chrono::seconds(std::max(1, seconds / 10));
  Footprint base{}, now{};
  bool have_base = false;
  uint64_t rings = 0;
  long actions[10] = {};  // by the action drawn
  int* stop = nullptr;
  RANK_CUDA(cudaMalloc(&stop, sizeof(int)));
  for (uint32_t it = 1;; ++it) {
    if (it % 32 == 0) {
      // Whether to stop: rank 0's clock decides, an allreduce (max) tells everyone.
      const int mine =
          r == 0 && std::chrono::steady_clock::now() - t0 > std::chrono::seconds(seconds);
      RANK_CUDA(cudaMemcpy(stop, &mine, sizeof(int), cudaMemcpyHostToDevice));
      RANK_OK(gicl_allreduce(stop, stop, 1, gicl_int32, gicl_max, comm, s));
      int got = 0;
      RANK_CUDA(cudaMemcpyAsync(&got, stop, sizeof(int), cudaMemcpyDeviceToHost, s));
      RANK_CUDA(cudaStreamSynchronize(s));
      if (got != 0) break;
      if (!have_base && std::chrono::steady_clock::now() > warm) {
        if (footprint(&base)) return 1;
        have_base = true;
      }
    }
    const uint32_t seed = it;
    const int action = static_cast<int>(rng() % 10);
    ++actions[action];
    if (action < 4) {  // a collective, float32 or int32
      const bool f = rng() % 2 == 0;
      const int rc = f ? one_collective(comm, r, rng, gicl_float32, static_cast<float*>(send),
                                        static_cast<float*>(recv), bad, s, seed)
                       : one_collective(comm, r, rng, gicl_int32, static_cast<int32_t*>(send),
                                        static_cast<int32_t*>(recv), bad, s, seed);
      if (rc) return rc;
    } else if (action == 4) {  // a device-API ring
      const size_t bytes = 1 + rng() % kRingBytes;
      RANK_CUDA(cudaMemsetAsync(bad, 0, sizeof(*bad), s));
      put_ring<<<1, 512, 0, s>>>(dc, sym, sym + kRingBytes, sig, bytes, ++rings, seed, bad);
      RANK_CUDA(cudaGetLastError());
      RANK_CUDA(cudaStreamSynchronize(s));
      unsigned long long wrong = 0;
      RANK_CUDA(cudaMemcpy(&wrong, bad, sizeof(wrong), cudaMemcpyDeviceToHost));
      RANK_CHECK(wrong == 0, "put ring %llu of %zu bytes: %llu wrong (%s)",
                 static_cast<unsigned long long>(rings), bytes, wrong,
                 wrong >> 40 ? "its wait failed" : "bytes");
      RANK_OK(gicl_barrier(comm, s));  // the inbox is read before the next ring writes it
    } else if (action == 5) {          // graph replays
      const int replays = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < replays; ++k) {
        fill<float><<<16, 256, 0, s>>>(gin, kGraphCount, r, seed + 7919u * k);
        RANK_CUDA(cudaGetLastError());
        RANK_CUDA(cudaMemsetAsync(bad, 0, sizeof(*bad), s));
        RANK_CUDA(cudaGraphLaunch(exec, s));
        if (check_out(gout, kGraphCount, kAllreduce, gicl_sum, all, r, 0, kGraphCount,
                      seed + 7919u * k, bad, s, "graph replay"))
          return 1;
      }
    } else if (action == 6) {  // split, use, destroy
      gicl_comm_t sub = nullptr;
      RANK_OK(gicl_comm_split(comm, r % 2, r, &sub));
      int sn = 0, sr = 0;
      RANK_OK(gicl_comm_size(sub, &sn));
      RANK_OK(gicl_comm_rank(sub, &sr));
      const unsigned members = r % 2 == 0 ? 0x5u : 0xau;
      const size_t n = 1 + rng() % 65536;
      fill<float><<<64, 256, 0, s>>>(static_cast<float*>(send), n, r, seed);
      RANK_CUDA(cudaGetLastError());
      RANK_CUDA(cudaMemsetAsync(bad, 0, sizeof(*bad), s));
      RANK_OK(gicl_allreduce(send, recv, n, gicl_float32, gicl_sum, sub, s));
      if (check_out(static_cast<float*>(recv), n, kAllreduce, gicl_sum, members, sr, 0, n, seed,
                    bad, s, "allreduce on a split half"))
        return 1;
      RANK_CHECK(sn == 2, "split: %d ranks", sn);
      RANK_OK(gicl_comm_destroy(sub));
    } else if (action == 7) {  // register, use, deregister
      const size_t n = 1 + rng() % kMaxCount;
      float *a = nullptr, *b = nullptr;
      RANK_CUDA(cudaMalloc(&a, n * sizeof(float)));
      RANK_CUDA(cudaMalloc(&b, n * sizeof(float)));
      void *ha = nullptr, *hb = nullptr;
      RANK_OK(gicl_comm_register(comm, a, n * sizeof(float), &ha));
      RANK_OK(gicl_comm_register(comm, b, n * sizeof(float), &hb));
      fill<float><<<64, 256, 0, s>>>(a, n, r, seed);
      RANK_CUDA(cudaGetLastError());
      RANK_CUDA(cudaMemsetAsync(bad, 0, sizeof(*bad), s));
      RANK_OK(gicl_allreduce(a, b, n, gicl_float32, gicl_max, comm, s));
      if (check_out(b, n, kAllreduce, gicl_max, all, r, 0, n, seed, bad, s,
                    "allreduce on registered buffers"))
        return 1;
      RANK_OK(gicl_comm_deregister(comm, ha));
      RANK_OK(gicl_comm_deregister(comm, hb));
      RANK_CUDA(cudaFree(a));
      RANK_CUDA(cudaFree(b));
    } else {
      RANK_OK(gicl_barrier(comm, s));
      RANK_CUDA(cudaStreamSynchronize(s));
    }
    gicl_result_t async = GICL_SUCCESS;
    RANK_OK(gicl_comm_get_async_error(comm, &async, nullptr));
    RANK_CHECK(async == GICL_SUCCESS, "iteration %u: async error %d", it, async);
  }
  RANK_CUDA(cudaStreamSynchronize(s));
  RANK_CHECK(have_base, "the soak ended before its warm-up did");
  if (footprint(&now)) return 1;
  std::printf(
      "rank %d: %.0f s, actions collective %ld ring %ld graph %ld split %ld register %ld barrier "
      "%ld; RSS %.1f -> %.1f MiB, fds %d -> %d, GPU used %.0f -> %.0f MiB\n",
      r, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
      actions[0] + actions[1] + actions[2] + actions[3], actions[4], actions[5], actions[6],
      actions[7], actions[8] + actions[9], base.rss_mib, now.rss_mib, base.fds, now.fds,
      base.gpu_used_mib, now.gpu_used_mib);
  RANK_CHECK(now.rss_mib - base.rss_mib < 32, "RSS grew %.1f MiB", now.rss_mib - base.rss_mib);
  RANK_CHECK(now.fds <= base.fds, "descriptors grew from %d to %d", base.fds, now.fds);
  // The GPU's used memory counts every process on it: the ranks sharing it grow together.
  RANK_CHECK(now.gpu_used_mib - base.gpu_used_mib < 256, "GPU used memory grew %.0f MiB",
             now.gpu_used_mib - base.gpu_used_mib);
  RANK_CUDA(cudaGraphExecDestroy(exec));
  RANK_CUDA(cudaGraphDestroy(graph));
  RANK_OK(gicl_mem_free(comm, sym));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

TEST(Soak, MixedTrafficStaysCorrectAndItsFootprintFlat) {
  REQUIRE_GPUS(1);
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  const int seconds = env_count("GICL_TEST_SOAK_SECONDS", 20);
  auto results = fork_ranks(
      kRanks, [&](int r) { return run_rank(r, id, seconds); }, (seconds + 300) * 1000);
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

}  // namespace
}  // namespace gicl::test
