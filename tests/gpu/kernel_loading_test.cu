// SPDX-License-Identifier: Apache-2.0
// The library's kernels are loaded when the communicator is created (common/kernel_families.hpp):
// under lazy module loading a kernel's first launch waits for every kernel running in the
// context, so a first launch that a running kernel waits for would stall until GICL_WAIT_TIMEOUT.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <vector>

#include "gicl/gicl.h"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

/// One rank: stream s waits for a signal; on another stream, first launches of a collective
/// instance and of the signal kernel must run while that wait spins, and the signal ends it.
int first_launches_beside_a_wait(gicl_unique_id_t id) {
  gicl_comm_t comm = nullptr;
  if (init_on_gpu(id, 1, 0, &comm)) return 1;
  cudaStream_t s = nullptr, other = nullptr;
  RANK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  RANK_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  const size_t n = 1024;
  uint64_t* sig = nullptr;
  float *x = nullptr, *y = nullptr;
  RANK_OK(gicl_mem_alloc(comm, sizeof(uint64_t), reinterpret_cast<void**>(&sig)));
  RANK_OK(gicl_mem_alloc(comm, n * sizeof(float), reinterpret_cast<void**>(&x)));
  RANK_OK(gicl_mem_alloc(comm, n * sizeof(float), reinterpret_cast<void**>(&y)));
  std::vector<float> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 251) - 125.0f;
  RANK_CUDA(cudaMemcpy(x, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  RANK_CUDA(cudaMemset(y, 0xff, n * sizeof(float)));
  RANK_CUDA(cudaMemset(sig, 0, sizeof(uint64_t)));
  // The communicator's collective state is set up by a first call of another instance (int32),
  // so that what follows is only the float instance's first launch.
  RANK_OK(gicl_allreduce(x, y, n, gicl_int32, gicl_max, comm, other));
  RANK_CUDA(cudaStreamSynchronize(other));

  const auto t0 = std::chrono::steady_clock::now();
  RANK_OK(gicl_wait_signal_on_stream(comm, sig, GICL_CMP_GE, 1, s));
  RANK_OK(gicl_allreduce(x, y, n, gicl_float32, gicl_sum, comm, other));
  RANK_OK(gicl_signal_on_stream(comm, sig, 1, GICL_SIGNAL_SET, 0, other));
  RANK_CUDA(cudaStreamSynchronize(other));
  RANK_CUDA(cudaStreamSynchronize(s));
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  gicl_result_t async = GICL_SUCCESS;
  const char* report = nullptr;
  RANK_OK(gicl_comm_get_async_error(comm, &async, &report));
  RANK_CHECK(async == GICL_SUCCESS, "communicator in error (%d): %s", async,
             report != nullptr ? report : "");
  // Well below the wait's 3 s timeout: the first launches did not wait for it.
  RANK_CHECK(sec < 1.5, "the wait and the first launches beside it took %.2f s", sec);
  std::vector<float> got(n);
  RANK_CUDA(cudaMemcpy(got.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i)
    RANK_CHECK(got[i] == in[i], "allreduce of one rank: element %zu is %g, not %g", i, got[i],
               in[i]);
  RANK_OK(gicl_mem_free(comm, sig));
  RANK_OK(gicl_mem_free(comm, x));
  RANK_OK(gicl_mem_free(comm, y));
  RANK_CUDA(cudaStreamDestroy(s));
  RANK_CUDA(cudaStreamDestroy(other));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// Before CUDA starts in the rank's process. Lazy loading is CUDA's default; set so the tests do
/// not depend on the caller's environment. GICL_PRELOAD_KERNELS=0 from outside shows the stall.
void lazy_loading_environment() {
  setenv("CUDA_MODULE_LOADING", "LAZY", 1);
  setenv("GICL_WAIT_TIMEOUT", "3000", 1);
  setenv("GICL_PRELOAD_KERNELS", "1", 0);
  // The one-shot kernel even on one rank (which otherwise only copies).
  setenv("GICL_ALGO", "allreduce:one_shot", 1);
}

TEST(KernelLoading, FirstLaunchesDoNotWaitForAWaitOnAnotherStream) {
  REQUIRE_GPUS(1);
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(1, [&](int) {
    lazy_loading_environment();
    return first_launches_beside_a_wait(id);
  });
  EXPECT_EQ(results[0].code, 0);
}

// cudaDeviceReset makes a new context: the kernels are loaded into it again, and the set-up
// copies of the next communicator run on a stream of the new context (common/cuda.cc).
TEST(KernelLoading, AfterADeviceResetTheNewContextIsLoadedToo) {
  REQUIRE_GPUS(1);
  gicl_unique_id_t ids[2];
  for (gicl_unique_id_t& id : ids) ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(1, [&](int) {
    lazy_loading_environment();
    if (first_launches_beside_a_wait(ids[0])) return 1;
    RANK_CUDA(cudaDeviceReset());
    return first_launches_beside_a_wait(ids[1]);
  });
  EXPECT_EQ(results[0].code, 0);
}

/// With GICL_DEBUG=INFO gicl logs the version banner, the driver's version among it, once per
/// process, at its first communicator or unique id. The banner must not start CUDA in that process:
/// ranks it forks afterwards (test harnesses, Python's fork start method) could not use CUDA
/// ("initialization error").
TEST(KernelLoading, TheVersionBannerLeavesCudaToForkedRanks) {
  REQUIRE_GPUS(1);
  auto results = fork_ranks(1, [](int) {
    setenv("GICL_DEBUG", "INFO", 1);
    gicl_unique_id_t id;
    if (gicl_get_unique_id(&id) != GICL_SUCCESS) return 2;
    return fork_ranks(
               1,
               [](int) {
                 return cudaSetDevice(0) == cudaSuccess && cudaFree(nullptr) == cudaSuccess ? 0 : 3;
               })[0]
        .code;
  });
  EXPECT_EQ(results[0].code, 0)
      << "2: gicl_get_unique_id failed; 3: CUDA failed in the forked rank";
}

}  // namespace
}  // namespace gicl::test
