// SPDX-License-Identifier: Apache-2.0
// Collectives that must fail cleanly or survive a counter wrap: a rank that stops calling (its
// peer's timeout report names it, through every kind of wait, and an LL128 report names a line
// that is missing), buffers of different kinds across ranks, and epochs and sequence numbers
// crossing 2^32.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "collectives/common/coll_args.h"
#include "collectives/host/coll_state.hpp"
#include "collectives/schedule/ll128.hpp"
#include "gicl/gicl.h"
#include "gpu/coll_cases.cuh"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

/// Two ranks (GICL_WAIT_TIMEOUT 300 ms, the algorithm and protocol forced) make one float32
/// allreduce of `count` elements in place together, so that whatever the communicator sets up on
/// first use is set up; then rank 1 stays away (alive for 4 s, then it aborts) and rank 0 runs
/// `absent(comm, stream, buf)`, whose return is rank 0's exit code. The ranks' results.
template <typename F>
std::vector<RankResult> with_an_absent_peer(const char* algo, const char* proto, size_t count,
                                            F absent) {
  gicl_unique_id_t id;
  if (gicl_get_unique_id(&id) != GICL_SUCCESS) return {{1}, {1}};
  return fork_ranks(
      2,
      [&](int r) {
        setenv("GICL_WAIT_TIMEOUT", "300", 1);
        setenv("GICL_ALGO", algo, 1);
        setenv("GICL_PROTO", proto, 1);
        gicl_comm_t comm;
        if (init_on_gpu(id, 2, r, &comm)) return 1;
        cudaStream_t s;
        RANK_CUDA(cudaStreamCreate(&s));
        float* buf = nullptr;
        RANK_CUDA(cudaMalloc(&buf, count * sizeof(float)));
        RANK_CUDA(cudaMemset(buf, 0, count * sizeof(float)));
        RANK_CUDA(cudaDeviceSynchronize());
        RANK_OK(gicl_allreduce(buf, buf, count, gicl_float32, gicl_sum, comm, s));
        RANK_CUDA(cudaStreamSynchronize(s));
        if (r == 1) {  // absent from here on, alive until rank 0 has had its report
          std::this_thread::sleep_for(std::chrono::seconds(4));
          RANK_OK(gicl_comm_abort(comm));
          return 0;
        }
        const int code = absent(comm, s, buf);
        RANK_OK(gicl_comm_abort(comm));
        return code;
      },
      60000);
}

