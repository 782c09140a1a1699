// SPDX-License-Identifier: Apache-2.0
// The drop-in libnccl.so.2 on GPUs, through NCCL's entry points alone: PreMulSum reductions
// (each rank's input times its own scalar, then summed) with device and host scalars, for
// allreduce in and out of place, reduce_scatter and reduce, on integer, half, bfloat16 and float
// types, and two in one group on one stream; every element exact.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mp/fork_ranks.hpp"
#include "shim/nccl/nccl_abi.h"

typedef struct ncclComm* ncclComm_t;
extern "C" {
ncclResult_t ncclGetUniqueId(ncclUniqueId*);
ncclResult_t ncclCommInitRank(ncclComm_t*, int, ncclUniqueId, int);
ncclResult_t ncclCommDestroy(ncclComm_t);
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();
ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                           cudaStream_t);
ncclResult_t ncclReduceScatter(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                               cudaStream_t);
ncclResult_t ncclReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                        cudaStream_t);
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t*, void*, ncclDataType_t, int, ncclComm_t);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t, ncclComm_t);
const char* ncclGetLastError(ncclComm_t);
}

namespace {

using gicl::test::fork_ranks;

// Counted in a child, so that the test process never initialises CUDA before it forks ranks.
int visible_gpus() {
  static int n = -1;
  if (n < 0)
    n = fork_ranks(1,
                   [](int) {
                     int c = 0;
                     return cudaGetDeviceCount(&c) == cudaSuccess ? std::min(c, 100) : 0;
                   })[0]
            .code;
  return n;
}

#define REQUIRE_GPUS(k)     \
  if (visible_gpus() < (k)) \
  GTEST_SKIP() << "needs " << (k) << " GPUs; " << visible_gpus() << " visible"

#define RANK_CUDA(expr)                                                     \
  do {                                                                      \
    cudaError_t e_ = (expr);                                                \
    RANK_CHECK(e_ == cudaSuccess, "%s: %s", #expr, cudaGetErrorString(e_)); \
  } while (0)

#define NCCL_OK(expr)                                                                \
  do {                                                                               \
    const ncclResult_t r_ = (expr);                                                  \
    RANK_CHECK(r_ == ncclSuccess, "%s returned %d: %s", #expr, static_cast<int>(r_), \
               ncclGetLastError(nullptr));                                           \
  } while (0)

constexpr int kRanks = 2;
constexpr size_t kCount = 3 * 1024 + 5;

// Small integers, exact in every type here: x(r, i) = (i % 5) + r, scalar(r) = r + 2.
double x_of(int r, size_t i) {
  return static_cast<double>(i % 5 + r);
}
double scalar_of(int r) {
  return r + 2;
}
double premul_sum(size_t i) {
  double s = 0;
  for (int r = 0; r < kRanks; ++r) s += scalar_of(r) * x_of(r, i);
  return s;
}

template <typename T>
T to(double v) {
  return T(static_cast<float>(v));
}
template <>
int32_t to<int32_t>(double v) {
  return static_cast<int32_t>(v);
}
template <>
uint8_t to<uint8_t>(double v) {
  return static_cast<uint8_t>(v);
}
template <typename T>
double from(T v) {
  return static_cast<double>(static_cast<float>(v));
}
template <>
double from<int32_t>(int32_t v) {
  return v;
}
template <>
double from<uint8_t>(uint8_t v) {
  return v;
}

/// One rank: PreMulSum allreduce (device scalar, in and out of place), reduce_scatter (host
/// scalar), reduce to rank 1 (device scalar), and two reduce_scatters in one group.
template <typename T>
int premul_rank(int me, const ncclUniqueId& id, ncclDataType_t type) {
  RANK_CUDA(cudaSetDevice(me));
  ncclComm_t comm = nullptr;
  NCCL_OK(ncclCommInitRank(&comm, kRanks, id, me));
  cudaStream_t stream;
  RANK_CUDA(cudaStreamCreate(&stream));
  const size_t n = kCount / kRanks * kRanks;  // whole blocks for reduce_scatter
  std::vector<T> in(n), out(n);
  for (size_t i = 0; i < n; ++i) in[i] = to<T>(x_of(me, i));
  T *d_in, *d_out, *d_scalar;
  RANK_CUDA(cudaMalloc(&d_in, n * sizeof(T)));
  RANK_CUDA(cudaMalloc(&d_out, n * sizeof(T)));
  RANK_CUDA(cudaMalloc(&d_scalar, sizeof(T)));
  const T scalar = to<T>(scalar_of(me));
  RANK_CUDA(cudaMemcpy(d_scalar, &scalar, sizeof(T), cudaMemcpyHostToDevice));
  ncclRedOp_t on_device, on_host;
  NCCL_OK(ncclRedOpCreatePreMulSum(&on_device, d_scalar, type, 0, comm));
  T host_scalar = scalar;
  NCCL_OK(ncclRedOpCreatePreMulSum(&on_host, &host_scalar, type, 1, comm));
  host_scalar = to<T>(100);  // a host immediate is read at creation, not later
  auto load = [&] { return cudaMemcpy(d_in, in.data(), n * sizeof(T), cudaMemcpyHostToDevice); };
  auto fetch = [&](T* p, size_t count) {
    return cudaMemcpy(out.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost);
  };
  auto expect = [&](const char* what, size_t count, size_t first) {
    for (size_t i = 0; i < count; ++i)
      if (from(out[i]) != premul_sum(first + i)) {
        std::fprintf(stderr, "%s: rank %d element %zu is %g, expected %g\n", what, me, first + i,
                     from(out[i]), premul_sum(first + i));
        return false;
      }
    return true;
  };
  // Allreduce out of place; the input is left as it was.
  RANK_CUDA(load());
  NCCL_OK(ncclAllReduce(d_in, d_out, n, type, on_device, comm, stream));
  RANK_CUDA(cudaStreamSynchronize(stream));
  RANK_CUDA(fetch(d_out, n));
  RANK_CHECK(expect("allreduce", n, 0), "allreduce out of place");
  RANK_CUDA(fetch(d_in, n));
  RANK_CHECK(std::memcmp(out.data(), in.data(), n * sizeof(T)) == 0, "the input changed");
  // In place.
  NCCL_OK(ncclAllReduce(d_in, d_in, n, type, on_host, comm, stream));
  RANK_CUDA(cudaStreamSynchronize(stream));
  RANK_CUDA(fetch(d_in, n));
  RANK_CHECK(expect("allreduce in place", n, 0), "allreduce in place");
  // Reduce-scatter: this rank's block.
  const size_t block = n / kRanks;
  RANK_CUDA(load());
  NCCL_OK(ncclReduceScatter(d_in, d_out, block, type, on_host, comm, stream));
  RANK_CUDA(cudaStreamSynchronize(stream));
  RANK_CUDA(fetch(d_out, block));
  RANK_CHECK(expect("reduce_scatter", block, me * block), "reduce_scatter");
  // Reduce to rank 1; rank 0's receive buffer is not written.
  RANK_CUDA(cudaMemset(d_out, 0x5a, n * sizeof(T)));
  NCCL_OK(ncclReduce(d_in, d_out, n, type, on_device, 1, comm, stream));
  RANK_CUDA(cudaStreamSynchronize(stream));
  RANK_CUDA(fetch(d_out, n));
  if (me == 1) {
    RANK_CHECK(expect("reduce", n, 0), "reduce");
  } else {
    for (size_t i = 0; i < n * sizeof(T); ++i)
      RANK_CHECK(reinterpret_cast<uint8_t*>(out.data())[i] == 0x5a,
                 "reduce: a non-root's receive buffer was written at byte %zu", i);
  }
  // Two in one group on one stream: each reads its own products.
  T* d_out2;
  RANK_CUDA(cudaMalloc(&d_out2, n * sizeof(T)));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclReduceScatter(d_in, d_out, block, type, on_device, comm, stream));
  NCCL_OK(ncclAllReduce(d_in, d_out2, n, type, on_host, comm, stream));
  NCCL_OK(ncclGroupEnd());
  RANK_CUDA(cudaStreamSynchronize(stream));
  RANK_CUDA(fetch(d_out, block));
  RANK_CHECK(expect("grouped reduce_scatter", block, me * block), "grouped reduce_scatter");
  RANK_CUDA(fetch(d_out2, n));
  RANK_CHECK(expect("grouped allreduce", n, 0), "grouped allreduce");
  NCCL_OK(ncclRedOpDestroy(on_device, comm));
  NCCL_OK(ncclRedOpDestroy(on_host, comm));
  NCCL_OK(ncclCommDestroy(comm));
  return 0;
}

template <typename T>
void run_premul(ncclDataType_t type) {
  REQUIRE_GPUS(kRanks);
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
  const auto rc = fork_ranks(kRanks, [&](int me) { return premul_rank<T>(me, id, type); });
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(rc[r].code, 0) << "rank " << r;
}

TEST(NcclShimPreMulSum, Float32) {
  run_premul<float>(ncclFloat32);
}
TEST(NcclShimPreMulSum, Float16) {
  run_premul<__half>(ncclFloat16);
}
TEST(NcclShimPreMulSum, Bfloat16) {
  run_premul<__nv_bfloat16>(ncclBfloat16);
}
TEST(NcclShimPreMulSum, Int32) {
  run_premul<int32_t>(ncclInt32);
}
TEST(NcclShimPreMulSum, Uint8) {
  run_premul<uint8_t>(ncclUint8);
}

}  // namespace
