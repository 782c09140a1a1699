// SPDX-License-Identifier: Apache-2.0
// The send/recv copy-engine proxy beside many streams. CUDA runs a process's streams on
// CUDA_DEVICE_MAX_CONNECTIONS hardware queues (8 by default, 2 for an MPS client), so once a
// process has more streams than queues some share one. A proxy copy queued behind the kernel that
// waits for it would wait until the kernel's bounded wait gives up: with one queue every such send
// timed out (p2p_test.cu, copy_engine_one_work_queue). Here each rank creates many streams, before
// the proxy's and after it, and runs a copy-engine ring exchange on every one, checking the data
// and that the proxy copied: a stream that shared the proxy's queue in that way would fail its
// exchange within GICL_WAIT_TIMEOUT, naming the stream.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gicl/gicl.h"
#include "gpu/coll_cases.cuh"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

TEST(CopyEngineQueues, ASendOnAnyOfManyStreamsCompletes) {
  REQUIRE_GPUS(1);
  if (const char* q = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"); q != nullptr && std::atoi(q) == 1)
    GTEST_SKIP() << "CUDA_DEVICE_MAX_CONNECTIONS=1: the proxy is not started on one queue (the "
                    "SMs copy), so there is no proxy to test";
  const int n = 2;
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(n, [&](int r) {
    setenv("GICL_P2P_COPY_ENGINE", "256K", 1);
    setenv("GICL_WAIT_TIMEOUT", "3000", 1);
    gicl_comm_t comm;
    if (init_on_gpu(id, n, r, &comm)) return 1;
    const size_t bytes = size_t{1} << 20;
    char* sym = nullptr;
    RANK_OK(gicl_mem_alloc(comm, 2 * bytes, reinterpret_cast<void**>(&sym)));
    // Streams created before the proxy's and after it (the first exchange starts the proxy and
    // its stream), three times the default number of queues in all.
    const int kStreams = 24;
    std::vector<cudaStream_t> streams(kStreams);
    for (int i = 0; i < kStreams / 2; ++i)
      RANK_CUDA(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    if (ring_exchange(comm, r, n, sym, bytes, 0, streams[0], "stream 0, first")) return 1;
    uint64_t before = 0, after = 0;
    if (proxy_copies(comm, &before)) return 1;
    RANK_CHECK(before > 0, "the proxy issued no copy: the SMs copied");
    for (int i = kStreams / 2; i < kStreams; ++i)
      RANK_CUDA(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    for (int i = 0; i < kStreams; ++i) {
      const std::string label = "stream " + std::to_string(i);
      if (ring_exchange(comm, r, n, sym, bytes, i + 1, streams[i], label.c_str())) return 1;
    }
    if (proxy_copies(comm, &after)) return 1;
    RANK_CHECK(after >= before + kStreams, "the proxy issued %llu copies for %d sends",
               static_cast<unsigned long long>(after - before), kStreams);
    for (cudaStream_t s : streams) RANK_CUDA(cudaStreamDestroy(s));
    RANK_OK(gicl_mem_free(comm, sym));
    RANK_OK(gicl_comm_destroy(comm));
    return 0;
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

}  // namespace
}  // namespace gicl::test