/// A rank that stops calling collectives: its peer's next collective ends, within
/// GICL_WAIT_TIMEOUT, with a timeout report that names it, through each kind of wait a collective
/// kernel has (LL rows, LL128 lines, a direct kernel's entry flags, a pipe's FIFO).
TEST(CollectiveFailures, AnAbsentRankIsNamedInATimeout) {
  REQUIRE_GPUS(1);
  struct Way {
    const char* algo;
    const char* proto;
    size_t count;  // float32 elements
  };
  const Way ways[] = {{"allreduce:one_shot", "LL", 2},
                      {"allreduce:one_shot", "LL128", 16384},
                      {"allreduce:two_shot", "AUTO", 1 << 18},
                      {"ring", "AUTO", 1 << 18}};
  for (const Way& w : ways) {
    auto results = with_an_absent_peer(
        w.algo, w.proto, w.count, [&](gicl_comm_t comm, cudaStream_t s, float* buf) {
          const auto t0 = std::chrono::steady_clock::now();
          RANK_OK(gicl_allreduce(buf, buf, w.count, gicl_float32, gicl_sum, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          const double sec =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          RANK_CHECK(sec > 0.25 && sec < 3.5, "%s/%s: gave up after %.2f s (GICL_WAIT_TIMEOUT=300)",
                     w.algo, w.proto, sec);
          gicl_result_t async;
          const char* msg = nullptr;
          RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
          RANK_CHECK(async == GICL_TIMEOUT, "%s/%s: async error %d", w.algo, w.proto, async);
          const std::string m = msg != nullptr ? msg : "";
          RANK_CHECK(
              m.find("timed out") != std::string::npos && m.find("peer 1") != std::string::npos,
              "%s/%s: report '%s' does not name peer 1", w.algo, w.proto, m.c_str());
          return 0;
        });
    for (int r = 0; r < 2; ++r)
      EXPECT_EQ(results[r].code, 0) << w.algo << "/" << w.proto << " rank " << r;
  }
}

/// Three ranks; after one correct allreduce rank 1 SIGKILLs itself while ranks 0 and 2 are in
/// their next allreduce (waiting for it, GICL_WAIT_TIMEOUT 30 s). The peer watch stops their
/// kernels within a second, the error naming rank 1 (not a timeout); they shrink without it
/// (GICL_SHRINK_ABORT) and an allreduce over the two of them is correct.
TEST(CollectiveFailures, AKilledRankStopsTheOthersWhoShrinkAndContinue) {
  REQUIRE_GPUS(1);
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  const size_t count = 1 << 20;
  auto results = fork_ranks(
      3,
      [&](int r) {
        setenv("GICL_WAIT_TIMEOUT", "30000", 1);
        gicl_comm_t comm;
        if (init_on_gpu(id, 3, r, &comm)) return 1;
        cudaStream_t s;
        RANK_CUDA(cudaStreamCreate(&s));
        float* buf = nullptr;
        RANK_CUDA(cudaMalloc(&buf, count * sizeof(float)));
        std::vector<float> h(count, static_cast<float>(r + 1));
        RANK_CUDA(cudaMemcpy(buf, h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        RANK_OK(gicl_allreduce(buf, buf, count, gicl_float32, gicl_sum, comm, s));
        RANK_CUDA(cudaStreamSynchronize(s));
        RANK_CUDA(cudaMemcpy(h.data(), buf, count * sizeof(float), cudaMemcpyDeviceToHost));
        RANK_CHECK(h[0] == 6 && h[count - 1] == 6, "the first allreduce: %g", h[0]);
        if (r == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the others are waiting
          kill(getpid(), SIGKILL);
        }
        const auto t0 = std::chrono::steady_clock::now();
        RANK_OK(gicl_allreduce(buf, buf, count, gicl_float32, gicl_sum, comm, s));
        const cudaError_t e = cudaStreamSynchronize(s);
        const double sec =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        RANK_CHECK(e == cudaSuccess, "the stopped allreduce: %s", cudaGetErrorString(e));
        RANK_CHECK(sec < 1.5, "the survivors' allreduce stopped after %.2f s", sec);
        gicl_result_t async;
        const char* msg = nullptr;
        RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
        const std::string m = msg != nullptr ? msg : "";
        RANK_CHECK(async == GICL_REMOTE_ERROR && m.find("rank 1 (pid") != std::string::npos,
                   "the loss: %d '%s'", async, m.c_str());
        const int lost = 1;
        gicl_comm_t small = nullptr;
        RANK_OK(gicl_comm_shrink(comm, &lost, 1, &small, GICL_SHRINK_ABORT));
        std::fill(h.begin(), h.end(), static_cast<float>(r + 1));
        RANK_CUDA(cudaMemcpy(buf, h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        RANK_OK(gicl_allreduce(buf, buf, count, gicl_float32, gicl_sum, small, s));
        RANK_CUDA(cudaStreamSynchronize(s));
        RANK_CUDA(cudaMemcpy(h.data(), buf, count * sizeof(float), cudaMemcpyDeviceToHost));
        size_t wrong = 0;
        for (float v : h) wrong += v != 4;  // ranks 0 and 2: 1 + 3
        RANK_CHECK(wrong == 0, "allreduce over the shrunk communicator: %zu wrong", wrong);
        std::printf("rank %d: stopped %.0f ms after the kill's wait began; shrunk allreduce ok\n",
                    r, sec * 1e3);
        RANK_OK(gicl_comm_destroy(small));
        RANK_OK(gicl_comm_abort(comm));
        return 0;
      },
      120000);
  EXPECT_EQ(results[1].code, 128 + SIGKILL);
  for (int r : {0, 2}) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

/// An LL128 receive that times out names a line that has not arrived, with what its flag word
/// holds. Rank 1 stops calling; rank 0 finds in its row from rank 1 every line of the call but
/// the last of each warp's four carrying the call's flag (planted), so the first line a warp
/// reads has arrived, and the report must name a missing one: its last seen value is not the
/// flag it expected (the report named each warp's first line before).
TEST(CollectiveFailures, AnLL128TimeoutNamesAMissingLine) {
  REQUIRE_GPUS(1);
  const size_t count = 16384;  // float32: 64 KiB, 547 lines
  auto results = with_an_absent_peer(
      "allreduce:one_shot", "LL128", count, [&](gicl_comm_t comm, cudaStream_t s, float* buf) {
        coll::CollState* st = nullptr;
        RANK_CHECK(coll::coll_state(comm, &st).ok(), "no collective state");
        const coll::CollScratch& sc = st->scratch;
        uint64_t done = 0;
        RANK_CUDA(cudaMemcpy(&done, sc.epoch, sizeof(done), cudaMemcpyDeviceToHost));
        const uint64_t e = done + 1;  // the next call's epoch, its LL128 flag
        const size_t lines = coll::ll128_lines(count * sizeof(float));
        std::vector<uint64_t> row(lines * coll::kLL128LineBytes / 8, 0);
        for (size_t l = 0; l < lines; ++l)
          if (l % coll::kLL128LinesPerWarp != coll::kLL128LinesPerWarp - 1)
            row[(l + 1) * coll::kLL128LineBytes / 8 - 1] = e;
        char* from1 = sc.ll128 + ((e & 1) * 2 + 1) * sc.ll128_row;  // this rank's row from rank 1
        RANK_CUDA(cudaMemcpy(from1, row.data(), row.size() * 8, cudaMemcpyHostToDevice));
        RANK_OK(gicl_allreduce(buf, buf, count, gicl_float32, gicl_sum, comm, s));
        RANK_CUDA(cudaStreamSynchronize(s));
        gicl_result_t async;
        const char* msg = nullptr;
        RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
        const std::string m = msg != nullptr ? msg : "";
        RANK_CHECK(async == GICL_TIMEOUT && m.find("peer 1") != std::string::npos,
                   "async error %d, report '%s'", async, m.c_str());
        unsigned long long expected = 0, seen = 0;
        const size_t at = m.find("expected");
        RANK_CHECK(at != std::string::npos &&
                       std::sscanf(m.c_str() + at, "expected == %llu, last seen %llu", &expected,
                                   &seen) == 2,
                   "report '%s' has no expected and seen values", m.c_str());
        std::printf("rank 0's report: %s\n", m.c_str());
        RANK_CHECK(expected == e && seen != e,
                   "report '%s' names a line that has arrived (flag %llu)", m.c_str(),
                   static_cast<unsigned long long>(e));
        return 0;
      });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

/// Destroys a communicator that must not be in error: 0, or non-zero after printing its report.
int destroy_healthy(gicl_comm_t comm) {
  gicl_result_t async;
  const char* msg = nullptr;
  RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
  RANK_CHECK(async == GICL_SUCCESS, "async error %d: %s", async, msg ? msg : "");
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// Ranks may pass buffers of different kinds. Within the staging, a call where one rank's
/// buffers are staged and its peer's symmetric runs, for every direct collective (two-shot,
/// reduce-scatter and alltoall switch every rank to pushing; the one-shot's staged side keeps the
/// exit barrier). Beyond it the ranks would cut the call into different pieces: every rank's
/// kernel fails with GICL_INVALID_ARGUMENT naming its peer instead of pairing different ranges,
/// except in the tuner's push-first range, where every rank cuts push mode's pieces.
TEST(CollectiveFailures, MixedBufferKinds) {
  REQUIRE_GPUS(1);
  gicl_unique_id_t id, id2;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  ASSERT_EQ(gicl_get_unique_id(&id2), GICL_SUCCESS);
  auto results = fork_ranks(
      2,
      [&](int r) {
        setenv("GICL_COLL_SCRATCH_SIZE", "1M", 1);
        setenv("GICL_WAIT_TIMEOUT", "300", 1);
        setenv("GICL_ALGO",
               "allreduce:two_shot,reduce_scatter:direct,allgather:direct,broadcast:direct,"
               "reduce:direct,alltoall:direct",
               1);
        setenv("GICL_PROTO", "SIMPLE", 1);
        gicl_comm_t comm;
        if (init_on_gpu(id, 2, r, &comm)) return 1;
        cudaStream_t s;
        RANK_CUDA(cudaStreamCreate(&s));
        const size_t big = size_t{1} << 20;  // float32 elements: 4 MiB, four staging pieces
        float *sym = nullptr, *dev = nullptr;
        RANK_OK(gicl_mem_alloc(comm, 2 * big * sizeof(float), reinterpret_cast<void**>(&sym)));
        RANK_CUDA(cudaMalloc(&dev, 2 * big * sizeof(float)));
        // Within the staging: 50000 elements, each side of the mix in turn.
        const size_t count = 50000;
        std::vector<float> in(2 * count), got(2 * count);
        for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((i * 7 + r) % 1000);
        for (int staged = 0; staged < 2; ++staged) {
          float* b = r == staged ? dev : sym;
          float *send = b, *recv = b + big;
          RANK_CUDA(cudaMemcpy(send, in.data(), 2 * count * 4, cudaMemcpyHostToDevice));
          RANK_CUDA(cudaMemset(recv, 0xff, 2 * count * 4));
          RANK_OK(gicl_allreduce(send, recv, 2 * count, gicl_float32, gicl_sum, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          RANK_CUDA(cudaMemcpy(got.data(), recv, 2 * count * 4, cudaMemcpyDeviceToHost));
          for (size_t i = 0; i < 2 * count; ++i)
            RANK_CHECK(got[i] == static_cast<float>((i * 7) % 1000 + (i * 7 + 1) % 1000),
                       "allreduce, rank %d staged: element %zu is %f", staged, i, got[i]);
          RANK_CUDA(cudaMemset(recv, 0xff, count * 4));
          RANK_OK(gicl_reduce_scatter(send, recv, count, gicl_float32, gicl_sum, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          RANK_CUDA(cudaMemcpy(got.data(), recv, count * 4, cudaMemcpyDeviceToHost));
          for (size_t i = 0; i < count; ++i) {
            const size_t g = r * count + i;
            RANK_CHECK(got[i] == static_cast<float>((g * 7) % 1000 + (g * 7 + 1) % 1000),
                       "reduce_scatter, rank %d staged: element %zu is %f", staged, i, got[i]);
          }
          // Alltoall: the symmetric rank receives into its window, the staged one in its inbox.
          RANK_CUDA(cudaMemset(recv, 0xff, 2 * count * 4));
          RANK_OK(gicl_alltoall(send, recv, count, gicl_float32, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          RANK_CUDA(cudaMemcpy(got.data(), recv, 2 * count * 4, cudaMemcpyDeviceToHost));
          for (int j = 0; j < 2; ++j)
            for (size_t i = 0; i < count; ++i) {
              const size_t g = r * count + i;  // block r of rank j's input
              RANK_CHECK(got[j * count + i] == static_cast<float>((g * 7 + j) % 1000),
                         "alltoall, rank %d staged: block %d element %zu is %f", staged, j, i,
                         got[j * count + i]);
            }
          // The copy-in kinds: the staged rank's peers read its staging, it reads their windows.
          RANK_CUDA(cudaMemset(recv, 0xff, 2 * count * 4));
          RANK_OK(gicl_allgather(send, recv, count, gicl_float32, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          RANK_CUDA(cudaMemcpy(got.data(), recv, 2 * count * 4, cudaMemcpyDeviceToHost));
          for (size_t i = 0; i < 2 * count; ++i)
            RANK_CHECK(got[i] == static_cast<float>(((i % count) * 7 + i / count) % 1000),
                       "allgather, rank %d staged: element %zu is %f", staged, i, got[i]);
          for (int root = 0; root < 2; ++root) {
            RANK_CUDA(cudaMemset(recv, 0xff, 2 * count * 4));
            RANK_OK(gicl_broadcast(send, recv, 2 * count, gicl_float32, root, comm, s));
            RANK_CUDA(cudaStreamSynchronize(s));
            RANK_CUDA(cudaMemcpy(got.data(), recv, 2 * count * 4, cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < 2 * count; ++i)
              RANK_CHECK(got[i] == static_cast<float>((i * 7 + root) % 1000),
                         "broadcast from %d, rank %d staged: element %zu is %f", root, staged, i,
                         got[i]);
            RANK_CUDA(cudaMemset(recv, 0xff, 2 * count * 4));
            RANK_OK(gicl_reduce(send, recv, 2 * count, gicl_float32, gicl_sum, root, comm, s));
            RANK_CUDA(cudaStreamSynchronize(s));
            RANK_CUDA(cudaMemcpy(got.data(), recv, 2 * count * 4, cudaMemcpyDeviceToHost));
            for (size_t i = 0; r == root && i < 2 * count; ++i)
              RANK_CHECK(got[i] == static_cast<float>((i * 7) % 1000 + (i * 7 + 1) % 1000),
                         "reduce to %d, rank %d staged: element %zu is %f", root, staged, i,
                         got[i]);
          }
        }
        // An allreduce in the tuner's push-first range (16 MiB): every rank pushes first whatever
        // its buffer, so the mix cuts the same pieces (sixteen) and sums right beyond the staging.
        {
          const size_t pf = size_t{4} << 20;  // float32 elements
          float *psym = nullptr, *pdev = nullptr;
          RANK_OK(gicl_mem_alloc(comm, 2 * pf * sizeof(float), reinterpret_cast<void**>(&psym)));
          RANK_CUDA(cudaMalloc(&pdev, 2 * pf * sizeof(float)));
          std::vector<float> pin(pf), pgot(pf);
          for (size_t i = 0; i < pf; ++i) pin[i] = static_cast<float>((i * 7 + r) % 1000);
          for (int staged = 0; staged < 2; ++staged) {
            float* b = r == staged ? pdev : psym;
            RANK_CUDA(cudaMemcpy(b, pin.data(), pf * 4, cudaMemcpyHostToDevice));
            RANK_CUDA(cudaMemset(b + pf, 0xff, pf * 4));
            RANK_OK(gicl_allreduce(b, b + pf, pf, gicl_float32, gicl_sum, comm, s));
            RANK_CUDA(cudaStreamSynchronize(s));
            RANK_CUDA(cudaMemcpy(pgot.data(), b + pf, pf * 4, cudaMemcpyDeviceToHost));
            size_t bad = 0;
            for (size_t i = 0; i < pf; ++i)
              bad += pgot[i] != static_cast<float>((i * 7) % 1000 + (i * 7 + 1) % 1000);
            RANK_CHECK(bad == 0, "push-first allreduce, rank %d staged: %zu wrong elements", staged,
                       bad);
          }
          RANK_OK(gicl_mem_free(comm, psym));
          RANK_CUDA(cudaFree(pdev));
        }
        // A broadcast beyond the staging from a symmetric root to ranks that pass NULL as their
        // send buffer (NCCL's convention): they cut the call as their symmetric recv says.
        {
          std::vector<float> bin(big), bgot(big);
          for (size_t i = 0; i < big; ++i) bin[i] = static_cast<float>(i % 997);
          float* bsend = r == 1 ? sym : nullptr;
          if (r == 1) RANK_CUDA(cudaMemcpy(sym, bin.data(), big * 4, cudaMemcpyHostToDevice));
          RANK_CUDA(cudaMemset(sym + big, 0xff, big * 4));
          RANK_OK(gicl_broadcast(bsend, sym + big, big, gicl_float32, 1, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          RANK_CUDA(cudaMemcpy(bgot.data(), sym + big, big * 4, cudaMemcpyDeviceToHost));
          RANK_CHECK(bgot == bin, "broadcast beyond the staging with a NULL send at rank 0");
        }
        // Beyond it: rank 0 zero copy in one launch, rank 1 staged in four.
        float* b = r == 0 ? sym : dev;
        RANK_OK(gicl_allreduce(b, b + big, big, gicl_float32, gicl_sum, comm, s));
        RANK_CHECK(cudaStreamSynchronize(s) == cudaSuccess, "the kernels end (no trap)");
        gicl_result_t async;
        const char* msg = nullptr;
        RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
        const std::string m = msg != nullptr ? msg : "";
        const std::string peer = r == 0 ? "peer 1" : "peer 0";
        RANK_CHECK(async == GICL_INVALID_ARGUMENT && m.find("collective") != std::string::npos &&
                       m.find(peer) != std::string::npos,
                   "async error %d, report '%s' (wanted an argument error naming %s)", async,
                   m.c_str(), peer.c_str());
        RANK_OK(gicl_comm_abort(comm));
        // The SIMPLE one-shot, each side of the mix in turn, on a second communicator: its
        // staged side leaves without an exit barrier only where no peer is read in place (the
        // symmetric side waits there for it; before, it timed out).
        setenv("GICL_ALGO", "allreduce:one_shot", 1);
        if (init_on_gpu(id2, 2, r, &comm)) return 1;
        RANK_OK(gicl_mem_alloc(comm, 2 * big * sizeof(float), reinterpret_cast<void**>(&sym)));
        for (int staged = 0; staged < 2; ++staged) {
          float* b = r == staged ? dev : sym;
          RANK_CUDA(cudaMemcpy(b, in.data(), 2 * count * 4, cudaMemcpyHostToDevice));
          RANK_CUDA(cudaMemset(b + big, 0xff, 2 * count * 4));
          for (int k = 0; k < 3; ++k)  // back to back: the staged side would run ahead
            RANK_OK(gicl_allreduce(b, b + big, 2 * count, gicl_float32, gicl_sum, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          RANK_CUDA(cudaMemcpy(got.data(), b + big, 2 * count * 4, cudaMemcpyDeviceToHost));
          for (size_t i = 0; i < 2 * count; ++i)
            RANK_CHECK(got[i] == static_cast<float>((i * 7) % 1000 + (i * 7 + 1) % 1000),
                       "one-shot, rank %d staged: element %zu is %f", staged, i, got[i]);
        }
        if (int rc = destroy_healthy(comm)) return rc;
        return 0;
      },
      60000);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

// Epochs and point-to-point sequence numbers crossing 2^32 (GICL_EPOCH_BASE starts them just
// below). LL entries carry a 32-bit flag; it was the low 32 bits, 0 at 2^32, which is what rows
// never written hold, so a call there read the units no earlier call of its parity reached as
// arrived (zeros in the sum). Each call below is larger than the one before, so every call has
// such units. LL one-shot allreduce, point-to-point LL, then the tuner's own choices on a second
// communicator started just below 2^32.
TEST(CollectiveCounters, CrossTheLLFlagWrap) {
  REQUIRE_GPUS(1);
  gicl_unique_id_t id, id2;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  ASSERT_EQ(gicl_get_unique_id(&id2), GICL_SUCCESS);
  auto results = fork_ranks(
      2,
      [&](int r) {
        setenv("GICL_EPOCH_BASE", std::to_string((uint64_t{1} << 32) - 6).c_str(), 1);
        setenv("GICL_WAIT_TIMEOUT", "3000", 1);
        gicl_comm_t comm;
        if (init_on_gpu(id, 2, r, &comm)) return 1;
        cudaStream_t s;
        RANK_CUDA(cudaStreamCreate(&s));
        const size_t most = size_t{1} << 16;  // float32 elements: 256 KiB, inside LL's rows
        float *buf = nullptr, *out = nullptr;
        RANK_CUDA(cudaMalloc(&buf, most * sizeof(float)));
        RANK_CUDA(cudaMalloc(&out, most * sizeof(float)));
        std::vector<float> in(most), got(most);
        auto fill = [&](int salt) {
          for (size_t i = 0; i < most; ++i)
            in[i] = static_cast<float>((i * 13 + 3 * r + salt) % 1001 + 1);
          return cudaMemcpy(buf, in.data(), most * 4, cudaMemcpyHostToDevice);
        };
        auto allreduce = [&](size_t count, int salt, const char* what) {
          RANK_CUDA(fill(salt));
          RANK_CUDA(cudaMemset(out, 0xff, count * 4));
          RANK_OK(gicl_allreduce(buf, out, count, gicl_float32, gicl_sum, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          RANK_CUDA(cudaMemcpy(got.data(), out, count * 4, cudaMemcpyDeviceToHost));
          for (size_t i = 0; i < count; ++i) {
            const float want = static_cast<float>((i * 13 + salt) % 1001 + 1) +
                               static_cast<float>((i * 13 + 3 + salt) % 1001 + 1);
            RANK_CHECK(got[i] == want, "%s allreduce of %zu, call %d: element %zu is %f, not %f",
                       what, count, salt, i, got[i], want);
          }
          return 0;
        };
        // 12 LL calls (epochs 2^32 - 5 .. 2^32 + 6), doubling from 4 elements.
        setenv("GICL_PROTO", "LL", 1);
        setenv("GICL_ALGO", "allreduce:one_shot", 1);
        for (int k = 0; k < 12; ++k)
          if (int rc = allreduce(size_t{4} << k, k, "LL")) return rc;
        // Point-to-point LL: 12 exchanges (sequence numbers 2^32 - 5 .. 2^32 + 6), doubling
        // from 8 bytes to 16 KiB.
        for (int k = 0; k < 12; ++k) {
          const size_t bytes = size_t{8} << k;
          RANK_CUDA(fill(100 + k));
          RANK_CUDA(cudaMemset(out, 0xff, bytes));
          RANK_OK(gicl_group_start());
          RANK_OK(gicl_send(buf, bytes, gicl_uint8, 1 - r, comm, s));
          RANK_OK(gicl_recv(out, bytes, gicl_uint8, 1 - r, comm, s));
          RANK_OK(gicl_group_end());
          RANK_CUDA(cudaStreamSynchronize(s));
          RANK_CUDA(cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost));
          for (size_t i = 0; i < bytes / 4; ++i) {
            const float want = static_cast<float>((i * 13 + 3 * (1 - r) + 100 + k) % 1001 + 1);
            RANK_CHECK(got[i] == want, "send/recv of %zu bytes: element %zu is %f, not %f", bytes,
                       i, got[i], want);
          }
        }
        // The tuner's own choices (its settings are read at a communicator's first call), on a
        // second communicator starting just below 2^32: LL, then the zero-copy kernels.
        if (int rc = destroy_healthy(comm)) return rc;
        setenv("GICL_EPOCH_BASE", std::to_string((uint64_t{1} << 32) - 1).c_str(), 1);
        unsetenv("GICL_PROTO");
        unsetenv("GICL_ALGO");
        if (init_on_gpu(id2, 2, r, &comm)) return 1;
        for (int k = 0; k < 3; ++k)
          if (int rc = allreduce(size_t{1000} << (3 * k), 200 + k, "tuned")) return rc;
        if (int rc = destroy_healthy(comm)) return rc;
        return 0;
      },
      60000);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

}  // namespace
}  // namespace gicl::test
