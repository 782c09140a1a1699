// SPDX-License-Identifier: Apache-2.0
// The symmetric heap on real GPUs: every rank stores into every peer's copy with a kernel and
// checks what it received, with both handle types, 2 and 4 processes on the GPUs there are,
// growth, split communicators, one-process init_all, and abort while peers are mapped.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "common/cuda.hpp"
#include "core/comm.hpp"
#include "gicl/gicl.h"
#include "gpu/gpu_ranks.cuh"
#include "gpu/heap_kernels.cuh"

namespace gicl {
namespace {

using test::fork_ranks;

using test::init_on_gpu;

// Allocates n ints per rank, every rank writes its block into every peer, checks its own copy.
int exchange_and_check(gicl_comm_t comm, int64_t n, uint32_t seed) {
  int rank = 0, size = 0;
  RANK_OK(gicl_comm_rank(comm, &rank));
  RANK_OK(gicl_comm_size(comm, &size));
  RANK_CHECK(size <= test::kMaxPeers, "too many ranks for the test kernel");
  int* buf = nullptr;
  RANK_OK(gicl_mem_alloc(comm, n * size * sizeof(int), reinterpret_cast<void**>(&buf)));
  RANK_CUDA(cudaMemset(buf, 0xff, n * size * sizeof(int)));  // poison: -1 is never a pattern
  RANK_CUDA(cudaDeviceSynchronize());
  RANK_OK(comm->bootstrap->barrier());
  test::PeerBuffers peers{};
  peers.nranks = size;
  for (int p = 0; p < size; ++p) {
    void* q = nullptr;
    RANK_OK(gicl_mem_peer_ptr(comm, buf, p, &q));
    RANK_CHECK(q != nullptr, "rank %d is not load/store reachable from rank %d", p, rank);
    RANK_CHECK(p != rank || q == buf, "own peer pointer differs from the local pointer");
    peers.ptr[p] = static_cast<int*>(q);
  }
  RANK_CUDA(test::write_peers(peers, rank, n, seed, nullptr));
  RANK_CUDA(cudaDeviceSynchronize());
  RANK_OK(comm->bootstrap->barrier());
  unsigned long long* d_bad = nullptr;
  unsigned long long bad = 0;
  RANK_CUDA(cudaMalloc(&d_bad, sizeof(*d_bad)));
  RANK_CUDA(test::count_mismatches(buf, size, rank, n, seed, d_bad, nullptr));
  RANK_CUDA(cudaMemcpy(&bad, d_bad, sizeof(bad), cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaFree(d_bad));
  RANK_CHECK(bad == 0, "rank %d: %llu of %lld elements wrong", rank, bad,
             static_cast<long long>(n * size));
  RANK_OK(comm->bootstrap->barrier());  // nobody frees while a peer may still read
  RANK_OK(gicl_mem_free(comm, buf));
  return 0;
}

struct HeapCase {
  int nprocs;
  const char* handle;
};

class HeapExchange : public ::testing::TestWithParam<HeapCase> {};

TEST_P(HeapExchange, EveryRankWritesEveryPeer) {
  REQUIRE_GPUS(1);
  const HeapCase c = GetParam();
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  const uint32_t seed = std::random_device{}();
  auto results = fork_ranks(c.nprocs, [&](int r) {
    setenv("GICL_HEAP_HANDLE", c.handle, 1);
    gicl_comm_t comm;
    if (init_on_gpu(id, c.nprocs, r, &comm)) return 1;
    std::string h = heap_handle_name(comm->heap->handle());
    RANK_CHECK(strcasecmp(h.c_str(), c.handle) == 0, "heap uses %s", h.c_str());
    gicl_team_t node;
    int ns = 0;
    RANK_OK(gicl_comm_get_team(comm, GICL_TEAM_NODE, &node));
    RANK_OK(gicl_team_size(node, &ns));
    RANK_CHECK(ns == c.nprocs, "node team has %d of %d ranks", ns, c.nprocs);
    for (int64_t n : {1, 1000, 1 << 20})
      if (exchange_and_check(comm, n, seed + static_cast<uint32_t>(n))) return 1;
    RANK_OK(gicl_comm_destroy(comm));
    return 0;
  });
  for (int r = 0; r < c.nprocs; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Ranks, HeapExchange,
                         ::testing::Values(HeapCase{2, "POSIX_FD"}, HeapCase{2, "LEGACY_IPC"},
                                           HeapCase{4, "POSIX_FD"}, HeapCase{4, "LEGACY_IPC"}),
                         [](const auto& info) {
                           return std::to_string(info.param.nprocs) + "procs_" + info.param.handle;
                         });

TEST(Heap, GrowsOnDemandAndRejectsMismatchesOnAllRanks) {
  REQUIRE_GPUS(1);
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(2, [&](int r) {
    setenv("GICL_HEAP_CHUNK_SIZE", "2M", 1);
    setenv("GICL_SYMMETRIC_SIZE", "64M", 1);
    gicl_comm_t comm;
    if (init_on_gpu(id, 2, r, &comm)) return 1;
    RANK_CHECK(comm->heap->grow_count() == 0, "heap grew before any allocation");
    std::vector<void*> keep;
    for (int i = 0; i < 3; ++i) {
      void* p = nullptr;
      RANK_OK(gicl_mem_alloc(comm, 3 << 20, &p));  // 3 MiB: more than one chunk each time
      keep.push_back(p);
    }
    RANK_CHECK(comm->heap->grow_count() == 3, "grew %d times", comm->heap->grow_count());
    if (exchange_and_check(comm, (5 << 20) / 8, 7)) return 1;  // lands in a 4th growth step
    // Different sizes on different ranks: an error on both, naming the ranks.
    void* p = nullptr;
    gicl_result_t s = gicl_mem_alloc(comm, r == 0 ? 4096 : 8192, &p);
    RANK_CHECK(s == GICL_INVALID_ARGUMENT && p == nullptr, "mismatch gave %d", s);
    RANK_CHECK(std::string(gicl_get_last_error()).find("differ") != std::string::npos, "%s",
               gicl_get_last_error());
    // Beyond GICL_SYMMETRIC_SIZE.
    s = gicl_mem_alloc(comm, 100 << 20, &p);
    RANK_CHECK(s == GICL_INVALID_ARGUMENT, "oversize gave %d", s);
    RANK_CHECK(std::string(gicl_get_last_error()).find("GICL_SYMMETRIC_SIZE") != std::string::npos,
               "%s", gicl_get_last_error());
    // Free, then the same size fits again without growing.
    const int grown = comm->heap->grow_count();
    RANK_OK(gicl_mem_free(comm, keep[1]));
    RANK_OK(gicl_mem_alloc(comm, 3 << 20, &p));
    RANK_CHECK(p == keep[1] && comm->heap->grow_count() == grown, "free space not reused");
    // Freeing something that is not a block fails on every rank.
    s = gicl_mem_free(comm, static_cast<char*>(keep[0]) + 512);
    RANK_CHECK(s == GICL_INVALID_ARGUMENT, "bad free gave %d", s);
    RANK_OK(gicl_comm_destroy(comm));
    return 0;
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

TEST(Heap, SplitCommunicatorsHaveTheirOwnHeaps) {
  REQUIRE_GPUS(1);
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(4, [&](int r) {
    gicl_comm_t comm, pair;
    if (init_on_gpu(id, 4, r, &comm)) return 1;
    RANK_OK(gicl_comm_split(comm, r % 2, r, &pair));
    int pr = -1;
    RANK_OK(gicl_comm_rank(pair, &pr));
    RANK_CHECK(pr == r / 2, "pair rank %d", pr);
    if (exchange_and_check(pair, 4096, 11 + r % 2)) return 1;
    if (exchange_and_check(comm, 4096, 13)) return 1;
    RANK_OK(gicl_comm_destroy(pair));
    RANK_OK(gicl_comm_destroy(comm));
    return 0;
  });
  for (int r = 0; r < 4; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

TEST(Heap, InitAllInOneProcess) {
  REQUIRE_GPUS(2);
  auto results = fork_ranks(1, [&](int) {
    for (const char* handle : {"POSIX_FD", "LEGACY_IPC"}) {
      setenv("GICL_HEAP_HANDLE", handle, 1);
      gicl_comm_t comms[2] = {nullptr, nullptr};
      RANK_OK(gicl_comm_init_all(comms, 2, nullptr));
      int rc[2] = {1, 1};
      std::thread t[2];
      for (int i = 0; i < 2; ++i)
        t[i] = std::thread([&, i] {
          cudaSetDevice(i);
          rc[i] = exchange_and_check(comms[i], 1 << 16, 21);
        });
      for (auto& th : t) th.join();
      RANK_CHECK(rc[0] == 0 && rc[1] == 0, "exchange failed with %s", handle);
      std::thread d([&] { rc[1] = gicl_comm_destroy(comms[1]); });
      rc[0] = gicl_comm_destroy(comms[0]);
      d.join();
      RANK_CHECK(rc[0] == 0 && rc[1] == 0, "destroy failed");
    }
    return 0;
  });
  EXPECT_EQ(results[0].code, 0);
}

TEST(Heap, AbortWhilePeersAreMapped) {
  REQUIRE_GPUS(1);
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(2, [&](int r) {
    setenv("GICL_BOOTSTRAP_TIMEOUT", "2000", 1);
    gicl_comm_t comm;
    if (init_on_gpu(id, 2, r, &comm)) return 1;
    size_t free0 = 0, total = 0;
    RANK_CUDA(cudaMemGetInfo(&free0, &total));
    void* p = nullptr;
    RANK_OK(gicl_mem_alloc(comm, 64 << 20, &p));
    void* peer = nullptr;
    RANK_OK(gicl_mem_peer_ptr(comm, p, 1 - r, &peer));
    RANK_CHECK(peer != nullptr, "peer not mapped");
    if (r == 1) {
      RANK_OK(gicl_comm_abort(comm));  // leaves while rank 0 still maps its memory
      return 0;
    }
    // Rank 0 still holds the peer's memory through its own import: stores must still work.
    RANK_CUDA(cudaMemset(peer, 0, 1 << 20));
    RANK_CUDA(cudaDeviceSynchronize());
    void* q = nullptr;
    gicl_result_t s = gicl_mem_alloc(comm, 1 << 20, &q);  // the peer is gone: an error, not a hang
    RANK_CHECK(s != GICL_SUCCESS, "allocation with a dead peer succeeded");
    const auto t0 = std::chrono::steady_clock::now();
    RANK_OK(gicl_comm_abort(comm));
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    RANK_CHECK(secs < 1.0, "abort took %.2f s", secs);
    // Our chunk is also held by rank 1's import until rank 1's process is gone, so wait for that
    // (bounded) before deciding that the abort leaked it.
    size_t free1 = 0;
    for (int i = 0; i < 100; ++i) {
      RANK_CUDA(cudaMemGetInfo(&free1, &total));
      if (free1 + (8 << 20) >= free0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    RANK_CHECK(free1 + (8 << 20) >= free0, "abort left %zu MiB allocated", (free0 - free1) >> 20);
    return 0;
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

}  // namespace
}  // namespace gicl
