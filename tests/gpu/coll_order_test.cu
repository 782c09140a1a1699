// SPDX-License-Identifier: Apache-2.0
// Collectives back to back and in stream order, steps of Collectives.EveryAlgorithmTypeAndReduction
// (collectives_test.cu): 10^4 mixed calls without a sync, push mode's reused inboxes and
// alternating staging, and stream order under programmatic dependent launch.
#include <cuda_runtime.h>

#include <cstdlib>
#include <vector>

#include "gicl/gicl.h"
#include "gpu/coll_cases.cuh"
#include "gpu/gpu_ranks.cuh"
#include "gpu/late_writer.cuh"

namespace gicl::test {
namespace {

/// A user kernel that lets the next kernel of its stream launch at once (the PDL trigger as its
/// first statement) and writes `p` only `delay_ns` later: a collective launched with PDL that
/// read its input before waiting for this kernel would see the poison instead.
__global__ void late_fill(int32_t* p, size_t count, int32_t base, uint64_t delay_ns) {
  trigger_dependents_then_sleep(delay_ns);
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    p[i] = base + static_cast<int32_t>(i % 1000);
}

}  // namespace

/// 10^4 back-to-back mixed collectives (sizes, types, kernels), checked every 1000 calls.
int stress(gicl_comm_t comm, int me, int n, cudaStream_t s) {
  const size_t count = 257;
  float *a, *b;
  RANK_CUDA(cudaMalloc(&a, count * n * 8));
  RANK_CUDA(cudaMalloc(&b, count * n * 8));
  std::vector<float> ones(count * n, 1.0f);
  RANK_CUDA(cudaMemcpy(a, ones.data(), ones.size() * 4, cudaMemcpyHostToDevice));
  const int calls = n > 4 ? 500 : n > 2 ? 2000 : 10000;  // ranks sharing a GPU time-slice it
  for (int i = 0; i < calls; ++i) {
    switch (i % 5) {
      case 0:
        RANK_OK(gicl_allreduce(a, b, count, gicl_float32, gicl_max, comm, s));
        break;
      case 1:
        RANK_OK(gicl_allgather(a, b, count, gicl_float32, comm, s));
        break;
      case 2:
        RANK_OK(gicl_reduce_scatter(a, b, count, gicl_float32, gicl_sum, comm, s));
        break;
      case 3:
        RANK_OK(gicl_allreduce(a, b, count * n * 2, gicl_bfloat16, gicl_min, comm, s));
        break;
      default:
        RANK_OK(gicl_broadcast(a, b, count * 3, gicl_int8, i % n, comm, s));
        break;
    }
    if (i % 1000 == 2) {
      std::vector<float> got(count);
      RANK_CUDA(cudaStreamSynchronize(s));
      RANK_CUDA(cudaMemcpy(got.data(), b, count * 4, cudaMemcpyDeviceToHost));
      for (size_t j = 0; j < count; ++j)
        RANK_CHECK(got[j] == static_cast<float>(n), "stress call %d: element %zu is %f", i, j,
                   got[j]);
    }
  }
  RANK_CUDA(cudaStreamSynchronize(s));
  RANK_CUDA(cudaFree(a));
  RANK_CUDA(cudaFree(b));
  return 0;
}

/// Push mode back to back: staged two-shot allreduce, reduce-scatter and alltoall (each in
/// several pieces of the 1 MiB staging) beside a symmetric (pull) allreduce and a one-piece
/// two-shot, with no sync between calls: the inboxes are reused two launches on, reduce-scatter
/// and alltoall leave without an exit barrier, and the pieces alternate the staging buffers.
int push_stress(gicl_comm_t world, int me, int n, cudaStream_t s) {
  setenv("GICL_ALGO", "allreduce:two_shot", 1);
  setenv("GICL_PROTO", "SIMPLE", 1);
  gicl_comm_t comm;
  if (fresh_comm(world, me, &comm)) return 1;
  unsetenv("GICL_ALGO");
  unsetenv("GICL_PROTO");
  const size_t count = n > 2 ? 70001 : 300001;  // float32 elements per rank block
  const size_t total = count * n;
  const int calls = n > 2 ? 40 : 300;
  float *a, *sym, *sym_out;
  std::vector<float*> out(4);
  RANK_CUDA(cudaMalloc(&a, total * 4));
  for (float*& o : out) RANK_CUDA(cudaMalloc(&o, total * 4));
  RANK_OK(gicl_mem_alloc(comm, total * 4, reinterpret_cast<void**>(&sym)));
  RANK_OK(gicl_mem_alloc(comm, total * 4, reinterpret_cast<void**>(&sym_out)));
  const std::vector<float> ones(total, 1.0f);
  RANK_CUDA(cudaMemcpy(a, ones.data(), total * 4, cudaMemcpyHostToDevice));
  RANK_CUDA(cudaMemcpy(sym, ones.data(), total * 4, cudaMemcpyHostToDevice));
  auto expect = [&](const float* d, size_t len, float want, const char* what, int i) -> int {
    std::vector<float> got(len);
    RANK_CUDA(cudaMemcpy(got.data(), d, len * 4, cudaMemcpyDeviceToHost));
    for (size_t j = 0; j < len; ++j)
      RANK_CHECK(got[j] == want, "push stress call %d, %s: element %zu is %f (want %f)", i, what, j,
                 got[j], want);
    return 0;
  };
  const float nf = static_cast<float>(n);
  for (int i = 0; i < calls; ++i) {
    switch (i % 5) {
      case 0:
        RANK_OK(gicl_allreduce(a, out[0], total, gicl_float32, gicl_sum, comm, s));
        break;
      case 1:
        RANK_OK(gicl_reduce_scatter(a, out[1], count, gicl_float32, gicl_sum, comm, s));
        break;
      case 2:
        RANK_OK(gicl_alltoall(a, out[2], count, gicl_float32, comm, s));
        break;
      case 3:
        RANK_OK(gicl_allreduce(sym, sym_out, total, gicl_float32, gicl_sum, comm, s));
        break;
      default:
        RANK_OK(gicl_allreduce(a, out[3], 7, gicl_float32, gicl_max, comm, s));
        break;
    }
    if (i % 50 == 49 || i == calls - 1) {
      RANK_CUDA(cudaStreamSynchronize(s));
      if (expect(out[0], total, nf, "allreduce", i) ||
          expect(out[1], count, nf, "reduce_scatter", i) ||
          expect(out[2], total, 1.0f, "alltoall", i) ||
          expect(sym_out, total, nf, "symmetric", i) || expect(out[3], 7, 1.0f, "small", i))
        return 1;
      for (float* o : out) RANK_CUDA(cudaMemset(o, 0, total * 4));
      RANK_CUDA(cudaMemset(sym_out, 0, total * 4));
      RANK_CUDA(cudaDeviceSynchronize());
    }
  }
  RANK_CUDA(cudaFree(a));
  for (float* o : out) RANK_CUDA(cudaFree(o));
  RANK_OK(gicl_mem_free(comm, sym));
  RANK_OK(gicl_mem_free(comm, sym_out));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// Stream order under programmatic dependent launch (GICL_PDL=1, the default) and without it: a
/// collective after a user kernel that triggers early reads what that kernel wrote, and each
/// collective of a chain reads what the previous one wrote in place, eager and in a graph with
/// other node kinds; send/recv likewise.
int dependent_launch(gicl_comm_t world, int me, int n, cudaStream_t s) {
  for (const char* pdl : {"1", "0"}) {
    setenv("GICL_PDL", pdl, 1);
    gicl_comm_t comm;
    if (fresh_comm(world, me, &comm)) return 1;
    for (size_t count : {size_t{1000}, size_t{1} << 20}) {
      int32_t *a, *b;
      RANK_CUDA(cudaMalloc(&a, count * 4));
      RANK_CUDA(cudaMalloc(&b, count * 4));
      RANK_CUDA(cudaMemset(a, 0xff, count * 4));
      RANK_CUDA(cudaMemset(b, 0xff, count * 4));
      std::vector<int32_t> got(count);
      // b = n^2 x (sum over the ranks of 10 r + 1 + i % 1000), from a chain of three.
      auto check_chain = [&](const char* what) {
        RANK_CUDA(cudaStreamSynchronize(s));
        RANK_CUDA(cudaMemcpy(got.data(), b, count * 4, cudaMemcpyDeviceToHost));
        const int32_t ranks = 5 * n * (n - 1) + n;
        for (size_t i = 0; i < count; ++i) {
          const int32_t want = (ranks + n * static_cast<int32_t>(i % 1000)) * n * n;
          RANK_CHECK(got[i] == want, "GICL_PDL=%s count %zu, %s: element %zu is %d, not %d", pdl,
                     count, what, i, got[i], want);
        }
        return 0;
      };
      late_fill<<<64, 256, 0, s>>>(a, count, 10 * me + 1, 200000);
      RANK_CUDA(cudaGetLastError());
      RANK_OK(gicl_allreduce(a, b, count, gicl_int32, gicl_sum, comm, s));
      RANK_OK(gicl_allreduce(b, b, count, gicl_int32, gicl_sum, comm, s));
      RANK_OK(gicl_allreduce(b, b, count, gicl_int32, gicl_sum, comm, s));
      if (check_chain("eager chain")) return 1;
      // The same chain captured between other node kinds (a memset before the late writer, a
      // copy between two collectives: PDL edges only join kernel to kernel), replayed twice.
      cudaGraph_t g;
      cudaGraphExec_t x;
      RANK_CUDA(cudaMemset(a, 0xff, count * 4));
      RANK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      RANK_CUDA(cudaMemsetAsync(b, 0xff, count * 4, s));
      late_fill<<<64, 256, 0, s>>>(a, count, 10 * me + 1, 200000);
      RANK_OK(gicl_allreduce(a, b, count, gicl_int32, gicl_sum, comm, s));
      RANK_OK(gicl_allreduce(b, b, count, gicl_int32, gicl_sum, comm, s));
      RANK_CUDA(cudaMemcpyAsync(a, b, count * 4, cudaMemcpyDeviceToDevice, s));
      RANK_OK(gicl_allreduce(a, b, count, gicl_int32, gicl_sum, comm, s));
      RANK_CUDA(cudaStreamEndCapture(s, &g));
      RANK_CUDA(cudaGraphInstantiate(&x, g, 0));
      for (int replay = 0; replay < 2; ++replay) {
        RANK_CUDA(cudaGraphLaunch(x, s));
        if (check_chain("graph replay")) return 1;
      }
      RANK_CUDA(cudaGraphExecDestroy(x));
      RANK_CUDA(cudaGraphDestroy(g));
      // Point to point after a late writer: each rank sends to the next.
      RANK_CUDA(cudaMemset(b, 0xff, count * 4));
      late_fill<<<64, 256, 0, s>>>(a, count, 7 * me, 200000);
      RANK_CUDA(cudaGetLastError());
      RANK_OK(gicl_group_start());
      RANK_OK(gicl_send(a, count, gicl_int32, (me + 1) % n, comm, s));
      RANK_OK(gicl_recv(b, count, gicl_int32, (me + n - 1) % n, comm, s));
      RANK_OK(gicl_group_end());
      RANK_CUDA(cudaStreamSynchronize(s));
      RANK_CUDA(cudaMemcpy(got.data(), b, count * 4, cudaMemcpyDeviceToHost));
      const int32_t prev = 7 * ((me + n - 1) % n);
      for (size_t i = 0; i < count; ++i)
        RANK_CHECK(got[i] == prev + static_cast<int32_t>(i % 1000),
                   "GICL_PDL=%s count %zu: received element %zu is %d", pdl, count, i, got[i]);
      RANK_CUDA(cudaFree(a));
      RANK_CUDA(cudaFree(b));
    }
    RANK_OK(gicl_comm_destroy(comm));
  }
  unsetenv("GICL_PDL");
  return 0;
}

}  // namespace gicl::test
