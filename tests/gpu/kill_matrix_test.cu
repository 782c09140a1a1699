// SPDX-License-Identifier: Apache-2.0
// A rank SIGKILLed while every rank is inside a collective, a device-API put ring or a barrier,
// over NVLink and over the network path, at 2, 3 and 4 ranks, rank 0 among the victims: every
// survivor's operation stops, its communicator names the killed rank, and it does so within a
// second of the kill. The delays' p50 and p99 are printed per operation.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gicl/device.cuh"
#include "gicl/gicl.h"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

enum class Op : int { kAllreduce = 0, kPutRing = 1, kBarrier = 2 };
const char* op_name(Op o) {
  return o == Op::kAllreduce ? "allreduce" : o == Op::kPutRing ? "put ring" : "barrier";
}

constexpr int kMaxRanks = 4;
constexpr size_t kPutBytes = 64 << 10;
constexpr uint64_t kRoundsPerLaunch = 256;

/// What the ranks of one trial tell the test process (a shared anonymous mapping, inherited).
struct Shared {
  std::atomic<int64_t> kill_ns;            // CLOCK_MONOTONIC when the victim killed itself
  std::atomic<int64_t> end_ns[kMaxRanks];  // when each survivor's operation had stopped
};

int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

/// One block: each round puts kPutBytes to the next rank with a signal add, then waits for the
/// previous rank's; a wait that fails (aborted when a peer is lost) ends the kernel.
__global__ void put_ring(gicl_device_comm_t c, char* dst, const char* src, uint64_t* sig,
                         uint64_t base) {
  const int next = (c.rank + 1) % c.nranks;
  for (uint64_t i = 1; i <= kRoundsPerLaunch; ++i) {
    dev::put_signal<dev::Scope::kBlock>(c, dst, src, kPutBytes, sig, 1, dev::SignalOp::kAdd, next);
    __shared__ bool ok;
    if (threadIdx.x == 0) ok = dev::signal_wait_until(c, sig, dev::Cmp::kAtLeast, base + i);
    __syncthreads();
    const bool good = ok;
    __syncthreads();  // read by every thread before thread 0 writes the next round's
    if (!good) return;
  }
}

struct Trial {
  int ranks;
  Op op;
  bool network;
  int victim;
  int delay_us;  // after every rank's first operation, before the kill
};

/// Trial t of the matrix: every 36 trials cover each rank count, operation, path and victim once.
Trial make_trial(int t) {
  std::mt19937 rng(static_cast<uint32_t>(t) * 2654435761u + 7);
  Trial x;
  // Ranks beyond the GPU count share GPUs (rank r on GPU r % gpus): their kernels take turns,
  // which stretches the operations but not the naming of a loss.
  x.ranks = 2 + t % 3;
  x.op = static_cast<Op>((t / 3) % 3);
  x.network = (t / 9) % 2 == 1;
  x.victim = (t / 18) % 2 == 0 ? x.ranks - 1 : 0;
  x.delay_us = static_cast<int>(rng() % 20000);
  return x;
}

/// Runs op once (the put ring: one launch of kRoundsPerLaunch rounds) on stream s.
int run_op(const Trial& x, gicl_comm_t comm, const gicl_device_comm_t& dc, cudaStream_t s,
           float* buf, char* sym, uint64_t* sig, uint64_t* rounds) {
  switch (x.op) {
    case Op::kAllreduce:
      RANK_OK(gicl_allreduce(buf, buf, 1 << 16, gicl_float32, gicl_sum, comm, s));
      break;
    case Op::kPutRing:
      put_ring<<<1, 256, 0, s>>>(dc, sym, sym + kPutBytes, sig, *rounds);
      RANK_CUDA(cudaGetLastError());
      *rounds += kRoundsPerLaunch;
      break;
    case Op::kBarrier:
      RANK_OK(gicl_barrier(comm, s));
      break;
  }
  return 0;
}

