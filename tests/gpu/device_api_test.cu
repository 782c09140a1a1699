// SPDX-License-Identifier: Apache-2.0
// The device API on real GPUs, 2 and 4 processes over the GPUs there are: every RMA operation at
// every scope with poisoned destinations and fresh random data, scalar and strided forms, the
// put_signal ordering stress, atomics under contention, every wait comparison, barrier stress
// (world and a team), queue pairs, host stream operations (also after a kernel that triggers its
// dependents early), the timeout report, GICL_DEVICE_CHECKS and abort of a waiting kernel.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "gicl/device.cuh"
#include "gicl/gicl.h"
#include "gpu/device_api_kernels.cuh"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

struct Fixture {
  gicl_comm_t comm = nullptr;
  gicl_device_comm_t dc{};
  int rank = 0, n = 0;
  cudaStream_t s = nullptr;
  unsigned long long* bad = nullptr;
};

int setup(gicl_unique_id_t id, int n, int r, Fixture* f) {
  if (init_on_gpu(id, n, r, &f->comm)) return 1;
  f->rank = r;
  f->n = n;
  RANK_OK(gicl_comm_get_device_comm(f->comm, &f->dc));
  RANK_CHECK(f->dc.version == GICL_DEVICE_ABI_VERSION && f->dc.rank == r && f->dc.nranks == n,
             "device handle identity");
  RANK_CUDA(cudaStreamCreateWithFlags(&f->s, cudaStreamNonBlocking));
  RANK_CUDA(cudaMalloc(&f->bad, sizeof(unsigned long long)));
  return 0;
}

// Runs `launch` after zeroing the bad counter, then returns the count (or a large number on a
// CUDA error).
template <typename F>
unsigned long long count(Fixture& f, F&& launch) {
  if (cudaMemsetAsync(f.bad, 0, sizeof(*f.bad), f.s) != cudaSuccess) return ~0ull;
  if (launch() != cudaSuccess) return ~0ull - 1;
  unsigned long long b = 0;
  if (cudaMemcpyAsync(&b, f.bad, sizeof(b), cudaMemcpyDeviceToHost, f.s) != cudaSuccess ||
      cudaStreamSynchronize(f.s) != cudaSuccess)
    return ~0ull - 2;
  return b;
}

int barrier(Fixture& f) {
  RANK_OK(gicl_barrier_on_stream(f.comm, f.s));
  RANK_CUDA(cudaStreamSynchronize(f.s));
  return 0;
}

