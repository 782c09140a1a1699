// ccl_allreduce on real GPUs, 2 and 4 processes: every type x every reduction, in place and out of
// place, ordinary and symmetric send buffers, counts from 1 element to several staging pieces,
// poisoned outputs, bitwise comparison with the host's canonical-order reduction, run-to-run
// bitwise determinism, CUDA graph capture and replay, and argument checks.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "ccl/ccl.h"
#include "collectives/common/dtypes.cuh"
#include "gpu/gpu_ranks.cuh"

namespace ccl::test {
namespace {

using coll::DType;

// Inputs exact in every type (small integers), the same on every rank's view of every rank.
template <ccl_datatype_t D>
std::vector<typename DType<D>::Storage> input(uint32_t seed, int rank, size_t count) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  std::mt19937 rng(seed * 7919u + rank);
  std::vector<T> v(count);
  const bool is_unsigned = D == ccl_uint8 || D == ccl_uint32 || D == ccl_uint64;
  for (auto& x : v) {
    const int k = static_cast<int>(rng() % 7);
    x = coll::from_acc<T, A>(static_cast<A>(is_unsigned ? k / 2 : k - 3));
  }
  return v;
}

template <ccl_datatype_t D, ccl_redop_t Op>
int check_case(ccl_comm_t comm, int rank, int n, size_t count, bool in_place, bool symmetric,
               uint32_t seed, cudaStream_t s) {
  using T = typename DType<D>::Storage;
  std::vector<std::vector<T>> all(n);
  for (int r = 0; r < n; ++r) all[r] = input<D>(seed, r, count);
  std::vector<const T*> ptrs(n);
  for (int r = 0; r < n; ++r) ptrs[r] = all[r].data();
  std::vector<T> want(count);
  for (size_t i = 0; i < count; ++i) want[i] = coll::reduce_canonical<D, Op>(ptrs.data(), n, i);

  const size_t bytes = count * sizeof(T);
  T *send = nullptr, *recv = nullptr;
  if (symmetric) {
    RANK_OK(ccl_mem_alloc(comm, bytes, reinterpret_cast<void**>(&send)));
  } else {
    RANK_CUDA(cudaMalloc(&send, bytes));
  }
  if (in_place) recv = send;
  else RANK_CUDA(cudaMalloc(&recv, bytes));
  std::vector<T> got(count);
  for (int rep = 0; rep < 2; ++rep) {  // twice: results must be bitwise identical run to run
    RANK_CUDA(cudaMemcpy(send, all[rank].data(), bytes, cudaMemcpyHostToDevice));
    if (!in_place) RANK_CUDA(cudaMemset(recv, 0x7b, bytes));  // poison
    RANK_OK(ccl_allreduce(send, recv, count, D, Op, comm, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(got.data(), recv, bytes, cudaMemcpyDeviceToHost));
    size_t wrong = 0, first = count;
    for (size_t i = 0; i < count; ++i)
      if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) wrong++, first = std::min(first, i);
    RANK_CHECK(wrong == 0, "%s %s count %zu %s %s: %zu of %zu wrong (first at %zu)",
               coll::dtype_name(D), coll::redop_name(Op), count, in_place ? "in place" : "out of place",
               symmetric ? "symmetric" : "cudaMalloc", wrong, count, first);
  }
  if (symmetric) {
    RANK_OK(ccl_mem_free(comm, send));
  } else {
    RANK_CUDA(cudaFree(send));
  }
  if (!in_place) RANK_CUDA(cudaFree(recv));
  return 0;
}

template <ccl_datatype_t D>
int check_type(ccl_comm_t comm, int rank, int n, uint32_t seed, cudaStream_t s) {
  const size_t counts[] = {1, 7, 1000, 70001, 700003};  // 700003 floats: several 1 MiB pieces
  for (size_t count : counts) {
    for (int variant = 0; variant < 3; ++variant) {
      const bool in_place = variant == 1, symmetric = variant == 2;
      if (count == 700003 && variant == 2) continue;  // symmetric buffers skip staging anyway
      int rc = check_case<D, ccl_sum>(comm, rank, n, count, in_place, symmetric, seed, s) ||
               check_case<D, ccl_prod>(comm, rank, n, count, in_place, symmetric, seed + 1, s) ||
               check_case<D, ccl_min>(comm, rank, n, count, in_place, symmetric, seed + 2, s) ||
               check_case<D, ccl_max>(comm, rank, n, count, in_place, symmetric, seed + 3, s) ||
               check_case<D, ccl_avg>(comm, rank, n, count, in_place, symmetric, seed + 4, s);
      if (rc) return rc;
      if (count >= 70001) break;  // large counts: one variant is enough per type
    }
  }
  return 0;
}

int check_graph(ccl_comm_t comm, int rank, int n, cudaStream_t s) {
  const size_t count = 4096;
  float *buf = nullptr, *out = nullptr;
  RANK_CUDA(cudaMalloc(&buf, count * 4));
  RANK_CUDA(cudaMalloc(&out, count * 4));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  RANK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < 3; ++k) RANK_OK(ccl_allreduce(buf, out, count, ccl_float32, ccl_sum, comm, s));
  RANK_CUDA(cudaStreamEndCapture(s, &graph));
  RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<float> h(count), got(count);
  for (int replay = 1; replay <= 5; ++replay) {
    for (size_t i = 0; i < count; ++i) h[i] = static_cast<float>((rank + 1) * replay + static_cast<int>(i % 5));
    RANK_CUDA(cudaMemcpy(buf, h.data(), count * 4, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemset(out, 0, count * 4));
    RANK_CUDA(cudaGraphLaunch(exec, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(got.data(), out, count * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) {
      const float want = static_cast<float>(n * (n + 1) / 2 * replay + n * static_cast<int>(i % 5));
      RANK_CHECK(got[i] == want, "graph replay %d element %zu: %f, expected %f", replay, i, got[i], want);
    }
  }
  RANK_CUDA(cudaGraphExecDestroy(exec));
  RANK_CUDA(cudaGraphDestroy(graph));
  RANK_CUDA(cudaFree(buf));
  RANK_CUDA(cudaFree(out));
  return 0;
}

class AllReduce : public ::testing::TestWithParam<int> {};

TEST_P(AllReduce, EveryTypeAndReduction) {
  REQUIRE_GPUS(1);
  const int n = GetParam();
  ccl_unique_id_t id;
  ASSERT_EQ(ccl_get_unique_id(&id), CCL_SUCCESS);
  const uint32_t seed = std::random_device{}();
  auto results = fork_ranks(n, [&](int r) {
    setenv("CCL_COLL_SCRATCH_SIZE", "1M", 1);
    ccl_comm_t comm;
    if (init_on_gpu(id, n, r, &comm)) return 1;
    cudaStream_t s;
    RANK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
#define CCL_CHECK_TYPE(e, T, A, name) \
  if (check_type<e>(comm, r, n, seed, s)) return 2;
    CCL_FOR_EACH_DTYPE(CCL_CHECK_TYPE)
#undef CCL_CHECK_TYPE
    if (check_graph(comm, r, n, s)) return 3;
    // Bad arguments: refused, nothing enqueued.
    float* d = nullptr;
    RANK_CUDA(cudaMalloc(&d, 64));
    RANK_CHECK(ccl_allreduce(nullptr, d, 4, ccl_float32, ccl_sum, comm, s) == CCL_INVALID_ARGUMENT, "null send");
    RANK_CHECK(ccl_allreduce(d, nullptr, 4, ccl_float32, ccl_sum, comm, s) == CCL_INVALID_ARGUMENT, "null recv");
    RANK_CHECK(ccl_allreduce(d, d, 4, static_cast<ccl_datatype_t>(99), ccl_sum, comm, s) == CCL_INVALID_ARGUMENT, "dtype");
    RANK_CHECK(ccl_allreduce(d, d, 4, ccl_float32, static_cast<ccl_redop_t>(99), comm, s) == CCL_INVALID_ARGUMENT, "op");
    RANK_CHECK(ccl_allreduce(d, d, SIZE_MAX / 2, ccl_float32, ccl_sum, comm, s) == CCL_INVALID_ARGUMENT, "overflow");
    ccl_result_t async;
    RANK_OK(ccl_comm_get_async_error(comm, &async, nullptr));
    RANK_CHECK(async == CCL_SUCCESS, "communicator in error");
    RANK_OK(ccl_comm_destroy(comm));
    return 0;
  }, 300000);
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r << " (seed " << seed << ")";
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllReduce, ::testing::Values(2, 4));

}  // namespace
}  // namespace ccl::test
