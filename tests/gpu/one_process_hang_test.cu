// Reproducer of the known hang of ranks of one process on one GPU (docs/collectives.md, "Not
// built yet"): one process runs 12 communicators in a row, 4 and 2 ranks as threads of GPU 0, each
// through a 64 MiB pageable copy, an alltoall and an allgather of one element and 64 LL
// allreduces of 4 KiB without a sync between, every result checked. On one H100 it failed in
// 4 to 7 runs of 12 (the residency test, which it extends, in about one in eight); every time one
// rank's next kernel, launched by its host on time, started only when its partners' kernels had
// given up at CCL_WAIT_TIMEOUT (perf/results/2026-11-25_h100_one_process_flake.md). Disabled so
// that the suite stays green until the cause is fixed; run it with
// --gtest_also_run_disabled_tests --gtest_repeat=12.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "ccl/ccl.h"
#include "gpu/gpu_ranks.cuh"

namespace ccl::test {
namespace {

/// Rank r of n, a thread of this process on GPU 0: a fresh communicator, the large pageable copy
/// and the small first calls of the failing runs, then a burst of small calls without a sync
/// between them; every result checked, no asynchronous error, no call of seconds.
int first_calls(ccl_unique_id_t id, int n, int r) {
  RANK_CUDA(cudaSetDevice(0));
  ccl_comm_t comm;
  RANK_OK(ccl_comm_init_rank(&comm, n, id, r));
  cudaStream_t s;
  RANK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t bytes = size_t{64} << 20, total = bytes / sizeof(int);
  int *send = nullptr, *recv = nullptr, *sum = nullptr;
  RANK_OK(ccl_mem_alloc(comm, bytes, reinterpret_cast<void**>(&send)));
  RANK_OK(ccl_mem_alloc(comm, bytes, reinterpret_cast<void**>(&recv)));
  RANK_OK(ccl_mem_alloc(comm, bytes, reinterpret_cast<void**>(&sum)));
  auto value = [](int rank, size_t i) { return rank * 1000003 + static_cast<int>(i % 999983); };
  std::vector<int> in(total);
  for (size_t i = 0; i < total; ++i) in[i] = value(r, i);
  const auto t0 = std::chrono::steady_clock::now();
  RANK_CUDA(cudaMemcpyAsync(send, in.data(), bytes, cudaMemcpyHostToDevice, s));
  RANK_OK(ccl_alltoall(send, recv, 1, ccl_int32, comm, s));
  RANK_OK(ccl_allgather(send, recv, 1, ccl_int32, comm, s));
  // The allgather's result, copied aside before the burst overwrites recv.
  std::vector<int> gathered(n);
  RANK_CUDA(cudaMemcpyAsync(gathered.data(), recv, n * sizeof(int), cudaMemcpyDeviceToHost, s));
  const size_t m = 1024;  // LL
  const int calls = 64;
  for (int k = 0; k < calls; ++k) RANK_OK(ccl_allreduce(send, sum, m, ccl_int32, ccl_sum, comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ccl_result_t async = CCL_SUCCESS;
  const char* report = nullptr;
  RANK_OK(ccl_comm_get_async_error(comm, &async, &report));
  RANK_CHECK(async == CCL_SUCCESS, "rank %d of %d: communicator in error (%d): %s", r, n, async,
             report != nullptr ? report : "");
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
  RANK_OK(ccl_mem_free(comm, send));
  RANK_OK(ccl_mem_free(comm, recv));
  RANK_OK(ccl_mem_free(comm, sum));
  RANK_CUDA(cudaStreamDestroy(s));
  RANK_OK(ccl_comm_destroy(comm));
  return 0;
}

TEST(OneProcessHang, DISABLED_TwelveCommunicatorsInARow) {
  REQUIRE_GPUS(1);
  auto results = fork_ranks(
      1,
      [&](int) {
        // Before the threads (setenv is not thread-safe): a hang fails in 2 s, not 30.
        setenv("CCL_WAIT_TIMEOUT", "2000", 1);
        setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8", 0);
        const int rounds = 12;
        for (int round = 0; round < rounds; ++round) {
          const int n = round % 2 == 0 ? 4 : 2;
          ccl_unique_id_t id;
          RANK_OK(ccl_get_unique_id(&id));
          std::vector<int> rc(n, -1);
          std::vector<std::thread> t;
          for (int r = 0; r < n; ++r) t.emplace_back([&, r] { rc[r] = first_calls(id, n, r); });
          for (auto& th : t) th.join();
          for (int r = 0; r < n; ++r)
            RANK_CHECK(rc[r] == 0, "round %d, %d ranks of one process: rank %d failed", round, n,
                       r);
        }
        return 0;
      },
      240000);
  EXPECT_EQ(results[0].code, 0);
}

}  // namespace
}  // namespace ccl::test
