// SPDX-License-Identifier: Apache-2.0
// Ranks sharing one GPU under MPS run their kernels at once, so every launch's grid must fit
// beside the other sharers' (collectives/host/residency.cc): without the limit, blocks spin at
// their per-block meetings for partners that have no multiprocessor to start on. The widest
// grids the library launches, on 2 and 4 ranks of GPU 0: alltoall and allgather of 64 MiB
// (64 + 16 blocks unlimited), the LL one-shot of 512 KiB (128 blocks), LL128 (64), a group of
// LL, FIFO and rendezvous send/recv, and back-to-back calls (no early launch of the next grid:
// core/comm.cc, pdl_choice). Without MPS the ranks are time-sliced (each context has the
// whole GPU in turn) and the test skips; ranks of one process share a context and run at once
// with or without MPS (RanksOfOneProcessOnOneGpuRunTheWidestGrids). Run with GICL_RESIDENT_BLOCKS=0
// (no limit) under MPS it fails at four ranks' 64 MiB alltoall (one H200): the check that it can.
// The same calls run again with every rank held to a quarter of the GPU by
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gicl/gicl.h"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

#define REQUIRE_MPS_ON_GPU0()                                                                     \
  do {                                                                                            \
    if (!mps_on_gpu0())                                                                           \
      GTEST_SKIP() << "needs MPS on GPU 0 (nvidia-cuda-mps-control -d): time-sliced ranks never " \
                      "run their grids at once";                                                  \
  } while (0)

/// One group of a send of `count` ints from `send` to `to` and a receive into `recv` from `from`:
/// the first error of the four calls.
gicl_result_t send_recv(const int* send, int* recv, size_t count, int to, int from,
                        gicl_comm_t comm, cudaStream_t s) {
  gicl_result_t e = gicl_group_start();
  const gicl_result_t se = gicl_send(send, count, gicl_int32, to, comm, s);
  const gicl_result_t re = gicl_recv(recv, count, gicl_int32, from, comm, s);
  const gicl_result_t ge = gicl_group_end();
  if (e == GICL_SUCCESS) e = se != GICL_SUCCESS ? se : re;
  return e != GICL_SUCCESS ? e : ge;
}

/// Element i of rank `rank`'s send buffer in every test here.
int value(int rank, size_t i) {
  return rank * 1000003 + static_cast<int>(i % 999983);
}

__global__ void empty_kernel() {}

/// Gives a fresh stream its first launch and waits for it. Threads of one process whose fresh
/// streams make their first launches at the same instant can end up with one rank's kernels
/// queued behind another rank's waiting kernel, until GICL_WAIT_TIMEOUT (reproduced without gicl:
/// docs/design/sharing-a-gpu.md); a stream that has run a kernel did not.
int prime_stream(cudaStream_t s) {
  empty_kernel<<<1, 1, 0, s>>>();
  RANK_CUDA(cudaGetLastError());
  RANK_CUDA(cudaStreamSynchronize(s));
  return 0;
}

/// Fails (naming `what`) when the communicator holds an asynchronous error, a device-side timeout
/// among them.
int no_async_error(gicl_comm_t comm, const char* what) {
  gicl_result_t async = GICL_SUCCESS;
  const char* report = nullptr;
  RANK_OK(gicl_comm_get_async_error(comm, &async, &report));
  RANK_CHECK(async == GICL_SUCCESS, "%s: communicator in error (%d): %s", what, async,
             report != nullptr ? report : "");
  return 0;
}

