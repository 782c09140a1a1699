// SPDX-License-Identifier: Apache-2.0
// What the send/recv kernel costs the GPU beyond the communicator's scratch: the driver reserves
// local memory for the deepest stack of any kernel launched, for every thread the GPU can hold,
// and keeps it. The point-to-point kernel once took 2432 bytes of stack a thread (its parameter
// copied for the helpers that take it by reference, its per-operation arrays per thread): two
// ranks on one H100 lost 724 MiB of device memory at their first send/recv, and every launch paid
// for the copies. Now 64 bytes, and nothing measurable is lost.
#include <gtest/gtest.h>

#include <cstdio>

#include "gicl/gicl.h"
#include "gpu/coll_cases.cuh"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

/// Free device memory once every rank got here (ranks may share the GPU, whose free memory they
/// all change).
int free_memory_when_all_here(gicl_comm_t comm, cudaStream_t s, size_t* free) {
  RANK_OK(gicl_barrier(comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  size_t total = 0;
  RANK_CUDA(cudaMemGetInfo(free, &total));
  RANK_OK(gicl_barrier(comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  return 0;
}

TEST(PointToPointFootprint, ASendRecvReservesLittleLocalMemory) {
  REQUIRE_GPUS(1);
  const int n = 2;
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(n, [&](int r) {
    gicl_comm_t comm;
    if (init_on_gpu(id, n, r, &comm)) return 1;
    cudaStream_t s;
    RANK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const size_t bytes = size_t{1} << 20;
    char *sym = nullptr, *plain = nullptr;
    RANK_OK(gicl_mem_alloc(comm, 2 * bytes, reinterpret_cast<void**>(&sym)));
    RANK_CUDA(cudaMalloc(&plain, 2 * bytes));
    // The collective kernels first, so that only the send/recv kernel is new below.
    RANK_OK(gicl_allreduce(sym, sym, 1024, gicl_float32, gicl_sum, comm, s));
    RANK_OK(gicl_allreduce(sym, sym, bytes / 4, gicl_float32, gicl_sum, comm, s));
    size_t before = 0, after = 0;
    if (free_memory_when_all_here(comm, s, &before)) return 1;
    // Each path of the kernel: LL (8 bytes), rendezvous into a window, FIFO (cudaMalloc).
    if (ring_exchange(comm, r, n, sym, 8, 1, s, "LL")) return 1;
    if (ring_exchange(comm, r, n, sym, bytes, 2, s, "rendezvous")) return 1;
    if (ring_exchange(comm, r, n, plain, bytes, 3, s, "FIFO")) return 1;
    if (free_memory_when_all_here(comm, s, &after)) return 1;
    size_t stack = 0;
    RANK_CUDA(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
    const long long used_mb =
        (static_cast<long long>(before) - static_cast<long long>(after)) >> 20;
    std::printf(
        "rank %d: free memory %zu -> %zu MiB over the first send/recv (%lld MiB), stack "
        "limit %zu bytes\n",
        r, before >> 20, after >> 20, used_mb, stack);
    // Both ranks' reservations where they share the GPU; 2432 bytes of stack took ~650 MB each.
    RANK_CHECK(used_mb < 128, "the first send/recv took %lld MiB of device memory", used_mb);
    RANK_CUDA(cudaFree(plain));
    RANK_OK(gicl_mem_free(comm, sym));
    RANK_OK(gicl_comm_destroy(comm));
    return 0;
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

}  // namespace
}  // namespace gicl::test