int run_rank(const Trial& x, gicl_unique_id_t id, int r, Shared* sh) {
  setenv("GICL_WAIT_TIMEOUT", "30000", 1);  // a loss must be named by the watch, not a timeout
  if (x.network) use_network_path("p2p_disable", x.ranks, r);
  gicl_comm_t comm;
  if (init_on_gpu(id, x.ranks, r, &comm)) return 1;
  cudaStream_t s;
  RANK_CUDA(cudaStreamCreate(&s));
  float* buf = nullptr;
  RANK_CUDA(cudaMalloc(&buf, (1 << 16) * sizeof(float)));
  RANK_CUDA(cudaMemset(buf, 0, (1 << 16) * sizeof(float)));
  char* sym = nullptr;
  RANK_OK(gicl_mem_alloc(comm, 2 * kPutBytes + 64, reinterpret_cast<void**>(&sym)));
  uint64_t* sig = reinterpret_cast<uint64_t*>(sym + 2 * kPutBytes);
  RANK_CUDA(cudaMemset(sym, 0, 2 * kPutBytes + 64));
  gicl_device_comm_t dc;
  RANK_OK(gicl_comm_get_device_comm(comm, &dc));
  uint64_t rounds = 0;
  // One operation together: whatever is set up on first use is set up before the kill.
  if (run_op(x, comm, dc, s, buf, sym, sig, &rounds)) return 1;
  RANK_CUDA(cudaStreamSynchronize(s));
  RANK_OK(gicl_barrier(comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  if (r == x.victim) {
    // Operations in flight at the kill: enqueued, then the process dies mid-way.
    for (int i = 0; i < 64; ++i)
      if (run_op(x, comm, dc, s, buf, sym, sig, &rounds)) return 1;
    std::this_thread::sleep_for(std::chrono::microseconds(x.delay_us));
    sh->kill_ns.store(mono_ns());
    kill(getpid(), SIGKILL);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  gicl_result_t async = GICL_SUCCESS;
  const char* msg = nullptr;
  while (async == GICL_SUCCESS) {
    RANK_CHECK(std::chrono::steady_clock::now() < until, "%s: still running 10 s on",
               op_name(x.op));
    // A call refused because the communicator is in error is the loss seen by the host.
    const int bad = run_op(x, comm, dc, s, buf, sym, sig, &rounds);
    const cudaError_t e = cudaStreamSynchronize(s);
    RANK_CHECK(e == cudaSuccess, "%s: %s", op_name(x.op), cudaGetErrorString(e));
    RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
    RANK_CHECK(bad == 0 || async != GICL_SUCCESS, "%s failed with no async error", op_name(x.op));
  }
  sh->end_ns[r].store(mono_ns());
  const std::string m = msg != nullptr ? msg : "";
  const std::string want = "rank " + std::to_string(x.victim) + " (pid";
  RANK_CHECK(async == GICL_REMOTE_ERROR && m.find(want) != std::string::npos,
             "%s: the loss reads %d '%s', not naming rank %d", op_name(x.op), async, m.c_str(),
             x.victim);
  RANK_OK(gicl_comm_abort(comm));
  return 0;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

TEST(KillMatrix, EverySurvivorNamesTheKilledRankWithinASecond) {
  REQUIRE_GPUS(1);
  auto* sh = static_cast<Shared*>(
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(sh, MAP_FAILED);
  const int n = env_count("GICL_TEST_KILL_TRIALS", 36);
  std::map<std::string, std::vector<double>> delays;  // ms, per operation and path
  std::vector<double> all;
  int failed = 0;
  for (int t = 0; t < n; ++t) {
    const Trial x = make_trial(t);
    sh->kill_ns.store(0);
    for (auto& e : sh->end_ns) e.store(0);
    gicl_unique_id_t id;
    ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
    auto results = fork_ranks(
        x.ranks, [&](int r) { return run_rank(x, id, r, sh); }, 60000);
    const std::string key =
        std::string(op_name(x.op)) + (x.network ? ", network path" : ", NVLink");
    for (int r = 0; r < x.ranks; ++r) {
      if (r == x.victim) {
        EXPECT_EQ(results[r].code, 128 + SIGKILL) << "trial " << t << ": the victim";
        continue;
      }
      const bool ok = results[r].code == 0;
      EXPECT_TRUE(ok) << "trial " << t << " (" << key << ", " << x.ranks << " ranks, victim "
                      << x.victim << "): rank " << r << " exited " << results[r].code;
      if (!ok) {
        ++failed;
        continue;
      }
      const double ms = static_cast<double>(sh->end_ns[r].load() - sh->kill_ns.load()) / 1e6;
      EXPECT_LT(ms, 1000.0) << "trial " << t << " (" << key << "): rank " << r;
      delays[key].push_back(ms);
      all.push_back(ms);
    }
  }
  std::printf("%-32s %9s %9s %9s %9s\n", "operation, path", "survivors", "p50 ms", "p99 ms",
              "max ms");
  for (const auto& [key, v] : delays)
    std::printf("%-32s %9zu %9.1f %9.1f %9.1f\n", key.c_str(), v.size(), percentile(v, 0.5),
                percentile(v, 0.99), percentile(v, 1.0));
  std::printf("%-32s %9zu %9.1f %9.1f %9.1f  (%d trials, %d survivors failed)\n", "all", all.size(),
              percentile(all, 0.5), percentile(all, 0.99), percentile(all, 1.0), n, failed);
  munmap(sh, sizeof(Shared));
}

}  // namespace
}  // namespace gicl::test
