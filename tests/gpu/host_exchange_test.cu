// SPDX-License-Identifier: Apache-2.0
// The collectives whose ranks meet on the host before enqueueing (the copy-engine path's window
// exchange, GICL_CHECK_MODE): the copy-engine step of the matrix test through the host board and
// over the bootstrap, one thread driving two ranks through groups, and an absent rank on the
// copy-engine path.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/comm.hpp"
#include "gicl/gicl.h"
#include "gpu/coll_cases.cuh"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

/// The copy-engine path beyond the matrix (GICL_ALGO=copy_engine): ranks whose calls differ all
/// fail at once with GICL_INVALID_USAGE and nothing enqueued (only that path compares calls on the
/// host: it proves the path ran); one rank without a window sends every rank to the SM kernels;
/// an allgather and a broadcast captured in one graph and replayed with new inputs. The windows
/// are exchanged through the shared-memory host board (every rank of the test is on this host),
/// and with GICL_HOST_BOARD=0 over the bootstrap.
int copy_engine_with(gicl_comm_t world, int me, int n, cudaStream_t s, bool board) {
  setenv("GICL_ALGO", "copy_engine", 1);
  setenv("GICL_HOST_BOARD", board ? "1" : "0", 1);
  gicl_comm_t comm;
  if (fresh_comm(world, me, &comm)) return 1;
  const size_t count = 100003;  // floats per rank block, past the LL rows
  float *sym = nullptr, *dev = nullptr;
  RANK_OK(gicl_mem_alloc(comm, 2 * count * n * sizeof(float), reinterpret_cast<void**>(&sym)));
  RANK_CUDA(cudaMalloc(&dev, count * n * sizeof(float)));
  float* const send = sym;
  float* const recv = sym + count * n;
  auto value = [](int it, int rank, size_t i) {
    return static_cast<float>((i * 7 + static_cast<size_t>(rank) * 131 + it * 17) % 4099);
  };
  auto fill = [&](int it, size_t elems) -> int {
    std::vector<float> h(elems);
    for (size_t i = 0; i < elems; ++i) h[i] = value(it, me, i);
    RANK_CUDA(cudaMemcpy(send, h.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
    return 0;
  };
  // Different calls: rank 0 a larger alltoall than the others.
  if (n > 1) {
    const gicl_result_t r =
        gicl_alltoall(send, recv, me == 0 ? count : count / 2, gicl_float32, comm, s);
    RANK_CHECK(r == GICL_INVALID_USAGE && std::strstr(gicl_get_last_error(), "copy_engine") &&
                   std::strstr(gicl_get_last_error(), "rank"),
               "mismatched copy_engine alltoall: %d '%s'", r, gicl_get_last_error());
    RANK_CHECK(cudaStreamQuery(s) == cudaSuccess, "a refused copy_engine call enqueued work");
  }
  // Rank 0 receives into symmetric memory, the others into cudaMalloc: the SM kernels run it.
  if (fill(0, count * n)) return 1;
  float* mixed_recv = me == 0 ? recv : dev;
  RANK_CUDA(cudaMemset(mixed_recv, 0, count * n * sizeof(float)));
  RANK_OK(gicl_alltoall(send, mixed_recv, count, gicl_float32, comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  std::vector<float> got(count * n);
  RANK_CUDA(cudaMemcpy(got.data(), mixed_recv, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      RANK_CHECK(got[r * count + i] == value(0, r, me * count + i),
                 "alltoall with one window: block %d element %zu is %f", r, i, got[r * count + i]);
  // A graph of an allgather and a broadcast from the last rank, replayed twice.
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  RANK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  RANK_OK(gicl_allgather(send, recv, count, gicl_float32, comm, s));
  float* bsym = recv + count * (n - 1);  // broadcast into symmetric memory: the last block
  RANK_OK(gicl_broadcast(send, bsym, count, gicl_float32, n - 1, comm, s));
  RANK_CUDA(cudaStreamEndCapture(s, &graph));
  RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int it = 1; it <= 2; ++it) {
    if (fill(it, count)) return 1;
    RANK_CUDA(cudaMemset(recv, 0, count * n * sizeof(float)));
    RANK_CUDA(cudaGraphLaunch(exec, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(got.data(), recv, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    // The broadcast overwrote the last block with rank n - 1's input, which the allgather put
    // there too: every block is its rank's input.
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i)
        RANK_CHECK(got[r * count + i] == value(it, r, i),
                   "copy_engine graph replay %d: block %d element %zu is %f", it, r, i,
                   got[r * count + i]);
  }
  RANK_CUDA(cudaGraphExecDestroy(exec));
  RANK_CUDA(cudaGraphDestroy(graph));
  // The exchanges went where they should: the board needs POSIX-fd heaps (a peer's fd channel).
  const bool can_board = comm->heap && comm->heap->fd_channel() != nullptr;
  RANK_CHECK(comm->board_state == (board && can_board ? 1 : 0),
             "host exchanges: board state %d with GICL_HOST_BOARD=%d", comm->board_state, board);
  RANK_CUDA(cudaFree(dev));
  RANK_OK(gicl_mem_free(comm, sym));
  RANK_OK(gicl_comm_destroy(comm));
  unsetenv("GICL_ALGO");
  unsetenv("GICL_HOST_BOARD");
  return 0;
}

}  // namespace

int copy_engine(gicl_comm_t world, int me, int n, cudaStream_t s) {
  return copy_engine_with(world, me, n, s, true) || copy_engine_with(world, me, n, s, false);
}

namespace {

/// One thread driving two ranks (gicl_comm_init_all, as the harness's `-g 2` does), one call per
/// rank in each group: with GICL_ALGO=copy_engine on symmetric buffers, then with
/// GICL_CHECK_MODE=1 on cudaMalloc buffers. Each communicator's first call is a send/recv group
/// (its first call creates its scratch collectively: both at once). Then the two calls of an
/// allgather or alltoall group each meet the other rank's host before enqueueing, so run one
/// after the other the first would wait for the second until the bootstrap timeout; they run in
/// threads that have made no CUDA call yet (the buffer checks' driver calls need a current
/// context). Every block must arrive, and a group whose two calls differ must fail naming what
/// compared them (the copy-engine path, or the check mode: proof that path ran). On one GPU
/// both ranks share it.
TEST(CollectiveGroups, OneThreadDrivesTwoRanksThroughHostExchanges) {
  REQUIRE_GPUS(1);
  auto results = fork_ranks(1, [&](int) {
    setenv("GICL_BOOTSTRAP_TIMEOUT", "5000", 1);
    setenv("GICL_SHARED_GPU_THREADS", "1", 1);  // on one GPU both ranks are threads of it
    const int devs[2] = {0, cuda_device_count() > 1 ? 1 : 0};
    constexpr size_t count = 100003;  // floats per rank block
    struct Mode {
      const char* name;
      const char* value;
      bool symmetric;           // gicl_mem_alloc buffers, else cudaMalloc
      const char* compared_by;  // in the error of a mismatched group
    };
    for (const Mode& m : {Mode{"GICL_ALGO", "copy_engine", true, "(copy_engine)"},
                          Mode{"GICL_CHECK_MODE", "1", false, "GICL_CHECK_MODE"}}) {
      setenv(m.name, m.value, 1);
      gicl_comm_t comms[2] = {nullptr, nullptr};
      RANK_OK(gicl_comm_init_all(comms, 2, devs));
      float* buf[2] = {nullptr, nullptr};  // per rank: 2 send blocks, then 2 receive blocks
      cudaStream_t s[2] = {nullptr, nullptr};
      const size_t bytes = 4 * count * sizeof(float);
      gicl_result_t rc[2] = {GICL_INTERNAL_ERROR, GICL_INTERNAL_ERROR};
      {
        // gicl_mem_alloc is collective: both ranks at once.
        std::thread t[2];
        for (int i = 0; i < 2; ++i)
          t[i] = std::thread([&, i] {
            if (cudaSetDevice(devs[i]) != cudaSuccess ||
                cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking) != cudaSuccess)
              return;
            if (m.symmetric)
              rc[i] = gicl_mem_alloc(comms[i], bytes, reinterpret_cast<void**>(&buf[i]));
            else
              rc[i] = cudaMalloc(&buf[i], bytes) == cudaSuccess ? GICL_SUCCESS
                                                                : GICL_UNHANDLED_CUDA_ERROR;
          });
        for (auto& th : t) th.join();
      }
      RANK_CHECK(rc[0] == GICL_SUCCESS && rc[1] == GICL_SUCCESS, "%s: allocation %d %d", m.name,
                 rc[0], rc[1]);
      auto value = [](int rank, size_t i) {
        return static_cast<float>((i * 13 + static_cast<size_t>(rank) * 977) % 8191);
      };
      auto fill = [&]() -> int {
        std::vector<float> h(2 * count);
        for (int i = 0; i < 2; ++i) {
          for (size_t e = 0; e < h.size(); ++e) h[e] = value(i, e);
          RANK_CUDA(cudaSetDevice(devs[i]));
          RANK_CUDA(cudaMemcpy(buf[i], h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
          RANK_CUDA(cudaMemset(buf[i] + 2 * count, 0, 2 * count * sizeof(float)));
        }
        return 0;
      };
      // Rank i's receive blocks against want(i, b, e); after syncing both streams.
      std::vector<float> got(2 * count);
      auto check = [&](const char* what, int blocks,
                       const std::function<float(int, int, size_t)>& want) -> int {
        for (int i = 0; i < 2; ++i) {
          RANK_CUDA(cudaSetDevice(devs[i]));
          RANK_CUDA(cudaStreamSynchronize(s[i]));
          RANK_CUDA(cudaMemcpy(got.data(), buf[i] + 2 * count, got.size() * sizeof(float),
                               cudaMemcpyDeviceToHost));
          for (int b = 0; b < blocks; ++b)
            for (size_t e = 0; e < count; ++e)
              RANK_CHECK(got[b * count + e] == want(i, b, e),
                         "%s=%s: %s, rank %d, block %d element %zu is %f", m.name, m.value, what, i,
                         b, e, got[b * count + e]);
        }
        return 0;
      };
      if (fill()) return 1;
      // First calls: each rank sends its first block to the other.
      gicl_group_start();
      for (int i = 0; i < 2; ++i) {
        RANK_OK(gicl_send(buf[i], count, gicl_float32, 1 - i, comms[i], s[i]));
        RANK_OK(gicl_recv(buf[i] + 2 * count, count, gicl_float32, 1 - i, comms[i], s[i]));
      }
      RANK_OK(gicl_group_end());
      if (check("send/recv", 1, [&](int i, int, size_t e) { return value(1 - i, e); })) return 1;
      auto group = [&](bool alltoall, size_t count1) {
        gicl_group_start();
        for (int i = 0; i < 2; ++i) {
          const size_t c = i == 0 ? count : count1;
          const gicl_result_t r =
              alltoall
                  ? gicl_alltoall(buf[i], buf[i] + 2 * count, c, gicl_float32, comms[i], s[i])
                  : gicl_allgather(buf[i], buf[i] + 2 * count, c, gicl_float32, comms[i], s[i]);
          if (r != GICL_SUCCESS) return r;
        }
        return gicl_group_end();
      };
      for (bool alltoall : {false, true}) {
        if (fill()) return 1;
        RANK_OK(group(alltoall, count));
        // Block b of rank i: rank b's input, its first block (allgather) or its block i.
        if (check(alltoall ? "alltoall" : "allgather", 2,
                  [&](int i, int b, size_t e) { return value(b, (alltoall ? i * count : 0) + e); }))
          return 1;
      }
      const gicl_result_t r = group(false, count / 2);
      const std::string msg = gicl_get_last_error();
      RANK_CHECK(r == GICL_INVALID_USAGE && msg.find(m.compared_by) != std::string::npos,
                 "%s=%s: mismatched group gave %d '%s' (expected from %s)", m.name, m.value, r,
                 msg.c_str(), m.compared_by);
      for (int i = 0; i < 2; ++i) {
        RANK_CUDA(cudaSetDevice(devs[i]));
        RANK_CUDA(cudaStreamSynchronize(s[i]));
      }
      {
        std::thread t[2];
        for (int i = 0; i < 2; ++i)
          t[i] = std::thread([&, i] {
            rc[i] = GICL_UNHANDLED_CUDA_ERROR;
            if (cudaSetDevice(devs[i]) != cudaSuccess) return;
            rc[i] = m.symmetric                       ? gicl_mem_free(comms[i], buf[i])
                    : cudaFree(buf[i]) == cudaSuccess ? GICL_SUCCESS
                                                      : GICL_UNHANDLED_CUDA_ERROR;
            if (rc[i] == GICL_SUCCESS) rc[i] = gicl_comm_destroy(comms[i]);
            cudaStreamDestroy(s[i]);
          });
        for (auto& th : t) th.join();
      }
      RANK_CHECK(rc[0] == GICL_SUCCESS && rc[1] == GICL_SUCCESS, "%s: free and destroy %d %d",
                 m.name, rc[0], rc[1]);
      unsetenv(m.name);
    }
    return 0;
  });
  EXPECT_EQ(results[0].code, 0);
}

/// The copy-engine path waits for its peers on the host (the window exchange): a rank that never
/// comes makes the others' call fail within GICL_BOOTSTRAP_TIMEOUT, naming it, with nothing
/// enqueued.
TEST(CollectiveFailures, AnAbsentRankStopsTheCopyEnginePath) {
  REQUIRE_GPUS(1);
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(
      2,
      [&](int r) {
        setenv("GICL_ALGO", "copy_engine", 1);
        setenv("GICL_BOOTSTRAP_TIMEOUT", "1500", 1);
        gicl_comm_t comm;
        if (init_on_gpu(id, 2, r, &comm)) return 1;
        cudaStream_t s;
        RANK_CUDA(cudaStreamCreate(&s));
        const size_t count = 4096;
        float* buf = nullptr;
        RANK_OK(gicl_mem_alloc(comm, 4 * count * sizeof(float), reinterpret_cast<void**>(&buf)));
        // One call together first (the communicator's set-up), then rank 1 stays away.
        RANK_OK(gicl_alltoall(buf, buf + 2 * count, count, gicl_float32, comm, s));
        RANK_CUDA(cudaStreamSynchronize(s));
        if (r == 1) {
          std::this_thread::sleep_for(std::chrono::seconds(4));
          RANK_OK(gicl_comm_abort(comm));
          return 0;
        }
        const auto t0 = std::chrono::steady_clock::now();
        const gicl_result_t res = gicl_alltoall(buf, buf + 2 * count, count, gicl_float32, comm, s);
        const double sec =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const std::string m = gicl_get_last_error();
        RANK_CHECK(res != GICL_SUCCESS && m.find("rank 1") != std::string::npos,
                   "copy_engine alltoall without rank 1: %d after %.2f s, '%s'", res, sec,
                   m.c_str());
        RANK_CHECK(sec > 1.0 && sec < 3.5,
                   "copy_engine alltoall gave up after %.2f s (GICL_BOOTSTRAP_TIMEOUT=1500)", sec);
        RANK_CHECK(cudaStreamQuery(s) == cudaSuccess, "the failed call enqueued work");
        RANK_OK(gicl_comm_abort(comm));
        return 0;
      },
      60000);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

}  // namespace
}  // namespace gicl::test
