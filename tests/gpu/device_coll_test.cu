// SPDX-License-Identifier: Apache-2.0
// Device-side team collectives (gicl/device/coll.cuh) called from a test kernel at thread, warp
// and block scope, over the whole communicator and over a team, with 2 and 3 ranks (one per GPU
// where there are enough, else sharing them), over NVLink and with every peer on the network path
// (GICL_P2P_DISABLE=1, libfabric's tcp;ofi_rxm on loopback; a 16 KiB collective scratch, so the
// reductions stage in several pieces): every result checked against the host's, exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "gicl/device.cuh"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

using dev::Scope;

enum Which {
  kBroadcast,
  kFcollect,
  kAlltoall,
  kAllreduceSum,
  kAllreduceMax,
  kReduceScatter,
  kReduce,
  // Completion::kLocal (NVSHMEM's contract): the test puts a barrier before each of these.
  kBroadcastLocal,
  kFcollectLocal,
  kAlltoallLocal,
  kCount
};
const char* kNames[] = {"broadcast",       "fcollect",       "alltoall", "allreduce(sum)",
                        "allreduce(max)",  "reduce_scatter", "reduce",   "broadcast(local)",
                        "fcollect(local)", "alltoall(local)"};

/// The collective whose result a kLocal variant must produce.
int result_kind(int which) {
  return which == kBroadcastLocal  ? kBroadcast
         : which == kFcollectLocal ? kFcollect
         : which == kAlltoallLocal ? kAlltoall
                                   : which;
}

template <Scope S>
__global__ void run(gicl_device_comm_t c, gicl_device_team_t t, bool team, int which, float* dst,
                    const float* src, size_t count, int root, int* ok) {
  bool r = false;
  switch (which) {
    case kBroadcast:
      r = team ? dev::broadcast<S>(c, t, dst, src, count, root)
               : dev::broadcast<S>(c, dst, src, count, root);
      break;
    case kFcollect:
      r = team ? dev::fcollect<S>(c, t, dst, src, count) : dev::fcollect<S>(c, dst, src, count);
      break;
    case kAlltoall:
      r = team ? dev::alltoall<S>(c, t, dst, src, count) : dev::alltoall<S>(c, dst, src, count);
      break;
    case kAllreduceSum:
      r = team ? dev::allreduce<gicl_sum, S>(c, t, dst, src, count)
               : dev::allreduce<gicl_sum, S>(c, dst, src, count);
      break;
    case kAllreduceMax:
      r = team ? dev::allreduce<gicl_max, S>(c, t, dst, src, count)
               : dev::allreduce<gicl_max, S>(c, dst, src, count);
      break;
    case kReduceScatter:
      r = team ? dev::reduce_scatter<gicl_sum, S>(c, t, dst, src, count)
               : dev::reduce_scatter<gicl_sum, S>(c, dst, src, count);
      break;
    case kReduce:
      r = team ? dev::reduce<gicl_sum, S>(c, t, dst, src, count, root)
               : dev::reduce<gicl_sum, S>(c, dst, src, count, root);
      break;
    case kBroadcastLocal:
      r = team ? dev::broadcast<S, dev::Completion::kLocal>(c, t, dst, src, count, root)
               : dev::broadcast<S, dev::Completion::kLocal>(c, dst, src, count, root);
      break;
    case kFcollectLocal:
      r = team ? dev::fcollect<S, dev::Completion::kLocal>(c, t, dst, src, count)
               : dev::fcollect<S, dev::Completion::kLocal>(c, dst, src, count);
      break;
    default:
      r = team ? dev::alltoall<S, dev::Completion::kLocal>(c, t, dst, src, count)
               : dev::alltoall<S, dev::Completion::kLocal>(c, dst, src, count);
      break;
  }
  if (threadIdx.x == 0) *ok = r ? 1 : 0;
}

float input(int rank, size_t i) {
  return static_cast<float>((rank + 1) * 1000 + static_cast<int>(i % 997));
}

/// Expected dst of `rank` (n ranks; count per block where the collective has blocks).
std::vector<float> expect(int which, int rank, int n, size_t count, int root, size_t* elems) {
  which = result_kind(which);
  std::vector<float> out;
  auto sum = [&](size_t i) {
    float s = 0;
    for (int q = 0; q < n; ++q) s += input(q, i);
    return s;
  };
  switch (which) {
    case kBroadcast:
      for (size_t i = 0; i < count; ++i) out.push_back(input(root, i));
      break;
    case kFcollect:
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < count; ++i) out.push_back(input(q, i));
      break;
    case kAlltoall:
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < count; ++i) out.push_back(input(q, rank * count + i));
      break;
    case kAllreduceSum:
      for (size_t i = 0; i < count; ++i) out.push_back(sum(i));
      break;
    case kAllreduceMax:
      for (size_t i = 0; i < count; ++i) out.push_back(input(n - 1, i));
      break;
    case kReduceScatter:
      for (size_t i = 0; i < count; ++i) out.push_back(sum(rank * count + i));
      break;
    default:
      for (size_t i = 0; i < count; ++i) out.push_back(rank == root ? sum(i) : -1.0f);
      break;
  }
  *elems = out.size();
  return out;
}