int check_rma(Fixture& f, uint32_t seed) {
  const size_t block = 96 * 1024 + 48;
  char* sym = nullptr;
  char* local = nullptr;
  unsigned long long* counter = nullptr;
  RANK_OK(gicl_mem_alloc(f.comm, block * f.n, reinterpret_cast<void**>(&sym)));
  RANK_CUDA(cudaMalloc(&local, block * f.n));
  RANK_CUDA(cudaMalloc(&counter, sizeof(*counter)));
  std::mt19937 rng(seed);
  const RmaVariant variants[] = {RmaVariant::kPut,        RmaVariant::kPutNbi,   RmaVariant::kPutQp,
                                 RmaVariant::kPutCounted, RmaVariant::kPutTyped, RmaVariant::kGet,
                                 RmaVariant::kGetNbi,     RmaVariant::kGetTyped};
  for (RmaVariant v : variants) {
    for (int scope = 0; scope < 3; ++scope) {
      const bool typed = v == RmaVariant::kPutTyped || v == RmaVariant::kGetTyped;
      const bool is_get =
          v == RmaVariant::kGet || v == RmaVariant::kGetNbi || v == RmaVariant::kGetTyped;
      RmaArgs a{sym, local, block, 0, 0, static_cast<uint32_t>(rng()), scope, v, counter};
      a.offset = rng() % 48;
      a.len = 1 + rng() % (block - a.offset - 1);
      if (rng() % 4 == 0) a.len = 1 + rng() % 40;  // tiny, below one vector
      if (typed) a.offset &= ~size_t{1}, a.len = (a.len & ~size_t{1}) + 2;
      // Poison everything the operation may write, fill the source.
      RANK_CUDA(cudaMemsetAsync(is_get ? local : sym, 0xA5, block * f.n, f.s));
      RANK_CUDA(cudaMemsetAsync(counter, 0, sizeof(*counter), f.s));
      RANK_CUDA(fill_pattern(is_get ? sym : local, block, a.seed, f.rank, f.s));
      if (barrier(f)) return 1;
      RANK_CUDA(run_rma(f.dc, a, f.s));
      RANK_CUDA(cudaStreamSynchronize(f.s));
      if (barrier(f)) return 1;
      // Block p (of the receiving buffer) must hold rank p's pattern in [offset, offset+len) and
      // poison around it.
      char* recv = is_get ? local : sym;
      for (int p = 0; p < f.n; ++p) {
        char* blk = recv + p * block;
        unsigned long long bad = count(f, [&] {
          // The pattern of byte i of rank p's source is pattern8(seed, p, i) at i = offset + j.
          cudaError_t e = count_not(blk, a.offset, 0xA5, f.bad, f.s);
          if (e == cudaSuccess)
            e = count_not(blk + a.offset + a.len, block - a.offset - a.len, 0xA5, f.bad, f.s);
          return e;
        });
        RANK_CHECK(bad == 0,
                   "variant %d scope %d: %llu bytes outside [%zu, +%zu) of block %d were "
                   "written",
                   static_cast<int>(v), scope, bad, a.offset, a.len, p);
        // Compare against the pattern, shifted: the source was filled from index 0.
        std::vector<char> host(a.len), want(a.len);
        RANK_CUDA(cudaMemcpy(host.data(), blk + a.offset, a.len, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < a.len; ++i)
          want[i] = static_cast<char>(pattern8(a.seed, p, a.offset + i));
        size_t wrong = 0;
        for (size_t i = 0; i < a.len; ++i) wrong += host[i] != want[i];
        RANK_CHECK(wrong == 0,
                   "variant %d scope %d: %zu of %zu bytes from rank %d wrong (offset %zu)",
                   static_cast<int>(v), scope, wrong, a.len, p, a.offset);
      }
      if (v == RmaVariant::kPutCounted) {
        unsigned long long calls = 0;
        RANK_CUDA(cudaMemcpy(&calls, counter, sizeof(calls), cudaMemcpyDeviceToHost));
        RANK_CHECK(calls > 0 && calls % f.n == 0, "local completion counter %llu", calls);
      }
    }
  }
  RANK_CUDA(cudaFree(local));
  RANK_CUDA(cudaFree(counter));
  RANK_OK(gicl_mem_free(f.comm, sym));
  return 0;
}

int check_scalar(Fixture& f, uint32_t seed) {
  int64_t* p64 = nullptr;
  int32_t* strided = nullptr;
  RANK_OK(gicl_mem_alloc(f.comm, 64 * 8 * f.n, reinterpret_cast<void**>(&p64)));
  RANK_OK(gicl_mem_alloc(f.comm, 256 * 4 * f.n, reinterpret_cast<void**>(&strided)));
  RANK_CUDA(cudaMemset(p64, 0xff, 64 * 8 * f.n));
  RANK_CUDA(cudaMemset(strided, 0xff, 256 * 4 * f.n));
  RANK_CUDA(cudaDeviceSynchronize());
  if (barrier(f)) return 1;
  const unsigned long long bad =
      count(f, [&] { return run_scalar(f.dc, p64, strided, seed, f.bad, f.s); });
  RANK_CHECK(bad == 0, "p/g/iput/iget: %llu wrong", bad);
  if (barrier(f)) return 1;
  RANK_OK(gicl_mem_free(f.comm, strided));
  RANK_OK(gicl_mem_free(f.comm, p64));
  return 0;
}

int check_ordering(Fixture& f, uint32_t seed, int rounds) {
  const size_t max_len = 64 * 1024;
  char* data = nullptr;
  uint64_t* sigs = nullptr;
  char* stage = nullptr;
  RANK_OK(gicl_mem_alloc(f.comm, max_len + 64, reinterpret_cast<void**>(&data)));
  RANK_OK(gicl_mem_alloc(f.comm, 2 * sizeof(uint64_t), reinterpret_cast<void**>(&sigs)));
  RANK_CUDA(cudaMalloc(&stage, max_len));
  RANK_CUDA(cudaMemset(sigs, 0, 2 * sizeof(uint64_t)));
  RANK_CUDA(cudaDeviceSynchronize());
  if (barrier(f)) return 1;
  const auto t0 = std::chrono::steady_clock::now();
  const unsigned long long bad = count(f, [&] {
    return run_ordering(f.dc, data, sigs, sigs + 1, stage, rounds, max_len, seed, f.bad, f.s);
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RANK_CHECK(bad == 0,
             "ordering stress: %llu bytes seen before their payload landed (or a wait failed)",
             bad);
  std::printf("rank %d: %d put_signal rounds checked in %.2f s\n", f.rank, rounds, s);
  std::fflush(stdout);
  if (barrier(f)) return 1;
  RANK_CUDA(cudaFree(stage));
  RANK_OK(gicl_mem_free(f.comm, sigs));
  RANK_OK(gicl_mem_free(f.comm, data));
  return 0;
}

int check_atomics(Fixture& f) {
  uint64_t* ctr = nullptr;
  const size_t words = 6 + 64 + 64;
  RANK_OK(gicl_mem_alloc(f.comm, words * 8, reinterpret_cast<void**>(&ctr)));
  RANK_CUDA(cudaMemset(ctr, 0, words * 8));
  RANK_CUDA(cudaDeviceSynchronize());
  if (barrier(f)) return 1;
  const int iters = 20, threads = 8 * 128;
  const unsigned long long bad =
      count(f, [&] { return run_atomics(f.dc, ctr, iters, f.bad, f.s); });
  RANK_CHECK(bad == 0, "fetching atomics returned %llu wrong values", bad);
  if (barrier(f)) return 1;
  std::vector<uint64_t> h(words);
  RANK_CUDA(cudaMemcpy(h.data(), ctr, words * 8, cudaMemcpyDeviceToHost));
  const uint64_t total = 1ull * f.n * threads * iters;
  RANK_CHECK(h[0] == total, "fetch_add total %llu, expected %llu", (unsigned long long)h[0],
             (unsigned long long)total);
  RANK_CHECK(h[1] == total, "inc total %llu, expected %llu", (unsigned long long)h[1],
             (unsigned long long)total);
  RANK_CHECK(h[2] == 3 * total, "add total %llu", (unsigned long long)h[2]);
  RANK_CHECK((h[3] & 0xffffffffull) == total, "CAS increments %llu",
             (unsigned long long)(h[3] & 0xffffffffull));
  RANK_CHECK(h[4] == ~0ull, "or-mask %llx", (unsigned long long)h[4]);
  RANK_CHECK(h[5] == 0, "xor twice left %llx", (unsigned long long)h[5]);
  RANK_OK(gicl_mem_free(f.comm, ctr));
  return 0;
}

int check_waits(Fixture& f) {
  char* buf = nullptr;
  RANK_OK(gicl_mem_alloc(f.comm, 64, reinterpret_cast<void**>(&buf)));
  RANK_CUDA(cudaMemset(buf, 0, 64));
  RANK_CUDA(cudaDeviceSynchronize());
  if (barrier(f)) return 1;
  const unsigned long long bad = count(f, [&] {
    return run_waits(f.dc, reinterpret_cast<int32_t*>(buf), reinterpret_cast<int64_t*>(buf + 8),
                     reinterpret_cast<uint64_t*>(buf + 16), reinterpret_cast<uint64_t*>(buf + 24),
                     f.bad, f.s);
  });
  RANK_CHECK(bad == 0, "wait/test comparisons: %llu wrong", bad);
  if (barrier(f)) return 1;
  RANK_OK(gicl_mem_free(f.comm, buf));
  return 0;
}

int check_barriers(Fixture& f) {
  uint64_t* counter = nullptr;
  RANK_OK(gicl_mem_alloc(f.comm, 8, reinterpret_cast<void**>(&counter)));
  RANK_CUDA(cudaMemset(counter, 0, 8));
  RANK_CUDA(cudaDeviceSynchronize());
  if (barrier(f)) return 1;
  unsigned long long bad =
      count(f, [&] { return run_barrier_stress(f.dc, nullptr, counter, 2000, f.bad, f.s); });
  RANK_CHECK(bad == 0, "world barrier stress: %llu violations", bad);
  if (barrier(f)) return 1;
  // A team of the even ranks (strided split of the world team).
  gicl_team_t world, even = nullptr;
  RANK_OK(gicl_comm_get_team(f.comm, GICL_TEAM_WORLD, &world));
  RANK_OK(gicl_team_split_strided(world, 0, 2, (f.n + 1) / 2, &even));
  if (even) {
    gicl_device_team_t dt;
    RANK_OK(gicl_team_get_device(even, &dt));
    RANK_CHECK(dt.my_index == f.rank / 2 && dt.size == (f.n + 1) / 2, "device team view");
    RANK_CUDA(cudaMemset(counter, 0, 8));
    RANK_CUDA(cudaDeviceSynchronize());
    bad = count(f, [&] { return run_barrier_stress(f.dc, &dt, counter, 500, f.bad, f.s); });
    RANK_CHECK(bad == 0, "team barrier stress: %llu violations", bad);
    RANK_OK(gicl_team_destroy(even));
  }
  if (barrier(f)) return 1;
  RANK_OK(gicl_mem_free(f.comm, counter));
  return 0;
}

int check_stream_ops_and_qps(Fixture& f, uint32_t seed) {
  gicl_qp_t qps[3];
  RANK_OK(gicl_qp_create(f.comm, 3, qps));
  for (auto q : qps) RANK_CHECK(q.id == GICL_QP_DEFAULT_ID, "qp id %d over NVLink", q.id);
  const size_t bytes = 1 << 20;
  char* sym = nullptr;
  char* src = nullptr;
  uint64_t* sig = nullptr;
  RANK_OK(gicl_mem_alloc(f.comm, bytes, reinterpret_cast<void**>(&sym)));
  RANK_OK(gicl_mem_alloc(f.comm, 8, reinterpret_cast<void**>(&sig)));
  RANK_CUDA(cudaMalloc(&src, bytes));
  RANK_CUDA(cudaMemsetAsync(sig, 0, 8, f.s));
  RANK_CUDA(fill_pattern(src, bytes, seed, f.rank, f.s));
  RANK_CUDA(cudaStreamSynchronize(f.s));
  if (barrier(f)) return 1;
  const int next = (f.rank + 1) % f.n, prev = (f.rank + f.n - 1) % f.n;
  RANK_OK(gicl_put_on_stream(f.comm, sym, src, bytes, next, f.s));
  RANK_OK(gicl_quiet_on_stream(f.comm, f.s));
  RANK_OK(gicl_signal_on_stream(f.comm, sig, 1, GICL_SIGNAL_ADD, next, f.s));
  RANK_OK(gicl_wait_signal_on_stream(f.comm, sig, GICL_CMP_GE, 1, f.s));
  const unsigned long long bad =
      count(f, [&] { return count_bad(sym, bytes, seed, prev, f.bad, f.s); });
  RANK_CHECK(bad == 0, "stream put + signal: %llu bytes wrong", bad);
  // After a kernel that lets the next one launch at once (PDL trigger first) and puts its data
  // 200 us later, a signal or a barrier on the stream must still follow the data: with PDL (the
  // default on sm_90) they start early and their prologue waits for that kernel. Rounds 0 and 1
  // reach the next rank, which can only catch an early signal when it runs on its own GPU (ranks
  // sharing one GPU take turns, by which time the data is there); round 2 signals this rank and
  // watches from a second stream of the same process, which catches it on any GPU.
  cudaStream_t watch;
  RANK_CUDA(cudaStreamCreateWithFlags(&watch, cudaStreamNonBlocking));
  for (int round = 0; round < 3; ++round) {
    const uint32_t late_seed = seed + 1 + static_cast<uint32_t>(round);
    RANK_CUDA(cudaMemsetAsync(sym, 0, bytes, f.s));
    RANK_CUDA(fill_pattern(src, bytes, late_seed, f.rank, f.s));
    RANK_CUDA(cudaStreamSynchronize(f.s));
    if (barrier(f)) return 1;
    if (round == 2) {
      RANK_CUDA(cudaMemsetAsync(f.bad, 0, sizeof(*f.bad), watch));
      RANK_CUDA(run_late_put(f.dc, sym, src, bytes, f.rank, 200000, f.s));
      RANK_OK(gicl_signal_on_stream(f.comm, sig, 1, GICL_SIGNAL_ADD, f.rank, f.s));
      RANK_OK(gicl_wait_signal_on_stream(f.comm, sig, GICL_CMP_GE, 3, watch));
      RANK_CUDA(count_bad(sym, bytes, late_seed, f.rank, f.bad, watch));
      RANK_CUDA(cudaStreamSynchronize(watch));
      RANK_CUDA(cudaStreamSynchronize(f.s));
      unsigned long long late = 0;
      RANK_CUDA(cudaMemcpy(&late, f.bad, sizeof(late), cudaMemcpyDeviceToHost));
      RANK_CHECK(late == 0,
                 "late put to self, then signal, watched from a second stream: %llu "
                 "bytes wrong",
                 late);
      continue;
    }
    RANK_CUDA(run_late_put(f.dc, sym, src, bytes, next, 200000, f.s));
    if (round == 0) {
      RANK_OK(gicl_signal_on_stream(f.comm, sig, 1, GICL_SIGNAL_ADD, next, f.s));
      RANK_OK(gicl_wait_signal_on_stream(f.comm, sig, GICL_CMP_GE, 2, f.s));
    } else {
      RANK_OK(gicl_barrier_on_stream(f.comm, f.s));
    }
    const unsigned long long late =
        count(f, [&] { return count_bad(sym, bytes, late_seed, prev, f.bad, f.s); });
    RANK_CHECK(late == 0, "late put, then %s on the stream: %llu bytes wrong",
               round == 0 ? "signal" : "barrier", late);
  }
  RANK_CUDA(cudaStreamDestroy(watch));
  // Bad arguments are refused before anything is enqueued.
  RANK_CHECK(gicl_put_on_stream(f.comm, src, src, 16, next, f.s) == GICL_INVALID_ARGUMENT,
             "non-symmetric dst");
  RANK_CHECK(gicl_put_on_stream(f.comm, sym, src, 16, f.n, f.s) == GICL_INVALID_ARGUMENT,
             "peer out of range");
  RANK_CHECK(gicl_put_on_stream(f.comm, sym, src, 1ull << 40, next, f.s) == GICL_INVALID_ARGUMENT,
             "oversize");
  RANK_CHECK(gicl_signal_on_stream(f.comm, sig, 1, 7, next, f.s) == GICL_INVALID_ARGUMENT,
             "bad op");
  RANK_CHECK(gicl_wait_signal_on_stream(f.comm, sig, 42, 1, f.s) == GICL_INVALID_ARGUMENT,
             "bad cmp");
  if (barrier(f)) return 1;
  RANK_CUDA(cudaFree(src));
  RANK_OK(gicl_mem_free(f.comm, sig));
  RANK_OK(gicl_mem_free(f.comm, sym));
  return 0;
}

class DeviceApi : public ::testing::TestWithParam<int> {};

TEST_P(DeviceApi, AllOperations) {
  REQUIRE_GPUS(1);
  const int n = GetParam();
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  const uint32_t seed = std::random_device{}();
  auto results = fork_ranks(
      n,
      [&](int r) {
        Fixture f;
        if (setup(id, n, r, &f)) return 1;
        if (check_rma(f, seed)) return 2;
        if (check_scalar(f, seed)) return 3;
        // Every round is a round trip between neighbours; when they share the only GPU each
        // one waits for a context switch (milliseconds), so the stress is shortened there.
        if (check_ordering(f, seed, cuda_device_count() > 1 ? 100000 : 2000)) return 4;
        if (check_atomics(f)) return 5;
        if (check_waits(f)) return 6;
        if (check_barriers(f)) return 7;
        if (check_stream_ops_and_qps(f, seed)) return 8;
        gicl_result_t async;
        RANK_OK(gicl_comm_get_async_error(f.comm, &async, nullptr));
        RANK_CHECK(async == GICL_SUCCESS, "communicator in error: %d", async);
        RANK_OK(gicl_comm_destroy(f.comm));
        return 0;
      },
      120000);
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(results[r].code, 0) << "rank " << r << " (seed " << seed << ")";
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceApi, ::testing::Values(2, 4));

TEST(DeviceApiFailures, UnsatisfiableWaitEndsWithATimeoutReport) {
  REQUIRE_GPUS(1);
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(2, [&](int r) {
    setenv("GICL_WAIT_TIMEOUT", "300", 1);
    Fixture f;
    if (setup(id, 2, r, &f)) return 1;
    uint64_t* sig = nullptr;
    int* result = nullptr;
    RANK_OK(gicl_mem_alloc(f.comm, 4096, reinterpret_cast<void**>(&sig)));
    RANK_CUDA(cudaMallocManaged(&result, sizeof(int)));
    RANK_CUDA(cudaMemset(sig, 0, 4096));
    *result = -1;
    RANK_CUDA(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    RANK_CUDA(run_stuck_wait(f.dc, sig + 3, result, f.s));
    RANK_CUDA(cudaStreamSynchronize(f.s));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    RANK_CHECK(*result == 1, "the wait did not report failure (%d)", *result);
    RANK_CHECK(s > 0.25 && s < 5.0, "the wait gave up after %.2f s with GICL_WAIT_TIMEOUT=300", s);
    gicl_result_t async;
    const char* msg = nullptr;
    RANK_OK(gicl_comm_get_async_error(f.comm, &async, &msg));
    RANK_CHECK(async == GICL_TIMEOUT, "async error %d", async);
    const std::string m = msg;
    // sig + 3 lies 0x18 bytes into its allocation (which need not start at offset 0).
    for (const char* word :
         {"timed out", "signal_wait_until", "== 12345", "last seen 0", "heap offset 0x", "18)"}) {
      RANK_CHECK(m.find(word) != std::string::npos, "report '%s' lacks '%s'", msg, word);
    }
    RANK_CHECK(m.find("rank " + std::to_string(r)) != std::string::npos, "report names no rank: %s",
               msg);
    RANK_OK(gicl_comm_abort(f.comm));
    return 0;
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

TEST(DeviceApiFailures, DeviceChecksReportBadArguments) {
  REQUIRE_GPUS(1);
  for (int kind = 0; kind < 3; ++kind) {
    gicl_unique_id_t id;
    ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
    auto results = fork_ranks(1, [&](int r) {
      setenv("GICL_DEVICE_CHECKS", "1", 1);
      Fixture f;
      if (setup(id, 1, r, &f)) return 1;
      RANK_CHECK(f.dc.flags & GICL_DEVICE_FLAG_CHECKS, "checks flag not set");
      char* sym = nullptr;
      char* plain = nullptr;
      RANK_OK(gicl_mem_alloc(f.comm, 4096, reinterpret_cast<void**>(&sym)));
      RANK_CUDA(cudaMalloc(&plain, 4096));
      RANK_CUDA(run_bad_op(f.dc, sym, plain, kind, f.s));
      RANK_CUDA(cudaStreamSynchronize(f.s));  // reported, not performed: no fault
      gicl_result_t async;
      const char* msg = nullptr;
      RANK_OK(gicl_comm_get_async_error(f.comm, &async, &msg));
      RANK_CHECK(async == GICL_INVALID_ARGUMENT, "kind %d: async error %d (%s)", kind, async, msg);
      RANK_CHECK(std::string(msg).find("bad device operation argument") != std::string::npos &&
                     std::string(msg).find(", put,") != std::string::npos,
                 "kind %d: report '%s'", kind, msg);
      RANK_OK(gicl_comm_abort(f.comm));
      return 0;
    });
    EXPECT_EQ(results[0].code, 0) << "kind " << kind;
  }
}

TEST(DeviceApiFailures, AbortStopsAWaitingKernel) {
  REQUIRE_GPUS(1);
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(1, [&](int r) {
    setenv("GICL_WAIT_TIMEOUT", "0", 1);  // forever: only the abort can end the wait
    Fixture f;
    if (setup(id, 1, r, &f)) return 1;
    uint64_t* sig = nullptr;
    int* result = nullptr;
    RANK_OK(gicl_mem_alloc(f.comm, 64, reinterpret_cast<void**>(&sig)));
    RANK_CUDA(cudaMallocManaged(&result, sizeof(int)));
    RANK_CUDA(cudaMemset(sig, 0, 64));
    *result = -1;
    RANK_CUDA(cudaDeviceSynchronize());
    RANK_CUDA(run_stuck_wait(f.dc, sig, result, f.s));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto t0 = std::chrono::steady_clock::now();
    RANK_OK(gicl_comm_abort(f.comm));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    RANK_CUDA(cudaStreamSynchronize(f.s));
    RANK_CHECK(s < 1.0, "abort took %.2f s", s);
    RANK_CHECK(*result == 1, "the waiting kernel did not stop with a failure (%d)", *result);
    return 0;
  });
  EXPECT_EQ(results[0].code, 0);
}

TEST(DeviceApiHost, CollectiveLaunchRefusesGridsThatCannotBeCoResident) {
  REQUIRE_GPUS(1);
  auto results = fork_ranks(1, [](int) {
    int* result = nullptr;
    RANK_CUDA(cudaMallocManaged(&result, sizeof(int)));
    uint64_t* sig = nullptr;
    gicl_device_comm_t dc{};
    void* args[] = {&dc, &sig, &result};
    const void* fn = stuck_kernel_address();
    RANK_CHECK(gicl::dev::launch_collective(fn, dim3(1u << 20), dim3(1024), args, 0, nullptr) ==
                   GICL_INVALID_ARGUMENT,
               "a grid of 2^20 blocks of 1024 threads was accepted");
    RANK_CHECK(std::string(gicl_get_last_error()).find("co-resident") != std::string::npos, "%s",
               gicl_get_last_error());
    return 0;
  });
  EXPECT_EQ(results[0].code, 0);
}

}  // namespace
}  // namespace gicl::test