/// One call, then every element of `out` (int32) against want(i); the call must not take
/// seconds (a stalled grid shows as a device-side timeout, or as calls of about a second).
/// Ordered on `s` alone: ranks of one process share the device, and a device-wide wait (or the
/// legacy stream's) would wait for a partner's kernel that waits for this rank's next call.
int run_and_check(gicl_comm_t comm, const char* what, const std::function<gicl_result_t()>& enqueue,
                  const int* out, size_t n, const std::function<int(size_t)>& want,
                  cudaStream_t s) {
  RANK_CUDA(cudaMemsetAsync(const_cast<int*>(out), 0xff, n * sizeof(int), s));
  RANK_CUDA(cudaStreamSynchronize(s));
  const auto t0 = std::chrono::steady_clock::now();
  RANK_OK(enqueue());
  RANK_CUDA(cudaStreamSynchronize(s));
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RANK_CHECK(sec < 0.5, "%s took %.2f s: grids not resident together", what, sec);
  if (no_async_error(comm, what)) return 1;
  std::vector<int> got(n);
  RANK_CUDA(cudaMemcpyAsync(got.data(), out, n * sizeof(int), cudaMemcpyDeviceToHost, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  for (size_t i = 0; i < n; ++i)
    RANK_CHECK(got[i] == want(i), "%s: element %zu is %d, not %d", what, i, got[i], want(i));
  return 0;
}

/// Rank r of n on GPU 0 with a primed non-blocking stream: thread ranks of one process keep off
/// the legacy stream, which waits for every blocking stream of the process.
int start_on_gpu0(gicl_unique_id_t id, int n, int r, gicl_comm_t* comm, cudaStream_t* s) {
  RANK_CUDA(cudaSetDevice(0));
  RANK_OK(gicl_comm_init_rank(comm, n, id, r));
  RANK_CUDA(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  return prime_stream(*s);
}

/// The widest calls on rank r of n; then, when `id_ll` is given, the LL one-shot on a second
/// communicator (it sets GICL_PROTO: processes of their own only).
int wide_calls(gicl_unique_id_t id, const gicl_unique_id_t* id_ll, int n, int r) {
  if (!std::getenv("GICL_WAIT_TIMEOUT")) setenv("GICL_WAIT_TIMEOUT", "2000", 1);
  gicl_comm_t comm;
  cudaStream_t s;
  if (start_on_gpu0(id, n, r, &comm, &s)) return 1;
  const size_t bytes = size_t{64} << 20, total = bytes / sizeof(int), block = total / n;
  int *send = nullptr, *recv = nullptr;
  RANK_OK(gicl_mem_alloc(comm, bytes, reinterpret_cast<void**>(&send)));
  RANK_OK(gicl_mem_alloc(comm, bytes, reinterpret_cast<void**>(&recv)));
  std::vector<int> in(total);
  auto summed = [&](size_t i) {  // element i of an allreduce of every rank's values
    int sum = 0;
    for (int j = 0; j < n; ++j) sum += value(j, i);
    return sum;
  };
  for (size_t i = 0; i < total; ++i) in[i] = value(r, i);
  RANK_CUDA(cudaMemcpyAsync(send, in.data(), bytes, cudaMemcpyHostToDevice, s));
  // Every kernel's first launch loads its module: one small call of each first.
  RANK_OK(gicl_alltoall(send, recv, n, gicl_int32, comm, s));
  RANK_OK(gicl_allgather(send, recv, n, gicl_int32, comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  // Their failures are their own, not the first wide call's (which would report them next).
  if (no_async_error(comm, "the small first calls")) return 1;
  for (int rep = 0; rep < 2; ++rep) {
    // Rank j's block r of send lands as block j of recv.
    if (int rc = run_and_check(
            comm, "alltoall 64 MiB",
            [&] { return gicl_alltoall(send, recv, block, gicl_int32, comm, s); }, recv, total,
            [&](size_t i) { return value(static_cast<int>(i / block), r * block + i % block); }, s))
      return rc;
    if (int rc = run_and_check(
            comm, "allgather 64 MiB",
            [&] { return gicl_allgather(send, recv, block, gicl_int32, comm, s); }, recv, total,
            [&](size_t i) { return value(static_cast<int>(i / block), i % block); }, s))
      return rc;
    // LL128 of 1 MiB (64 blocks), summed.
    const size_t m = (size_t{1} << 20) / sizeof(int);
    if (int rc = run_and_check(
            comm, "allreduce 1 MiB",
            [&] { return gicl_allreduce(send, recv, m, gicl_int32, gicl_sum, comm, s); }, recv, m,
            summed, s))
      return rc;
    // Send/recv to every peer: 64 KiB (LL), 128 KiB (FIFO) and 1 MiB (rendezvous) each way.
    const size_t sizes[] = {size_t{16} << 10, size_t{32} << 10, size_t{256} << 10};
    const size_t per_peer = sizes[0] + sizes[1] + sizes[2];
    if (int rc = run_and_check(
            comm, "send/recv group",
            [&] {
              gicl_result_t e = gicl_group_start();
              for (int p = 0; p < n; ++p) {
                if (p == r) continue;
                size_t at = 0;
                for (size_t k : sizes) {
                  const gicl_result_t se =
                      gicl_send(send + p * per_peer + at, k, gicl_int32, p, comm, s);
                  const gicl_result_t re =
                      gicl_recv(recv + p * per_peer + at, k, gicl_int32, p, comm, s);
                  if (e == GICL_SUCCESS) e = se != GICL_SUCCESS ? se : re;
                  at += k;
                }
              }
              const gicl_result_t ge = gicl_group_end();
              return e != GICL_SUCCESS ? e : ge;
            },
            recv, n * per_peer,
            [&](size_t i) {
              const int p = static_cast<int>(i / per_peer);
              return p == r ? -1 : value(p, r * per_peer + i % per_peer);
            },
            s))
      return rc;
  }
  // Back to back, no sync between: 20 reduce-scatters of 4 MiB on cudaMalloc buffers (staged,
  // pushed), each in place on the last one's result. With programmatic dependent launch each
  // call's grid would start early and hold multiprocessors the partners' current grids need
  // (4 ranks stalled so until GICL_WAIT_TIMEOUT).
  {
    const size_t rs_total = (size_t{4} << 20) / sizeof(int), rs_block = rs_total / n;
    int* buf = nullptr;
    RANK_CUDA(cudaMalloc(&buf, rs_total * sizeof(int)));
    std::vector<int> ones(rs_total, 1);
    RANK_CUDA(cudaMemcpyAsync(buf, ones.data(), rs_total * sizeof(int), cudaMemcpyHostToDevice, s));
    // In place, rank r's block r gains the other ranks' block r (still 1) at every call:
    // 1 + calls (n - 1) after them; the other blocks keep their 1.
    const int calls = 20;
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < calls; ++k)
      RANK_OK(
          gicl_reduce_scatter(buf, buf + r * rs_block, rs_block, gicl_int32, gicl_sum, comm, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    RANK_CHECK(sec < 0.5, "20 back-to-back reduce_scatters took %.2f s", sec);
    std::vector<int> got(rs_total);
    RANK_CUDA(cudaMemcpyAsync(got.data(), buf, rs_total * sizeof(int), cudaMemcpyDeviceToHost, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    for (size_t i = 0; i < rs_total; ++i) {
      const int want = i / rs_block == static_cast<size_t>(r) ? 1 + calls * (n - 1) : 1;
      RANK_CHECK(got[i] == want, "back-to-back reduce_scatter: element %zu is %d, not %d", i,
                 got[i], want);
    }
    RANK_CUDA(cudaFree(buf));
  }
  RANK_OK(gicl_mem_free(comm, send));
  RANK_OK(gicl_mem_free(comm, recv));
  RANK_OK(gicl_comm_destroy(comm));
  if (id_ll == nullptr) return 0;
  // The LL one-shot of 512 KiB: 128 blocks of a thread per 8 bytes (GICL_PROTO is read at a
  // communicator's first collective).
  setenv("GICL_PROTO", "LL", 1);
  RANK_OK(gicl_comm_init_rank(&comm, n, *id_ll, r));
  const size_t m = (size_t{512} << 10) / sizeof(int);
  int *a = nullptr, *b = nullptr;
  RANK_CUDA(cudaMalloc(&a, m * sizeof(int)));
  RANK_CUDA(cudaMalloc(&b, m * sizeof(int)));
  RANK_CUDA(cudaMemcpyAsync(a, in.data(), m * sizeof(int), cudaMemcpyHostToDevice, s));
  RANK_OK(gicl_allreduce(a, b, 1, gicl_int32, gicl_sum, comm, s));
  for (int rep = 0; rep < 2; ++rep)
    if (int rc = run_and_check(
            comm, "LL allreduce 512 KiB",
            [&] { return gicl_allreduce(a, b, m, gicl_int32, gicl_sum, comm, s); }, b, m, summed,
            s))
      return rc;
  RANK_CUDA(cudaFree(a));
  RANK_CUDA(cudaFree(b));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// wide_calls on 2 and then 4 ranks of GPU 0, each rank with `percent` as its
/// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (nullptr: unset).
void wide_calls_on_2_and_4_ranks(const char* percent) {
  for (int n : {2, 4}) {
    gicl_unique_id_t id, id_ll;
    ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
    ASSERT_EQ(gicl_get_unique_id(&id_ll), GICL_SUCCESS);
    auto results = fork_ranks(
        n,
        [&](int r) {
          if (percent != nullptr) setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", percent, 1);
          return wide_calls(id, &id_ll, n, r);
        },
        120000);
    for (int r = 0; r < n; ++r) EXPECT_EQ(results[r].code, 0) << n << " ranks, rank " << r;
  }
}

TEST(CollectiveResidency, RanksSharingAGpuUnderMpsRunTheWidestGrids) {
  REQUIRE_GPUS(1);
  REQUIRE_MPS_ON_GPU0();
  wide_calls_on_2_and_4_ranks(nullptr);
}

/// Ranks of one process on one GPU (threads, each its own communicator, as gicl_comm_init_all
/// with a device twice or the harness's -g beyond the GPU count make them) share one context,
/// whose streams run at once with or without MPS: the same limit must hold their grids.
/// Run with GICL_RESIDENT_BLOCKS=0 (no limit), 4 ranks stall as under MPS. The streams also
/// need a hardware queue each (CUDA_DEVICE_MAX_CONNECTIONS): fewer, and init refuses. Init also
/// refuses them unless GICL_SHARED_GPU_THREADS=1 (CUDA does not promise their kernels all start:
/// docs/collectives.md), which the test sets after checking the refusal.
TEST(CollectiveResidency, RanksOfOneProcessOnOneGpuRunTheWidestGrids) {
  REQUIRE_GPUS(1);
  auto results = fork_ranks(1, [&](int) {
    // Before the threads (setenv is not thread-safe) and before CUDA starts in this process:
    // each rank's stream needs a hardware queue of its own (an MPS client gets 2 by default).
    setenv("GICL_WAIT_TIMEOUT", "2000", 1);
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8", 0);  // unless the caller chose a count
    auto run = [](int n, const std::function<int(gicl_unique_id_t, int)>& rank) {
      gicl_unique_id_t id;
      if (gicl_get_unique_id(&id) != GICL_SUCCESS) return std::vector<int>(n, -2);
      return thread_ranks(n, [&](int r) { return rank(id, r); });
    };
    // n ranks' inits on GPU 0, each rank's result and last error in msgs (expected to fail).
    auto inits = [&](int n, std::vector<std::string>* msgs) {
      msgs->assign(n, "");
      return run(n, [&, n](gicl_unique_id_t id, int r) {
        if (cudaSetDevice(0) != cudaSuccess) return -3;
        gicl_comm_t comm = nullptr;
        const gicl_result_t e = gicl_comm_init_rank(&comm, n, id, r);
        (*msgs)[r] = gicl_get_last_error();
        return static_cast<int>(e);
      });
    };
    // Refused unless allowed (GICL_SHARED_GPU_THREADS), every rank naming the variable.
    unsetenv("GICL_SHARED_GPU_THREADS");
    std::vector<std::string> refused;
    const std::vector<int> rrc = inits(2, &refused);
    for (int r = 0; r < 2; ++r)
      RANK_CHECK(rrc[r] == GICL_INVALID_USAGE &&
                     refused[r].find("GICL_SHARED_GPU_THREADS=1") != std::string::npos,
                 "2 ranks of one process on GPU 0, not allowed: rank %d gave %d '%s'", r, rrc[r],
                 refused[r].c_str());
    setenv("GICL_SHARED_GPU_THREADS", "1", 1);
    for (int n : {2, 4}) {
      const std::vector<int> rc =
          run(n, [&](gicl_unique_id_t id, int r) { return wide_calls(id, nullptr, n, r); });
      for (int r = 0; r < n; ++r)
        RANK_CHECK(rc[r] == 0, "%d ranks in one process: rank %d failed", n, r);
    }
    // More ranks than queues: every one refused at init, naming the variable.
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "2", 1);
    std::vector<std::string> msgs;
    const std::vector<int> rc = inits(3, &msgs);
    for (int r = 0; r < 3; ++r)
      RANK_CHECK(rc[r] == GICL_INVALID_USAGE &&
                     msgs[r].find("CUDA_DEVICE_MAX_CONNECTIONS=3") != std::string::npos,
                 "3 ranks of one process on 2 queues: rank %d gave %d '%s'", r, rc[r],
                 msgs[r].c_str());
    return 0;
  });
  EXPECT_EQ(results[0].code, 0);
}

/// Sixteen ranks on one GPU: 132 / 16 = 8 blocks each on an H200, fewer than a point-to-point
/// launch's 16 FIFO channels. Collectives run within the 8 (two-shot and direct SIMPLE, LL);
/// send/recv above the LL size is refused with GICL_INVALID_USAGE and nothing enqueued, LL-sized
/// send/recv runs.
int many_ranks(gicl_unique_id_t id, int n, int r) {
  if (!std::getenv("GICL_WAIT_TIMEOUT")) setenv("GICL_WAIT_TIMEOUT", "4000", 1);
  RANK_CUDA(cudaSetDevice(0));
  gicl_comm_t comm;
  RANK_OK(gicl_comm_init_rank(&comm, n, id, r));
  cudaStream_t s;
  RANK_CUDA(cudaStreamCreate(&s));
  const size_t total = (size_t{16} << 20) / sizeof(int), block = total / n;
  int *send = nullptr, *recv = nullptr;
  RANK_OK(gicl_mem_alloc(comm, total * sizeof(int), reinterpret_cast<void**>(&send)));
  RANK_OK(gicl_mem_alloc(comm, total * sizeof(int), reinterpret_cast<void**>(&recv)));
  std::vector<int> in(total);
  for (size_t i = 0; i < total; ++i) in[i] = value(r, i);
  RANK_CUDA(cudaMemcpy(send, in.data(), total * sizeof(int), cudaMemcpyHostToDevice));
  for (size_t m : {size_t{1024}, total})  // LL, then two-shot SIMPLE
    if (int rc = run_and_check(
            comm, "allreduce",
            [&] { return gicl_allreduce(send, recv, m, gicl_int32, gicl_sum, comm, s); }, recv, m,
            [&](size_t i) {
              int sum = 0;
              for (int j = 0; j < n; ++j) sum += value(j, i);
              return sum;
            },
            s))
      return rc;
  if (int rc = run_and_check(
          comm, "alltoall 16 MiB",
          [&] { return gicl_alltoall(send, recv, block, gicl_int32, comm, s); }, recv, total,
          [&](size_t i) { return value(static_cast<int>(i / block), r * block + i % block); }, s))
    return rc;
  // Send/recv with the neighbour: 16 KiB (LL) runs; 1 MiB (FIFO channels) is refused.
  const int peer = r ^ 1;
  auto exchange = [&](size_t count) { return send_recv(send, recv, count, peer, peer, comm, s); };
  if (int rc = run_and_check(
          comm, "send/recv 16 KiB", [&] { return exchange(size_t{4} << 10); }, recv,
          size_t{4} << 10, [&](size_t i) { return value(peer, i); }, s))
    return rc;
  // Every rank with every rank, itself too, three 1 KiB sends each way: 96 LL operations, two
  // batches, more than the blocks 16 sharers leave a launch, so the LL blocks run them in turn
  // (p2p_ll_looped).
  constexpr size_t kEach = 256, kOps = 3;
  auto all_peers = [&]() {
    gicl_result_t e = gicl_group_start();
    for (int j = 0; j < n && e == GICL_SUCCESS; ++j)
      for (size_t k = 0; k < kOps && e == GICL_SUCCESS; ++k) {
        e = gicl_send(send + (j * kOps + k) * kEach, kEach, gicl_int32, j, comm, s);
        if (e == GICL_SUCCESS)
          e = gicl_recv(recv + (j * kOps + k) * kEach, kEach, gicl_int32, j, comm, s);
      }
    const gicl_result_t ge = gicl_group_end();
    return e != GICL_SUCCESS ? e : ge;
  };
  if (int rc = run_and_check(
          comm, "send/recv with every rank", all_peers, recv, n * kOps * kEach,
          [&](size_t i) {
            const size_t from = i / (kOps * kEach), k = i / kEach % kOps;
            return value(static_cast<int>(from), (r * kOps + k) * kEach + i % kEach);
          },
          s))
    return rc;
  RANK_CHECK(exchange(size_t{256} << 10) == GICL_INVALID_USAGE, "1 MiB send/recv not refused");
  const std::string msg = gicl_get_last_error();
  RANK_CHECK(msg.find("FIFO channels") != std::string::npos, "message: %s", msg.c_str());
  RANK_CHECK(cudaStreamQuery(s) == cudaSuccess, "a refused send/recv enqueued work");
  gicl_result_t async;
  RANK_OK(gicl_comm_get_async_error(comm, &async, nullptr));
  RANK_CHECK(async == GICL_SUCCESS, "communicator in error after the refusal");
  RANK_OK(gicl_mem_free(comm, send));
  RANK_OK(gicl_mem_free(comm, recv));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

TEST(CollectiveResidency, SixteenRanksOnOneGpuRunCollectivesAndRefuseFifoSends) {
  REQUIRE_GPUS(1);
  REQUIRE_MPS_ON_GPU0();
  const int n = 16;
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(
      n, [&](int r) { return many_ranks(id, n, r); }, 180000);
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

/// Rank r of n (more than the direct kernels' kMaxDirectRanks) on GPU 0: every collective runs a
/// pipe algorithm (recursive doubling for small allreduces and allgathers, the ring otherwise),
/// each result exact; then an LL-sized send/recv ring.
int pipe_ranks(gicl_unique_id_t id, int n, int r) {
  // Nothing on the legacy stream, and no cudaFree while a kernel may wait: a sibling's kernel
  // may wait for a rank whose kernel is queued behind it (docs/design/sharing-a-gpu.md).
  gicl_comm_t comm;
  cudaStream_t s;
  if (start_on_gpu0(id, n, r, &comm, &s)) return 1;
  const size_t total = size_t{1} << 18, per = 1000;  // 1 MiB of int32; a rank block of 1000
  RANK_CHECK(total >= n * per, "%d ranks: %zu-element buffers too small", n, total);
  int *send = nullptr, *recv = nullptr;
  RANK_CUDA(cudaMalloc(&send, total * sizeof(int)));
  RANK_CUDA(cudaMalloc(&recv, total * sizeof(int)));
  std::vector<int> in(total);
  for (size_t i = 0; i < total; ++i) in[i] = value(r, i);
  RANK_CUDA(cudaMemcpyAsync(send, in.data(), total * sizeof(int), cudaMemcpyHostToDevice, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  auto sum_at = [n](size_t i) {
    int sum = 0;
    for (int j = 0; j < n; ++j) sum += value(j, i);
    return sum;
  };
  // A communicator's first collective sets its collectives up (scratch exchanged with every
  // rank): outside run_and_check's time bound.
  RANK_OK(gicl_allreduce(send, recv, 2, gicl_int32, gicl_sum, comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  if (no_async_error(comm, "first allreduce")) return 1;
  for (size_t m : {size_t{2}, total})  // recursive doubling, then the ring
    if (int rc = run_and_check(
            comm, m == 2 ? "allreduce 8 B" : "allreduce 1 MiB",
            [&] { return gicl_allreduce(send, recv, m, gicl_int32, gicl_sum, comm, s); }, recv, m,
            sum_at, s))
      return rc;
  const int root = n - 2;
  const struct {
    const char* what;
    std::function<gicl_result_t()> call;
    size_t count;
    std::function<int(size_t)> want;
  } cases[] = {
      {"reduce_scatter",
       [&] { return gicl_reduce_scatter(send, recv, per, gicl_int32, gicl_sum, comm, s); }, per,
       [&](size_t i) { return sum_at(r * per + i); }},
      {"allgather", [&] { return gicl_allgather(send, recv, per, gicl_int32, comm, s); }, n * per,
       [&](size_t i) { return value(static_cast<int>(i / per), i % per); }},
      {"broadcast", [&] { return gicl_broadcast(send, recv, per, gicl_int32, root, comm, s); }, per,
       [&](size_t i) { return value(root, i); }},
      {"alltoall", [&] { return gicl_alltoall(send, recv, per, gicl_int32, comm, s); }, n * per,
       [&](size_t i) { return value(static_cast<int>(i / per), r * per + i % per); }},
  };
  for (const auto& c : cases)
    if (int rc = run_and_check(comm, c.what, c.call, recv, c.count, c.want, s)) return rc;
  // Reduce: only the root's buffer is defined.
  RANK_OK(gicl_reduce(send, recv, per, gicl_int32, gicl_sum, root, comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  if (no_async_error(comm, "reduce")) return 1;
  if (r == root) {
    std::vector<int> got(per);
    RANK_CUDA(cudaMemcpyAsync(got.data(), recv, per * sizeof(int), cudaMemcpyDeviceToHost, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    for (size_t i = 0; i < per; ++i)
      RANK_CHECK(got[i] == sum_at(i), "reduce: element %zu is %d, not %d", i, got[i], sum_at(i));
  }
  // A ring of sends: to r + 1, from r - 1.
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  auto ring = [&] { return send_recv(send, recv, per, next, prev, comm, s); };
  if (int rc = run_and_check(
          comm, "send/recv ring", ring, recv, per, [&](size_t i) { return value(prev, i); }, s))
    return rc;
  // Every rank past its last kernel before cudaFree synchronizes the device.
  RANK_OK(gicl_barrier(comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  RANK_CUDA(cudaFree(send));
  RANK_CUDA(cudaFree(recv));
  RANK_CUDA(cudaStreamDestroy(s));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// 72 ranks on one GPU (an NVLink domain of 72 GPUs has as many): 3 MPS clients of 24 thread
/// ranks each, beyond the direct kernels' 64, so every collective takes the pipe algorithms.
TEST(CollectiveResidency, SeventyTwoRanksOnOneGpuRunThePipeAlgorithms) {
  REQUIRE_GPUS(1);
  REQUIRE_MPS_ON_GPU0();
  constexpr int kProcesses = 3, kThreads = 24, n = kProcesses * kThreads;
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(
      kProcesses,
      [&](int p) {
        // Before CUDA starts and before the threads: a hardware queue per rank's stream.
        setenv("CUDA_DEVICE_MAX_CONNECTIONS", std::to_string(kThreads).c_str(), 1);
        setenv("GICL_SHARED_GPU_THREADS", "1", 1);
        setenv("GICL_WAIT_TIMEOUT", "10000", 1);
        const std::vector<int> rc =
            thread_ranks(kThreads, [&](int k) { return pipe_ranks(id, n, p * kThreads + k); });
        for (int k = 0; k < kThreads; ++k)
          if (rc[k] != 0) return 100 + k;
        return 0;
      },
      300000);
  for (int p = 0; p < kProcesses; ++p)
    EXPECT_EQ(results[p].code, 0) << "process " << p << " (100 + k: its thread k failed)";
}

// Clients with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25 see a quarter of the multiprocessors
// (32 of an H200's 132) and the limit keeps to that share, not a second quarter of it: four of
// them fill 128.
TEST(CollectiveResidency, RanksWithAnMpsThreadPercentageKeepToTheirShare) {
  REQUIRE_GPUS(1);
  REQUIRE_MPS_ON_GPU0();
  const int all = gpu0_attribute(cudaDevAttrMultiProcessorCount),
            quarter = gpu0_attribute(cudaDevAttrMultiProcessorCount, "25");
  ASSERT_GT(quarter, 0);
  // Below what an unlimited client sees (itself limited by a daemon-wide percentage, if any).
  ASSERT_LT(quarter, all) << "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25 did not limit the client";
  wide_calls_on_2_and_4_ranks("25");
}

/// Rank r of n, a thread of this process on GPU 0: a fresh communicator, the large pageable copy
/// and the small first calls of the failing runs, then a burst of small calls without a sync
/// between them; every result checked, no asynchronous error, no call of seconds.
int first_calls(gicl_unique_id_t id, int n, int r, bool prime) {
  RANK_CUDA(cudaSetDevice(0));
  gicl_comm_t comm;
  RANK_OK(gicl_comm_init_rank(&comm, n, id, r));
  cudaStream_t s;
  RANK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (prime && prime_stream(s)) return 1;
  const size_t bytes = size_t{64} << 20, total = bytes / sizeof(int);
  int *send = nullptr, *recv = nullptr, *sum = nullptr;
  RANK_OK(gicl_mem_alloc(comm, bytes, reinterpret_cast<void**>(&send)));
  RANK_OK(gicl_mem_alloc(comm, bytes, reinterpret_cast<void**>(&recv)));
  RANK_OK(gicl_mem_alloc(comm, bytes, reinterpret_cast<void**>(&sum)));
  std::vector<int> in(total);
  for (size_t i = 0; i < total; ++i) in[i] = value(r, i);
  const auto t0 = std::chrono::steady_clock::now();
  RANK_CUDA(cudaMemcpyAsync(send, in.data(), bytes, cudaMemcpyHostToDevice, s));
  RANK_OK(gicl_alltoall(send, recv, 1, gicl_int32, comm, s));
  RANK_OK(gicl_allgather(send, recv, 1, gicl_int32, comm, s));
  // The allgather's result, copied aside before the burst overwrites recv.
  std::vector<int> gathered(n);
  RANK_CUDA(cudaMemcpyAsync(gathered.data(), recv, n * sizeof(int), cudaMemcpyDeviceToHost, s));
  const size_t m = 1024;  // LL
  const int calls = 64;
  for (int k = 0; k < calls; ++k)
    RANK_OK(gicl_allreduce(send, sum, m, gicl_int32, gicl_sum, comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (no_async_error(comm, "the first calls")) return 1;
  RANK_CHECK(sec < 1.0, "rank %d of %d: the first calls took %.2f s", r, n, sec);
  for (int j = 0; j < n; ++j)
    RANK_CHECK(gathered[j] == value(j, 0), "allgather: element %d is %d, not %d", j, gathered[j],
               value(j, 0));
  std::vector<int> got(m);
  // On `s`: a device-wide or legacy-stream wait could wait for a partner's kernel.
  RANK_CUDA(cudaMemcpyAsync(got.data(), sum, m * sizeof(int), cudaMemcpyDeviceToHost, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  for (size_t i = 0; i < m; ++i) {
    int want = 0;
    for (int j = 0; j < n; ++j) want += value(j, i);
    RANK_CHECK(got[i] == want, "allreduce: element %zu is %d, not %d", i, got[i], want);
  }
  RANK_OK(gicl_mem_free(comm, send));
  RANK_OK(gicl_mem_free(comm, recv));
  RANK_OK(gicl_mem_free(comm, sum));
  RANK_CUDA(cudaStreamDestroy(s));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// Twelve communicators in a row in one process, 4 and 2 ranks as threads of GPU 0, each through
/// first_calls; 0 when every rank of every round passed.
int twelve_communicators(bool prime) {
  // Before the threads (setenv is not thread-safe): a hang fails in 2 s, not 30.
  setenv("GICL_WAIT_TIMEOUT", "2000", 1);
  setenv("GICL_SHARED_GPU_THREADS", "1", 1);
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8", 0);
  const int rounds = 12;
  for (int round = 0; round < rounds; ++round) {
    const int n = round % 2 == 0 ? 4 : 2;
    gicl_unique_id_t id;
    RANK_OK(gicl_get_unique_id(&id));
    const std::vector<int> rc =
        thread_ranks(n, [&](int r) { return first_calls(id, n, r, prime); });
    for (int r = 0; r < n; ++r)
      RANK_CHECK(rc[r] == 0, "round %d, %d ranks of one process: rank %d failed", round, n, r);
  }
  return 0;
}

/// Reproducer of the hang of ranks of one process on one GPU whose fresh streams make their first
/// launches at once (docs/design/sharing-a-gpu.md): one process runs 12 communicators in
/// a row, 4 and 2 ranks as threads of GPU 0, each through a 64 MiB pageable copy, an alltoall and
/// an allgather of one element and 64 LL allreduces of 4 KiB without a sync between, every
/// result checked, the streams not primed. On one H100 it failed in 3 to 7 runs of 12; every time
/// one rank's next kernel, launched by its host on time, started only when its partners' kernels
/// had given up at GICL_WAIT_TIMEOUT.
/// Disabled because it fails; run it with --gtest_also_run_disabled_tests --gtest_repeat=12.
TEST(OneProcessHang, DISABLED_TwelveCommunicatorsInARow) {
  REQUIRE_GPUS(1);
  auto results = fork_ranks(
      1, [&](int) { return twelve_communicators(false); }, 240000);
  EXPECT_EQ(results[0].code, 0);
}

/// The same with each stream primed before the ranks' first calls (the library's own set-up work
/// runs on one stream kept for the process: common/cuda.cc): 0 of 24 runs failed on one H100,
/// against 9 of 24 unprimed in the same call.
TEST(CollectiveResidency, OneProcessRanksWithPrimedStreamsRunTwelveCommunicatorsInARow) {
  REQUIRE_GPUS(1);
  auto results = fork_ranks(
      1, [&](int) { return twelve_communicators(true); }, 240000);
  EXPECT_EQ(results[0].code, 0);
}

}  // namespace
}  // namespace gicl::test