struct Case {
  int ranks;
  const char* how;  // "": NVLink; "p2p_disable": every peer on the network path
};
std::string case_name(const ::testing::TestParamInfo<Case>& p) {
  return std::to_string(p.param.ranks) + (*p.param.how ? "_network" : "_nvlink");
}

/// Rank r of a case's n: the network path and a small collective scratch where the case asks.
int init_case(const Case& k, gicl_unique_id_t id, int r, gicl_comm_t* comm) {
  if (*k.how) {
    use_network_path(k.how, k.ranks, r);
    setenv("GICL_DEVICE_COLL_SCRATCH", "16384", 1);
    setenv("GICL_WAIT_TIMEOUT", "60000", 1);
  }
  if (init_on_gpu(id, k.ranks, r, comm)) return 1;
  if (*k.how) {
    // Every peer on the network path: this rank is alone in its node team.
    gicl_team_t node;
    int size = 0;
    RANK_OK(gicl_comm_get_team(*comm, GICL_TEAM_NODE, &node));
    RANK_OK(gicl_team_size(node, &size));
    RANK_CHECK(size == 1, "node team of %d with %s", size, k.how);
  }
  return 0;
}

class DeviceCollectives : public ::testing::TestWithParam<Case> {};

TEST_P(DeviceCollectives, EveryCollectiveAtEveryScope) {
  REQUIRE_GPUS(1);
  const int n = GetParam().ranks;
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(
      n,
      [&](int r) {
        gicl_comm_t comm;
        if (init_case(GetParam(), id, r, &comm)) return 1;
        gicl_device_comm_t dc;
        RANK_OK(gicl_comm_get_device_comm(comm, &dc));
        gicl_team_t world, all;
        RANK_OK(gicl_comm_get_team(comm, GICL_TEAM_WORLD, &world));
        RANK_OK(gicl_team_split_strided(world, 0, 1, n, &all));
        gicl_device_team_t dt;
        RANK_OK(gicl_team_get_device(all, &dt));
        const size_t count = 5000;
        float *src, *dst;
        RANK_OK(gicl_mem_alloc(comm, count * n * 4, reinterpret_cast<void**>(&src)));
        RANK_OK(gicl_mem_alloc(comm, count * n * 4, reinterpret_cast<void**>(&dst)));
        int* ok;
        RANK_CUDA(cudaMallocManaged(&ok, sizeof(int)));
        std::vector<float> h(count * n);
        for (size_t i = 0; i < h.size(); ++i) h[i] = input(r, i);
        for (int scope = 0; scope < 3; ++scope) {
          for (int team = 0; team < 2; ++team) {
            for (int which = 0; which < kCount; ++which) {
              const int root = (which + scope) % n;
              RANK_CUDA(cudaMemcpy(src, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
              std::vector<float> minus(count * n, -1.0f);
              RANK_CUDA(cudaMemcpy(dst, minus.data(), minus.size() * 4, cudaMemcpyHostToDevice));
              // A kLocal call writes into the peers' dst without waiting for them: every rank
              // must have checked its last result and reset dst first (the caller's duty).
              if (result_kind(which) != which) {
                RANK_OK(gicl_barrier_on_stream(comm, nullptr));
                RANK_CUDA(cudaDeviceSynchronize());
              }
              *ok = -1;
              if (scope == 0)
                run<Scope::kThread><<<1, 1>>>(dc, dt, team, which, dst, src, count, root, ok);
              if (scope == 1)
                run<Scope::kWarp><<<1, 32>>>(dc, dt, team, which, dst, src, count, root, ok);
              if (scope == 2)
                run<Scope::kBlock><<<1, 256>>>(dc, dt, team, which, dst, src, count, root, ok);
              RANK_CUDA(cudaGetLastError());
              RANK_CUDA(cudaDeviceSynchronize());
              RANK_CHECK(*ok == 1, "%s scope %d team %d: returned false", kNames[which], scope,
                         team);
              size_t elems;
              const std::vector<float> want = expect(which, r, n, count, root, &elems);
              std::vector<float> got(elems);
              RANK_CUDA(cudaMemcpy(got.data(), dst, elems * 4, cudaMemcpyDeviceToHost));
              for (size_t i = 0; i < elems; ++i)
                RANK_CHECK(got[i] == want[i], "%s scope %d team %d: element %zu is %f, expected %f",
                           kNames[which], scope, team, i, got[i], want[i]);
            }
          }
        }
        RANK_OK(gicl_team_destroy(all));
        RANK_OK(gicl_comm_destroy(comm));
        return 0;
      },
      300000);
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

template <typename T>
__global__ void run_typed(gicl_device_comm_t c, int which, T* dst, const T* src, size_t count,
                          int root, int* ok) {
  bool r = false;
  if (which == kAllreduceSum) r = dev::allreduce<gicl_sum, Scope::kBlock>(c, dst, src, count);
  if (which == kAllreduceMax) r = dev::allreduce<gicl_max, Scope::kBlock>(c, dst, src, count);
  if (which == kReduceScatter) r = dev::reduce_scatter<gicl_sum, Scope::kBlock>(c, dst, src, count);
  if (which == kReduce) r = dev::reduce<gicl_sum, Scope::kBlock>(c, dst, src, count, root);
  if (threadIdx.x == 0) *ok = r ? 1 : 0;
}

/// Small integers, so that every sum is exact in every type.
double small_input(int rank, size_t i) {
  return static_cast<double>(rank + 1 + i % 7);
}

/// The reductions of one element type, with counts below and above the pack path's threshold
/// (kPackedFrom: 300 elements of up to 4 bytes go element by element at block scope, 300
/// doubles and 3001 of anything in packs) that leave elements after the last 16-byte pack, and
/// with buffers that are (offset 0) or are not (offset 1 element) aligned to packs: the pack
/// path, its tail and the element path must all give the exact result.
template <typename T>
int typed_reductions(gicl_comm_t comm, int r, int n, const char* type) {
  gicl_device_comm_t dc;
  RANK_OK(gicl_comm_get_device_comm(comm, &dc));
  const size_t most = 3001, elems = most * n + 16;
  T *src, *dst;
  RANK_OK(gicl_mem_alloc(comm, elems * sizeof(T), reinterpret_cast<void**>(&src)));
  RANK_OK(gicl_mem_alloc(comm, elems * sizeof(T), reinterpret_cast<void**>(&dst)));
  int* ok;
  RANK_CUDA(cudaMallocManaged(&ok, sizeof(int)));
  std::vector<T> h(elems), got(elems);
  for (int step = 0; step < 4; ++step) {
    const size_t count = step < 2 ? 300 : most;
    const int offset = step % 2;
    for (size_t i = 0; i < elems; ++i) h[i] = T(static_cast<float>(small_input(r, i)));
    for (int which : {kAllreduceSum, kAllreduceMax, kReduceScatter, kReduce}) {
      const int root = offset % n;
      RANK_CUDA(cudaMemcpy(src, h.data(), elems * sizeof(T), cudaMemcpyHostToDevice));
      RANK_CUDA(cudaMemset(dst, 0, elems * sizeof(T)));
      *ok = -1;
      run_typed<T><<<1, 256>>>(dc, which, dst + offset, src + offset, count, root, ok);
      RANK_CUDA(cudaGetLastError());
      RANK_CUDA(cudaDeviceSynchronize());
      RANK_CHECK(*ok == 1, "%s %s count %zu offset %d: returned false", type, kNames[which], count,
                 offset);
      RANK_CUDA(cudaMemcpy(got.data(), dst + offset, count * sizeof(T), cudaMemcpyDeviceToHost));
      if (which == kReduce && r != root) continue;
      for (size_t i = 0; i < count; ++i) {
        // Element i of this rank's result reduces element `from` of every rank's input.
        const size_t from = offset + (which == kReduceScatter ? r * count + i : i);
        double want = 0;
        for (int q = 0; q < n; ++q)
          want = which == kAllreduceMax ? std::max(want, small_input(q, from))
                                        : want + small_input(q, from);
        // One rounding to T at the end (fp8 holds integers exactly only up to 16).
        want = static_cast<float>(T(static_cast<float>(want)));
        const double have = static_cast<double>(static_cast<float>(got[i]));
        RANK_CHECK(have == want, "%s %s count %zu offset %d: element %zu is %f, expected %f", type,
                   kNames[which], count, offset, i, have, want);
      }
    }
  }
  RANK_CUDA(cudaFree(ok));
  RANK_OK(gicl_mem_free(comm, src));
  RANK_OK(gicl_mem_free(comm, dst));
  return 0;
}

TEST_P(DeviceCollectives, ReductionsOfEveryWidthAlignedOrNot) {
  REQUIRE_GPUS(1);
  const int n = GetParam().ranks;
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(
      n,
      [&](int r) {
        gicl_comm_t comm;
        if (init_case(GetParam(), id, r, &comm)) return 1;
        if (typed_reductions<__nv_fp8_e4m3>(comm, r, n, "fp8_e4m3") ||
            typed_reductions<__half>(comm, r, n, "float16") ||
            typed_reductions<float>(comm, r, n, "float32") ||
            typed_reductions<double>(comm, r, n, "float64"))
          return 1;
        RANK_OK(gicl_comm_destroy(comm));
        return 0;
      },
      300000);
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceCollectives,
                         ::testing::Values(Case{2, ""}, Case{3, ""}, Case{2, "p2p_disable"},
                                           Case{3, "p2p_disable"}),
                         case_name);

}  // namespace
}  // namespace gicl::test
