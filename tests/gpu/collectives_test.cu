// Every collective on real GPUs, 2 processes on 2 GPUs, 3 to 8 ranks sharing them, and one rank
// (a copy unless CCL_ALGO forces the general kernels): every
// algorithm (CCL_ALGO) x every type x every reduction, in place and out of place, ordinary and
// symmetric buffers, unaligned offsets, counts from 1 element to several staging pieces,
// poisoned outputs, bitwise comparison with the host's reference, run-to-run determinism,
// cross-algorithm identity under CCL_DETERMINISTIC=1, CUDA graph capture and replay, 10^4 mixed
// back-to-back calls, stream order under programmatic dependent launch, send/recv in groups (LL,
// FIFO and rendezvous paths), argument checks, and a rank that stops calling (its peer's timeout
// report names it).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ccl/ccl.h"
#include "collectives/common/coll_args.h"
#include "collectives/common/names.hpp"
#include "collectives/host/coll_state.hpp"
#include "collectives/schedule/p2p.hpp"
#include "core/comm.hpp"
#include "gpu/coll_reference.hpp"
#include "gpu/gpu_ranks.cuh"
#include "gpu/late_writer.cuh"

namespace ccl::test {
namespace {

ccl_result_t call(ccl_comm_t comm, Collective c, const void* send, void* recv, size_t count,
                  ccl_datatype_t d, ccl_redop_t op, int root, cudaStream_t s) {
  switch (c) {
    case Collective::kAllReduce:
      return ccl_allreduce(send, recv, count, d, op, comm, s);
    case Collective::kReduceScatter:
      return ccl_reduce_scatter(send, recv, count, d, op, comm, s);
    case Collective::kAllGather:
      return ccl_allgather(send, recv, count, d, comm, s);
    case Collective::kBroadcast:
      return ccl_broadcast(send, recv, count, d, root, comm, s);
    case Collective::kReduce:
      return ccl_reduce(send, recv, count, d, op, root, comm, s);
    case Collective::kAllToAll:
      return ccl_alltoall(send, recv, count, d, comm, s);
  }
  return CCL_INTERNAL_ERROR;
}

// kRegistered: cudaMalloc memory registered with ccl_comm_register (zero copy through IPC).
enum class Mem { kDevice, kInPlace, kSymmetric, kRegistered };

struct Case {
  Collective coll;
  ccl_redop_t op;
  int root;
  size_t count;
  Mem mem;
  size_t offset;  // elements past an aligned address (unaligned buffers)
  bool exact;
  uint32_t seed;
};

/// Runs one case twice and compares bitwise with the reference (and run 2 with run 1).
template <ccl_datatype_t D>
int run_case(ccl_comm_t comm, int me, int n, const Case& k, cudaStream_t s, const char* label) {
  using T = typename DType<D>::Storage;
  size_t se, re;
  coll_elems(k.coll, k.count, n, &se, &re);
  std::vector<std::vector<T>> in(n);
  for (int r = 0; r < n; ++r) in[r] = make_input<D>(k.seed, r, se, k.op, k.exact);
  const std::vector<T> want = reference<D>(k.coll, k.op, k.root, me, n, k.count, in);
  const bool root_only = k.coll == Collective::kReduce;
  const bool check = !root_only || me == k.root;

  // One allocation holds both buffers (or one, in place) past `offset` elements.
  const size_t off = k.offset;
  const size_t bytes = (off + se + re + 64) * sizeof(T);
  T* base = nullptr;
  if (k.mem == Mem::kSymmetric) {
    RANK_OK(ccl_mem_alloc(comm, bytes, reinterpret_cast<void**>(&base)));
  } else {
    RANK_CUDA(cudaMalloc(&base, bytes));
  }
  void* reg = nullptr;
  if (k.mem == Mem::kRegistered) RANK_OK(ccl_comm_register(comm, base, bytes, &reg));
  T *send = base + off, *recv = base + off + se + 16;
  if (k.mem == Mem::kInPlace) {
    // NCCL's in-place conventions.
    if (k.coll == Collective::kReduceScatter) {
      recv = send + me * k.count;
    } else if (k.coll == Collective::kAllGather) {
      recv = base + off;
      send = recv + me * k.count;
    } else {
      recv = send;
    }
  }
  // NCCL's contract: a broadcast's sendbuff and a reduce's recvbuff matter at the root only. Half
  // of the ordinary-buffer cases pass NULL there at the other ranks.
  const bool null_unused = k.mem == Mem::kDevice && me != k.root && (k.seed & 1) != 0;
  T* call_send = null_unused && k.coll == Collective::kBroadcast ? nullptr : send;
  T* call_recv = null_unused && k.coll == Collective::kReduce ? nullptr : recv;
  std::vector<T> got(re), first(re);
  for (int rep = 0; rep < 2; ++rep) {
    RANK_CUDA(cudaMemset(base, 0x7b, bytes));  // poison
    RANK_CUDA(cudaMemcpy(send, in[me].data(), se * sizeof(T), cudaMemcpyHostToDevice));
    RANK_OK(call(comm, k.coll, call_send, call_recv, k.count, D, k.op, k.root, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(got.data(), recv, re * sizeof(T), cudaMemcpyDeviceToHost));
    if (check) {
      size_t wrong = 0, at = re;
      for (size_t i = 0; i < re; ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) wrong++, at = std::min(at, i);
      unsigned long long g = 0, w = 0;
      if (wrong) {
        std::memcpy(&g, &got[at], sizeof(T));
        std::memcpy(&w, &want[at], sizeof(T));
      }
      RANK_CHECK(wrong == 0,
                 "[%s] %s %s %s count %zu root %d %s offset %zu run %d: %zu of %zu wrong (first "
                 "at %zu: 0x%llx, expected 0x%llx)",
                 label, coll::collective_name(k.coll), coll::dtype_name(D),
                 reduces(k.coll) ? coll::redop_name(k.op) : "-", k.count, k.root,
                 k.mem == Mem::kInPlace      ? "in place"
                 : k.mem == Mem::kSymmetric  ? "symmetric"
                 : k.mem == Mem::kRegistered ? "registered"
                                             : "device",
                 off, rep, wrong, re, at, g, w);
      if (rep == 1)
        RANK_CHECK(std::memcmp(got.data(), first.data(), re * sizeof(T)) == 0,
                   "[%s] %s: run 2 differs from run 1", label, coll::collective_name(k.coll));
      first = got;
    }
  }
  if (reg != nullptr) RANK_OK(ccl_comm_deregister(comm, reg));
  if (k.mem == Mem::kSymmetric) {
    RANK_OK(ccl_mem_free(comm, base));
  } else {
    RANK_CUDA(cudaFree(base));
  }
  return 0;
}

int run_case_any(ccl_comm_t comm, int me, int n, ccl_datatype_t d, const Case& k, cudaStream_t s,
                 const char* label) {
  switch (d) {
#define CCL_CASE(e, T, A, name) \
  case e:                       \
    return run_case<e>(comm, me, n, k, s, label);
    CCL_FOR_EACH_DTYPE(CCL_CASE)
#undef CCL_CASE
    default:
      return 99;
  }
}

/// The matrix of one collective under the current algorithm settings.
int matrix(ccl_comm_t comm, int me, int n, Collective c, uint32_t seed, cudaStream_t s,
           const char* label, bool full) {
  // 70001 x n elements of 8 bytes pass the 1 MiB staging several times.
  const size_t counts[] = {1, 7, 1000, 70001};
  const ccl_redop_t ops[] = {ccl_sum, ccl_prod, ccl_min, ccl_max, ccl_avg};
  for (int d = 0; d < ccl_num_datatypes; ++d) {
    // Ranks sharing a GPU time-slice it (every call costs milliseconds): beyond 2 ranks, one type
    // of each size and class.
    if (n > 2 && d != ccl_int8 && d != ccl_float16 && d != ccl_float32 && d != ccl_uint64) continue;
    // Beyond 4 ranks (8 share two GPUs, or one): a float and an integer type, two sizes.
    if (n > 4 && d != ccl_int8 && d != ccl_float32) continue;
    for (size_t ci = 0; ci < 4; ++ci) {
      if (n > 2 && (ci == 0 || ci == 2) && d != ccl_float32) continue;
      if (n > 4 && (ci == 0 || ci == 2)) continue;
      const size_t count = counts[ci];
      for (int m = 0; m < 4; ++m) {
        if (!full && m != 0 && ci != 2) continue;
        if (n > 4 && m != 0 && m != 2) continue;
        for (int oi = 0; oi < (reduces(c) ? 5 : 1); ++oi) {
          if (!full && oi > 0 && ci == 3) continue;
          if (n > 4 && oi != 0 && oi != 4) continue;
          Case k{c,
                 ops[oi],
                 static_cast<int>((seed + count) % n),
                 count,
                 static_cast<Mem>(m),
                 (count % 3 == 1 && m != 1) ? size_t{1} : size_t{0},
                 true,
                 seed++};
          if (run_case_any(comm, me, n, static_cast<ccl_datatype_t>(d), k, s, label)) return 1;
        }
      }
    }
  }
  return 0;
}

/// A communicator that reads the current environment (the tuner reads it at the first call).
int fresh_comm(ccl_comm_t world, int me, ccl_comm_t* out) {
  RANK_OK(ccl_comm_split(world, 0, me, out));
  return 0;
}

struct AlgoConfig {
  const char* algo;  // CCL_ALGO
  const char* proto;
  std::vector<Collective> colls;
  bool nvls_emulate = false;
};

int algorithms(ccl_comm_t world, int me, int n, uint32_t seed, cudaStream_t s) {
  using C = Collective;
  const std::vector<AlgoConfig> configs = {
      {"",
       "AUTO",
       {C::kAllReduce, C::kReduceScatter, C::kAllGather, C::kBroadcast, C::kReduce, C::kAllToAll}},
      {"allreduce:one_shot", "LL", {C::kAllReduce}},
      {"allreduce:one_shot", "SIMPLE", {C::kAllReduce}},
      {"allreduce:one_shot", "LL128", {C::kAllReduce}},
      {"allreduce:two_shot", "AUTO", {C::kAllReduce}},
      {"ring", "AUTO", {C::kAllReduce, C::kReduceScatter, C::kAllGather, C::kBroadcast}},
      {"recursive_doubling", "AUTO", {C::kAllReduce, C::kAllGather}},
      {"rabenseifner", "AUTO", {C::kAllReduce}},
      {"direct",
       "AUTO",
       {C::kReduceScatter, C::kAllGather, C::kBroadcast, C::kReduce, C::kAllToAll}},
      {"direct",
       "LL128",
       {C::kReduceScatter, C::kAllGather, C::kBroadcast, C::kReduce, C::kAllToAll}},
      // Symmetric and registered receive buffers through the copy engines; the others (cudaMalloc,
      // in place) fall back to the SM kernels on every rank.
      {"copy_engine", "AUTO", {C::kAllGather, C::kBroadcast, C::kAllToAll}},
      // NVLS in its emulated mode only: multicast must stay off on shared machines.
      {"allreduce:nvls,allgather:nvls", "AUTO", {C::kAllReduce, C::kAllGather}, true},
  };
  // Debugging: one algorithm (CCL_TEST_ALGO) and/or one protocol (CCL_TEST_PROTO).
  const char* only = std::getenv("CCL_TEST_ALGO");
  const char* only_proto = std::getenv("CCL_TEST_PROTO");
  for (const AlgoConfig& cfg : configs) {
    if (only != nullptr && std::strcmp(only, cfg.algo) != 0) continue;
    if (only_proto != nullptr && std::strcmp(only_proto, cfg.proto) != 0) continue;
    setenv("CCL_ALGO", cfg.algo, 1);
    setenv("CCL_PROTO", cfg.proto, 1);
    setenv("CCL_NVLS_EMULATE", cfg.nvls_emulate ? "1" : "0", 1);
    ccl_comm_t comm;
    if (fresh_comm(world, me, &comm)) return 1;
    std::string label = std::string(cfg.algo[0] ? cfg.algo : "tuner") + "/" + cfg.proto;
    for (Collective c : cfg.colls)
      if (matrix(comm, me, n, c, seed, s, label.c_str(), cfg.algo[0] == 0 || c == C::kAllReduce))
        return 1;
    // LL128 at its rows' capacity: every block of the grid walks several line groups per warp.
    if (std::strcmp(cfg.proto, "LL128") == 0)
      for (Collective c : cfg.colls) {
        const size_t block = coll::ll128_capacity(n) / 4 - 3;  // float32 elements, a ragged tail
        Case k{c, ccl_sum, 1 % n, block, Mem::kSymmetric, 0, true, seed++};
        if (run_case_any(comm, me, n, ccl_float32, k, s, label.c_str())) return 1;
      }
    RANK_OK(ccl_comm_destroy(comm));
  }
  unsetenv("CCL_ALGO");
  unsetenv("CCL_PROTO");
  return 0;
}

/// CCL_DETERMINISTIC=1: random (inexact) inputs reduce to the canonical result bitwise under
/// every allreduce algorithm and for sizes that pick different protocols.
int deterministic(ccl_comm_t world, int me, int n, uint32_t seed, cudaStream_t s) {
  setenv("CCL_DETERMINISTIC", "1", 1);
  for (const char* algo :
       {"allreduce:one_shot", "allreduce:two_shot", "ring", "recursive_doubling", "rabenseifner"}) {
    setenv("CCL_ALGO", algo, 1);
    ccl_comm_t comm;
    if (fresh_comm(world, me, &comm)) return 1;
    for (size_t count : {size_t{5}, size_t{4099}, size_t{300001}})
      for (ccl_datatype_t d : {ccl_float32, ccl_bfloat16, ccl_float16, ccl_float8_e4m3})
        for (ccl_redop_t op : {ccl_sum, ccl_avg}) {
          Case k{Collective::kAllReduce, op, 0, count, Mem::kDevice, 0, false, seed};
          if (run_case_any(comm, me, n, d, k, s, algo)) return 1;
        }
    Case rs{Collective::kReduceScatter, ccl_sum, 0, 4099, Mem::kDevice, 0, false, seed};
    if (std::strcmp(algo, "ring") == 0 && run_case_any(comm, me, n, ccl_float32, rs, s, algo))
      return 1;
    RANK_OK(ccl_comm_destroy(comm));
  }
  unsetenv("CCL_ALGO");
  unsetenv("CCL_DETERMINISTIC");
  return 0;
}

/// Every collective captured into one graph, replayed with new inputs each time. The communicator
/// is new: its first collective (which sets up the scratch) is captured too, in the strictest
/// capture mode.
int graphs(ccl_comm_t world, int me, int n, cudaStream_t s) {
  ccl_comm_t comm;
  if (fresh_comm(world, me, &comm)) return 1;
  const size_t count = 3000;
  const Collective colls[] = {Collective::kAllReduce, Collective::kReduceScatter,
                              Collective::kAllGather, Collective::kBroadcast,
                              Collective::kReduce,    Collective::kAllToAll};
  std::vector<float*> send(6), recv(6);
  for (int i = 0; i < 6; ++i) {
    RANK_CUDA(cudaMalloc(&send[i], count * n * 4));
    RANK_CUDA(cudaMalloc(&recv[i], count * n * 4));
  }
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  RANK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 6; ++i)
    RANK_OK(call(comm, colls[i], send[i], recv[i], count, ccl_float32, ccl_sum, 1 % n, s));
  RANK_CUDA(cudaStreamEndCapture(s, &graph));
  RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 4; ++replay) {
    std::vector<std::vector<std::vector<float>>> in(6);
    for (int i = 0; i < 6; ++i) {
      size_t se, re;
      coll_elems(colls[i], count, n, &se, &re);
      for (int r = 0; r < n; ++r)
        in[i].push_back(make_input<ccl_float32>(replay * 10 + i, r, se, ccl_sum, true));
      RANK_CUDA(cudaMemcpy(send[i], in[i][me].data(), se * 4, cudaMemcpyHostToDevice));
      RANK_CUDA(cudaMemset(recv[i], 0, re * 4));
    }
    RANK_CUDA(cudaGraphLaunch(exec, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < 6; ++i) {
      if (colls[i] == Collective::kReduce && me != 1 % n) continue;
      size_t se, re;
      coll_elems(colls[i], count, n, &se, &re);
      const auto want = reference<ccl_float32>(colls[i], ccl_sum, 1 % n, me, n, count, in[i]);
      std::vector<float> got(re);
      RANK_CUDA(cudaMemcpy(got.data(), recv[i], re * 4, cudaMemcpyDeviceToHost));
      RANK_CHECK(std::memcmp(got.data(), want.data(), re * 4) == 0, "graph replay %d: %s wrong",
                 replay, coll::collective_name(colls[i]));
    }
  }
  RANK_CUDA(cudaGraphExecDestroy(exec));
  RANK_CUDA(cudaGraphDestroy(graph));
  for (int i = 0; i < 6; ++i) {
    RANK_CUDA(cudaFree(send[i]));
    RANK_CUDA(cudaFree(recv[i]));
  }
  RANK_OK(ccl_comm_destroy(comm));
  return 0;
}

/// ccl_comm_register beyond the matrix: two registrations inside one allocation (the peers map it
/// once), one outliving the other; a symmetric buffer; refused memory and handles fail on every
/// rank, the rank at fault with CCL_INVALID_ARGUMENT and its peers with CCL_REMOTE_ERROR.
int registration(ccl_comm_t comm, int me, int n, cudaStream_t s) {
  const size_t count = 100000;  // past the LL limit: the zero-copy kernels
  float* base = nullptr;
  RANK_CUDA(cudaMalloc(&base, 4 * count * n * sizeof(float)));
  float *a_send = base, *a_recv = base + count * n, *b_send = base + 2 * count * n,
        *b_recv = base + 3 * count * n;
  void *ha = nullptr, *hb = nullptr;
  RANK_OK(ccl_comm_register(comm, a_send, 2 * count * n * sizeof(float), &ha));
  RANK_OK(ccl_comm_register(comm, b_send, 2 * count * n * sizeof(float), &hb));
  RANK_CHECK(ha != hb && ha != nullptr, "handles");
  std::vector<float> in(count * n), got(count * n);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((i + me) % 1000);
  RANK_CUDA(cudaMemcpy(a_send, in.data(), in.size() * 4, cudaMemcpyHostToDevice));
  RANK_CUDA(cudaMemcpy(b_send, in.data(), in.size() * 4, cudaMemcpyHostToDevice));
  auto check_allgather = [&](const float* recv, const char* what) -> int {
    RANK_CUDA(cudaMemcpy(got.data(), recv, count * n * 4, cudaMemcpyDeviceToHost));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i)
        RANK_CHECK(got[r * count + i] == static_cast<float>((i + r) % 1000),
                   "%s: block %d element %zu is %f", what, r, i, got[r * count + i]);
    return 0;
  };
  RANK_CUDA(cudaMemset(a_recv, 0, count * n * 4));
  RANK_OK(ccl_allgather(a_send, a_recv, count, ccl_float32, comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  if (check_allgather(a_recv, "registered allgather")) return 1;
  RANK_OK(ccl_comm_deregister(comm, ha));
  // b is still registered (its allocation still mapped by the peers); a is staged now.
  RANK_CUDA(cudaMemset(b_recv, 0, count * n * 4));
  RANK_OK(ccl_allgather(b_send, b_recv, count, ccl_float32, comm, s));
  RANK_CUDA(cudaMemset(a_recv, 0, count * n * 4));
  RANK_OK(ccl_allgather(a_send, a_recv, count, ccl_float32, comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  if (check_allgather(b_recv, "allgather after the other registration left")) return 1;
  if (check_allgather(a_recv, "allgather of a deregistered buffer")) return 1;
  const auto I = CCL_INVALID_ARGUMENT;
  RANK_CHECK(ccl_comm_deregister(comm, ha) == I, "deregister twice");
  RANK_CHECK(std::strstr(ccl_get_last_error(), "handle") != nullptr, "message '%s'",
             ccl_get_last_error());
  RANK_OK(ccl_comm_deregister(comm, hb));
  // A symmetric buffer is accepted (nothing to map).
  void* sym = nullptr;
  RANK_OK(ccl_mem_alloc(comm, 4096, &sym));
  RANK_OK(ccl_comm_register(comm, sym, 4096, &ha));
  RANK_OK(ccl_comm_deregister(comm, ha));
  RANK_OK(ccl_mem_free(comm, sym));
  // Refused everywhere: host memory, a size past the allocation.
  std::vector<char> host(64);
  void* h = nullptr;
  RANK_CHECK(ccl_comm_register(comm, host.data(), host.size(), &h) == I && h == nullptr,
             "host memory");
  RANK_CHECK(std::strstr(ccl_get_last_error(), "buff") != nullptr, "message '%s'",
             ccl_get_last_error());
  RANK_CHECK(ccl_comm_register(comm, base, 10 * count * n * sizeof(float), &h) == I, "size");
  // One rank at fault: it gets INVALID_ARGUMENT, the others REMOTE_ERROR naming it.
  const ccl_result_t r0 = ccl_comm_register(comm, me == 0 ? nullptr : base, 64, &h);
  if (me == 0) {
    RANK_CHECK(r0 == I, "rank 0's NULL buffer: %d", r0);
  } else {
    RANK_CHECK(r0 == CCL_REMOTE_ERROR && std::strstr(ccl_get_last_error(), "rank 0") != nullptr,
               "peer of a failed registration: %d '%s'", r0, ccl_get_last_error());
  }
  RANK_CHECK(ccl_comm_deregister(comm, reinterpret_cast<void*>(0x12345)) == I, "stray handle");
  RANK_CUDA(cudaFree(base));
  return 0;
}

/// 10^4 back-to-back mixed collectives (sizes, types, kernels), checked every 1000 calls.
int stress(ccl_comm_t comm, int me, int n, cudaStream_t s) {
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
        RANK_OK(ccl_allreduce(a, b, count, ccl_float32, ccl_max, comm, s));
        break;
      case 1:
        RANK_OK(ccl_allgather(a, b, count, ccl_float32, comm, s));
        break;
      case 2:
        RANK_OK(ccl_reduce_scatter(a, b, count, ccl_float32, ccl_sum, comm, s));
        break;
      case 3:
        RANK_OK(ccl_allreduce(a, b, count * n * 2, ccl_bfloat16, ccl_min, comm, s));
        break;
      default:
        RANK_OK(ccl_broadcast(a, b, count * 3, ccl_int8, i % n, comm, s));
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
int push_stress(ccl_comm_t world, int me, int n, cudaStream_t s) {
  setenv("CCL_ALGO", "allreduce:two_shot", 1);
  setenv("CCL_PROTO", "SIMPLE", 1);
  ccl_comm_t comm;
  if (fresh_comm(world, me, &comm)) return 1;
  unsetenv("CCL_ALGO");
  unsetenv("CCL_PROTO");
  const size_t count = n > 2 ? 70001 : 300001;  // float32 elements per rank block
  const size_t total = count * n;
  const int calls = n > 2 ? 40 : 300;
  float *a, *sym, *sym_out;
  std::vector<float*> out(4);
  RANK_CUDA(cudaMalloc(&a, total * 4));
  for (float*& o : out) RANK_CUDA(cudaMalloc(&o, total * 4));
  RANK_OK(ccl_mem_alloc(comm, total * 4, reinterpret_cast<void**>(&sym)));
  RANK_OK(ccl_mem_alloc(comm, total * 4, reinterpret_cast<void**>(&sym_out)));
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
        RANK_OK(ccl_allreduce(a, out[0], total, ccl_float32, ccl_sum, comm, s));
        break;
      case 1:
        RANK_OK(ccl_reduce_scatter(a, out[1], count, ccl_float32, ccl_sum, comm, s));
        break;
      case 2:
        RANK_OK(ccl_alltoall(a, out[2], count, ccl_float32, comm, s));
        break;
      case 3:
        RANK_OK(ccl_allreduce(sym, sym_out, total, ccl_float32, ccl_sum, comm, s));
        break;
      default:
        RANK_OK(ccl_allreduce(a, out[3], 7, ccl_float32, ccl_max, comm, s));
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
  RANK_OK(ccl_mem_free(comm, sym));
  RANK_OK(ccl_mem_free(comm, sym_out));
  RANK_OK(ccl_comm_destroy(comm));
  return 0;
}

/// A user kernel that lets the next kernel of its stream launch at once (the PDL trigger as its
/// first statement) and writes `p` only `delay_ns` later: a collective launched with PDL that
/// read its input before waiting for this kernel would see the poison instead.
__global__ void late_fill(int32_t* p, size_t count, int32_t base, uint64_t delay_ns) {
  trigger_dependents_then_sleep(delay_ns);
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    p[i] = base + static_cast<int32_t>(i % 1000);
}

/// The copy-engine path beyond the matrix (CCL_ALGO=copy_engine): ranks whose calls differ all
/// fail at once with CCL_INVALID_USAGE and nothing enqueued (only that path compares calls on the
/// host: it proves the path ran); one rank without a window sends every rank to the SM kernels;
/// an allgather and a broadcast captured in one graph and replayed with new inputs. The windows
/// are exchanged through the shared-memory host board (every rank of the test is on this host),
/// and with CCL_HOST_BOARD=0 over the bootstrap.
int copy_engine_with(ccl_comm_t world, int me, int n, cudaStream_t s, bool board) {
  setenv("CCL_ALGO", "copy_engine", 1);
  setenv("CCL_HOST_BOARD", board ? "1" : "0", 1);
  ccl_comm_t comm;
  if (fresh_comm(world, me, &comm)) return 1;
  const size_t count = 100003;  // floats per rank block, past the LL rows
  float *sym = nullptr, *dev = nullptr;
  RANK_OK(ccl_mem_alloc(comm, 2 * count * n * sizeof(float), reinterpret_cast<void**>(&sym)));
  RANK_CUDA(cudaMalloc(&dev, count * n * sizeof(float)));
  float* const send = sym;
  float* const recv = sym + count * n;
  auto value = [](int it, int rank, size_t i) {
    return static_cast<float>((i * 7 + static_cast<size_t>(rank) * 131 + it * 17) % 4099);
  };
  auto fill = [&](int it, size_t elems) -> int {
    std::vector<float> h(elems);
    for (size_t i = 0; i < elems; ++i) h[i] = value(it, me, i);
    RANK_CUDA(cudaMemcpy(send, h.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
    return 0;
  };
  // Different calls: rank 0 a larger alltoall than the others.
  if (n > 1) {
    const ccl_result_t r =
        ccl_alltoall(send, recv, me == 0 ? count : count / 2, ccl_float32, comm, s);
    RANK_CHECK(r == CCL_INVALID_USAGE && std::strstr(ccl_get_last_error(), "copy_engine") &&
                   std::strstr(ccl_get_last_error(), "rank"),
               "mismatched copy_engine alltoall: %d '%s'", r, ccl_get_last_error());
    RANK_CHECK(cudaStreamQuery(s) == cudaSuccess, "a refused copy_engine call enqueued work");
  }
  // Rank 0 receives into symmetric memory, the others into cudaMalloc: the SM kernels run it.
  if (fill(0, count * n)) return 1;
  float* mixed_recv = me == 0 ? recv : dev;
  RANK_CUDA(cudaMemset(mixed_recv, 0, count * n * sizeof(float)));
  RANK_OK(ccl_alltoall(send, mixed_recv, count, ccl_float32, comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  std::vector<float> got(count * n);
  RANK_CUDA(cudaMemcpy(got.data(), mixed_recv, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      RANK_CHECK(got[r * count + i] == value(0, r, me * count + i),
                 "alltoall with one window: block %d element %zu is %f", r, i, got[r * count + i]);
  // A graph of an allgather and a broadcast from the last rank, replayed twice.
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  RANK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  RANK_OK(ccl_allgather(send, recv, count, ccl_float32, comm, s));
  float* bsym = recv + count * (n - 1);  // broadcast into symmetric memory: the last block
  RANK_OK(ccl_broadcast(send, bsym, count, ccl_float32, n - 1, comm, s));
  RANK_CUDA(cudaStreamEndCapture(s, &graph));
  RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int it = 1; it <= 2; ++it) {
    if (fill(it, count)) return 1;
    RANK_CUDA(cudaMemset(recv, 0, count * n * sizeof(float)));
    RANK_CUDA(cudaGraphLaunch(exec, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(got.data(), recv, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    // The broadcast overwrote the last block with rank n - 1's input, which the allgather put
    // there too: every block is its rank's input.
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i)
        RANK_CHECK(got[r * count + i] == value(it, r, i),
                   "copy_engine graph replay %d: block %d element %zu is %f", it, r, i,
                   got[r * count + i]);
  }
  RANK_CUDA(cudaGraphExecDestroy(exec));
  RANK_CUDA(cudaGraphDestroy(graph));
  // The exchanges went where they should: the board needs POSIX-fd heaps (a peer's fd channel).
  const bool can_board = comm->heap && comm->heap->fd_channel() != nullptr;
  RANK_CHECK(comm->board_state == (board && can_board ? 1 : 0),
             "host exchanges: board state %d with CCL_HOST_BOARD=%d", comm->board_state, board);
  RANK_CUDA(cudaFree(dev));
  RANK_OK(ccl_mem_free(comm, sym));
  RANK_OK(ccl_comm_destroy(comm));
  unsetenv("CCL_ALGO");
  unsetenv("CCL_HOST_BOARD");
  return 0;
}

int copy_engine(ccl_comm_t world, int me, int n, cudaStream_t s) {
  return copy_engine_with(world, me, n, s, true) || copy_engine_with(world, me, n, s, false);
}

/// Stream order under programmatic dependent launch (CCL_PDL=1, the default) and without it: a
/// collective after a user kernel that triggers early reads what that kernel wrote, and each
/// collective of a chain reads what the previous one wrote in place, eager and in a graph with
/// other node kinds; send/recv likewise.
int dependent_launch(ccl_comm_t world, int me, int n, cudaStream_t s) {
  for (const char* pdl : {"1", "0"}) {
    setenv("CCL_PDL", pdl, 1);
    ccl_comm_t comm;
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
          RANK_CHECK(got[i] == want, "CCL_PDL=%s count %zu, %s: element %zu is %d, not %d", pdl,
                     count, what, i, got[i], want);
        }
        return 0;
      };
      late_fill<<<64, 256, 0, s>>>(a, count, 10 * me + 1, 200000);
      RANK_CUDA(cudaGetLastError());
      RANK_OK(ccl_allreduce(a, b, count, ccl_int32, ccl_sum, comm, s));
      RANK_OK(ccl_allreduce(b, b, count, ccl_int32, ccl_sum, comm, s));
      RANK_OK(ccl_allreduce(b, b, count, ccl_int32, ccl_sum, comm, s));
      if (check_chain("eager chain")) return 1;
      // The same chain captured between other node kinds (a memset before the late writer, a
      // copy between two collectives: PDL edges only join kernel to kernel), replayed twice.
      cudaGraph_t g;
      cudaGraphExec_t x;
      RANK_CUDA(cudaMemset(a, 0xff, count * 4));
      RANK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      RANK_CUDA(cudaMemsetAsync(b, 0xff, count * 4, s));
      late_fill<<<64, 256, 0, s>>>(a, count, 10 * me + 1, 200000);
      RANK_OK(ccl_allreduce(a, b, count, ccl_int32, ccl_sum, comm, s));
      RANK_OK(ccl_allreduce(b, b, count, ccl_int32, ccl_sum, comm, s));
      RANK_CUDA(cudaMemcpyAsync(a, b, count * 4, cudaMemcpyDeviceToDevice, s));
      RANK_OK(ccl_allreduce(a, b, count, ccl_int32, ccl_sum, comm, s));
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
      RANK_OK(ccl_group_start());
      RANK_OK(ccl_send(a, count, ccl_int32, (me + 1) % n, comm, s));
      RANK_OK(ccl_recv(b, count, ccl_int32, (me + n - 1) % n, comm, s));
      RANK_OK(ccl_group_end());
      RANK_CUDA(cudaStreamSynchronize(s));
      RANK_CUDA(cudaMemcpy(got.data(), b, count * 4, cudaMemcpyDeviceToHost));
      const int32_t prev = 7 * ((me + n - 1) % n);
      for (size_t i = 0; i < count; ++i)
        RANK_CHECK(got[i] == prev + static_cast<int32_t>(i % 1000),
                   "CCL_PDL=%s count %zu: received element %zu is %d", pdl, count, i, got[i]);
      RANK_CUDA(cudaFree(a));
      RANK_CUDA(cudaFree(b));
    }
    RANK_OK(ccl_comm_destroy(comm));
  }
  unsetenv("CCL_PDL");
  return 0;
}

/// One group with 12 sends to the next rank and 12 receives from the previous one, of unequal
/// sizes up to several FIFO messages each: more sends to one peer than its FIFO has slots, which
/// deadlocked the first message order; each receive must get its own send's bytes, in order.
int many_sends_to_one_peer(ccl_comm_t comm, int me, int n, cudaStream_t s) {
  constexpr int kOps = 12;
  size_t bytes[kOps], total = 0;
  for (int i = 0; i < kOps; ++i) total += bytes[i] = 1 + (i * 97531) % 700000;
  char *sb, *rb;
  RANK_CUDA(cudaMalloc(&sb, total));
  RANK_CUDA(cudaMalloc(&rb, total));
  std::vector<char> h(total), got(total);
  for (size_t i = 0; i < total; ++i) h[i] = static_cast<char>(i * 5 + me * 31);
  RANK_CUDA(cudaMemcpy(sb, h.data(), total, cudaMemcpyHostToDevice));
  RANK_CUDA(cudaMemset(rb, 0, total));
  RANK_OK(ccl_group_start());
  size_t off = 0;
  for (int i = 0; i < kOps; off += bytes[i++]) {
    RANK_OK(ccl_send(sb + off, bytes[i], ccl_uint8, (me + 1) % n, comm, s));
    RANK_OK(ccl_recv(rb + off, bytes[i], ccl_uint8, (me + n - 1) % n, comm, s));
  }
  RANK_OK(ccl_group_end());
  RANK_CUDA(cudaStreamSynchronize(s));
  RANK_CUDA(cudaMemcpy(got.data(), rb, total, cudaMemcpyDeviceToHost));
  const int from = (me + n - 1) % n;
  for (size_t i = 0; i < total; ++i)
    RANK_CHECK(got[i] == static_cast<char>(i * 5 + from * 31), "%d sends to one peer: byte %zu",
               kOps, i);
  RANK_CUDA(cudaFree(sb));
  RANK_CUDA(cudaFree(rb));
  return 0;
}

/// The LL path (coll::p2p_ll): groups of five small operations to the next rank and from the
/// previous one (more than the rows' kP2pLLSlots slots: a send waits inside the kernel for the
/// receiver's credit), sizes from 0 (the FIFO path) to the capacity changing every round (rows
/// still hold longer, older messages), odd offsets, poisoned outputs, 200 rounds of fresh data;
/// then kP2pLLSlots sends to the next rank, each its own launch, before the receives.
int ll_point_to_point(ccl_comm_t comm, int me, int n, cudaStream_t s) {
  constexpr int kOps = 5, kRounds = 200;
  const size_t cap = coll::p2p_ll_capacity(n), room = kOps * (cap + 1);
  char *sb, *rb;
  RANK_CUDA(cudaMalloc(&sb, room));
  RANK_CUDA(cudaMalloc(&rb, room));
  std::vector<char> h(room), got(room);
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  auto byte = [](int r, int i, size_t k, int rank) {
    return static_cast<char>(k * 3 + static_cast<size_t>(r) * 11 + i * 29 + rank * 53);
  };
  for (int r = 0; r < kRounds; ++r) {
    size_t bytes[kOps], at[kOps], off = 0;
    for (int i = 0; i < kOps; ++i) {
      bytes[i] = (static_cast<size_t>(r) * 7919 + static_cast<size_t>(i) * 104729) % (cap + 1);
      at[i] = off + (i & 1);  // odd offsets for every other operation
      off = at[i] + bytes[i];
      for (size_t k = 0; k < bytes[i]; ++k) h[at[i] + k] = byte(r, i, k, me);
    }
    RANK_CUDA(cudaMemcpy(sb, h.data(), off, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemset(rb, 0xee, room));
    RANK_OK(ccl_group_start());
    for (int i = 0; i < kOps; ++i) {
      RANK_OK(ccl_send(sb + at[i], bytes[i], ccl_uint8, next, comm, s));
      RANK_OK(ccl_recv(rb + at[i], bytes[i], ccl_uint8, prev, comm, s));
    }
    RANK_OK(ccl_group_end());
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(got.data(), rb, off, cudaMemcpyDeviceToHost));
    for (int i = 0; i < kOps; ++i) {
      for (size_t k = 0; k < bytes[i]; ++k)
        RANK_CHECK(got[at[i] + k] == byte(r, i, k, prev),
                   "LL send/recv round %d, operation %d (%zu bytes): byte %zu", r, i, bytes[i], k);
      if (i + 1 < kOps && at[i + 1] > at[i] + bytes[i])
        RANK_CHECK(got[at[i] + bytes[i]] == static_cast<char>(0xee),
                   "LL send/recv round %d wrote past operation %d", r, i);
    }
  }
  // Ungrouped: a sender may run kP2pLLSlots launches ahead of its receiver.
  constexpr int kAhead = coll::kP2pLLSlots;
  for (int i = 0; i < kAhead; ++i) {
    for (size_t k = 0; k < 100; ++k) h[i * 100 + k] = byte(kRounds, i, k, me);
  }
  RANK_CUDA(cudaMemcpy(sb, h.data(), kAhead * 100, cudaMemcpyHostToDevice));
  for (int i = 0; i < kAhead; ++i) RANK_OK(ccl_send(sb + i * 100, 100, ccl_uint8, next, comm, s));
  for (int i = 0; i < kAhead; ++i) RANK_OK(ccl_recv(rb + i * 100, 100, ccl_uint8, prev, comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  RANK_CUDA(cudaMemcpy(got.data(), rb, kAhead * 100, cudaMemcpyDeviceToHost));
  for (int i = 0; i < kAhead; ++i)
    for (size_t k = 0; k < 100; ++k)
      RANK_CHECK(got[i * 100 + k] == byte(kRounds, i, k, prev), "ungrouped LL send %d: byte %zu", i,
                 k);
  RANK_CUDA(cudaFree(sb));
  RANK_CUDA(cudaFree(rb));
  return 0;
}

/// The rendezvous path (collectives/schedule/p2p.hpp): receives large enough for it land in a
/// symmetric buffer (unaligned too), a registered one, and plain cudaMalloc memory (no window:
/// the FIFOs), beside a small FIFO receive and a rendezvous with this rank itself, in one group
/// repeated past the offer ring's size (kMaxP2pOps per pair), then captured in a graph and
/// replayed. Outputs are poisoned first.
int zero_copy_point_to_point(ccl_comm_t comm, int me, int n, cudaStream_t s) {
  constexpr int kOps = 6;
  const size_t bytes[kOps] = {(size_t{3} << 20) + 5,
                              coll::kP2pRendezvousFrom,
                              (size_t{1} << 20) + 3,
                              coll::kP2pRendezvousFrom + 1,
                              100,
                              coll::kP2pRendezvousFrom + 8};
  size_t total = 0;
  for (size_t b : bytes) total += b;
  const size_t sym_bytes = bytes[0] + bytes[3] + bytes[4] + bytes[5] + 64;
  char *sb, *sym, *dev, *regd;
  RANK_CUDA(cudaMalloc(&sb, total));
  RANK_OK(ccl_mem_alloc(comm, sym_bytes, reinterpret_cast<void**>(&sym)));
  RANK_CUDA(cudaMalloc(&dev, bytes[2]));
  RANK_CUDA(cudaMalloc(&regd, bytes[1]));
  void* reg = nullptr;
  RANK_OK(ccl_comm_register(comm, regd, bytes[1], &reg));
  // Where each receive lands: symmetric at 16, registered, cudaMalloc, symmetric at an odd
  // offset, symmetric (small, through the FIFOs), and from this rank itself, symmetric at an odd
  // offset (a rendezvous with oneself).
  char* const dst[kOps] = {sym + 16,
                           regd,
                           dev,
                           sym + 16 + bytes[0] + 3,
                           sym + 16 + bytes[0] + 3 + bytes[3],
                           sym + 16 + bytes[0] + 3 + bytes[3] + bytes[4] + 5};
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  auto to = [&](int o) { return o == kOps - 1 ? me : next; };
  auto from = [&](int o) { return o == kOps - 1 ? me : prev; };
  auto value = [](int it, int rank, int op, size_t i) {
    return static_cast<char>(i * 11 + op * 3 + rank * 29 + it * 7);
  };
  auto fill = [&](int it) -> int {
    std::vector<char> h(total);
    size_t off = 0;
    for (int o = 0; o < kOps; off += bytes[o++])
      for (size_t i = 0; i < bytes[o]; ++i) h[off + i] = value(it, me, o, i);
    RANK_CUDA(cudaMemcpy(sb, h.data(), total, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemset(sym, 0x5a, sym_bytes));
    RANK_CUDA(cudaMemset(dev, 0x5a, bytes[2]));
    RANK_CUDA(cudaMemset(regd, 0x5a, bytes[1]));
    return 0;
  };
  auto enqueue = [&]() -> int {
    RANK_OK(ccl_group_start());
    size_t off = 0;
    for (int o = 0; o < kOps; off += bytes[o++]) {
      RANK_OK(ccl_send(sb + off, bytes[o], ccl_uint8, to(o), comm, s));
      RANK_OK(ccl_recv(dst[o], bytes[o], ccl_uint8, from(o), comm, s));
    }
    RANK_OK(ccl_group_end());
    return 0;
  };
  auto check = [&](int it, const char* what) -> int {
    for (int o = 0; o < kOps; ++o) {
      std::vector<char> got(bytes[o]);
      RANK_CUDA(cudaMemcpy(got.data(), dst[o], bytes[o], cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < bytes[o]; ++i)
        RANK_CHECK(got[i] == value(it, from(o), o, i), "%s %d: receive %d (%zu bytes): byte %zu",
                   what, it, o, bytes[o], i);
    }
    return 0;
  };
  // Four rendezvous receives from the previous rank per group: 12 groups wrap that pair's ring
  // of kMaxP2pOps offers.
  for (int it = 0; it < 12; ++it) {
    if (fill(it) || enqueue()) return 1;
    RANK_CUDA(cudaStreamSynchronize(s));
    if (check(it, "group")) return 1;
  }
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  RANK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  if (enqueue()) return 1;
  RANK_CUDA(cudaStreamEndCapture(s, &graph));
  RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int it = 100; it < 103; ++it) {
    if (fill(it)) return 1;
    RANK_CUDA(cudaGraphLaunch(exec, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    if (check(it, "graph replay")) return 1;
  }
  RANK_CUDA(cudaGraphExecDestroy(exec));
  RANK_CUDA(cudaGraphDestroy(graph));
  RANK_OK(ccl_comm_deregister(comm, reg));
  RANK_OK(ccl_mem_free(comm, sym));
  RANK_CUDA(cudaFree(regd));
  RANK_CUDA(cudaFree(dev));
  RANK_CUDA(cudaFree(sb));
  return 0;
}

/// Copies the communicator's copy-engine proxy has issued (0 without a proxy) into *out.
int proxy_copies(ccl_comm_t comm, uint64_t* out) {
  coll::CollState* st = nullptr;
  RANK_CHECK(coll::coll_state(comm, &st).ok(), "no collective state");
  *out = st->p2p_proxy ? st->p2p_proxy->issued() : 0;
  return 0;
}

/// A communicator whose first call is a copy-engine send/recv captured into a graph (global
/// capture mode): its collective state and the proxy start inside the capture; two replays with
/// new data, each one copy by the proxy per rank (none on one rank: a local copy).
int copy_engine_first_call_captured(ccl_comm_t world, int me, int n, cudaStream_t s) {
  setenv("CCL_P2P_COPY_ENGINE", "256K", 1);
  ccl_comm_t comm;
  if (fresh_comm(world, me, &comm)) return 1;
  const size_t bytes = (size_t{1} << 20) + 3;
  char* sym = nullptr;
  RANK_OK(ccl_mem_alloc(comm, 2 * bytes, reinterpret_cast<void**>(&sym)));
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  RANK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  RANK_OK(ccl_group_start());
  RANK_OK(ccl_send(sym, bytes, ccl_uint8, next, comm, s));
  RANK_OK(ccl_recv(sym + bytes, bytes, ccl_uint8, prev, comm, s));
  RANK_OK(ccl_group_end());
  RANK_CUDA(cudaStreamEndCapture(s, &graph));
  unsetenv("CCL_P2P_COPY_ENGINE");
  RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<char> h(bytes), got(bytes);
  for (int replay = 0; replay < 2; ++replay) {
    for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<char>(i * 13 + me * 7 + replay * 3);
    RANK_CUDA(cudaMemcpy(sym, h.data(), bytes, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemset(sym + bytes, 0x5a, bytes));
    RANK_CUDA(cudaGraphLaunch(exec, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(got.data(), sym + bytes, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < bytes; ++i)
      RANK_CHECK(got[i] == static_cast<char>(i * 13 + prev * 7 + replay * 3),
                 "copy-engine send/recv captured first, replay %d: byte %zu", replay, i);
  }
  uint64_t issued = 0;
  if (proxy_copies(comm, &issued)) return 1;
  RANK_CHECK(issued == (n > 1 ? 2u : 0u), "captured first: the proxy issued %llu copies",
             static_cast<unsigned long long>(issued));
  RANK_CUDA(cudaGraphExecDestroy(exec));
  RANK_CUDA(cudaGraphDestroy(graph));
  RANK_OK(ccl_mem_free(comm, sym));
  RANK_OK(ccl_comm_destroy(comm));
  return 0;
}

/// CUDA_DEVICE_MAX_CONNECTIONS=1: one hardware queue, behind which the proxy's copies would
/// wait for the kernel that waits for them (every such send timed out on one H100), so the
/// proxy is not started and the SMs copy: a 1 MiB ring exchange arrives whole, no proxy copy.
/// (The variable is read by the check as the process runs; CUDA read it at start-up, so this
/// process still has its queues: the check, not the stall, is what runs here.)
int copy_engine_one_work_queue(ccl_comm_t world, int me, int n, cudaStream_t s) {
  setenv("CCL_P2P_COPY_ENGINE", "256K", 1);
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 1);
  ccl_comm_t comm;
  if (fresh_comm(world, me, &comm)) return 1;
  const size_t bytes = size_t{1} << 20;
  char* sym = nullptr;
  RANK_OK(ccl_mem_alloc(comm, 2 * bytes, reinterpret_cast<void**>(&sym)));
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  std::vector<char> h(bytes), got(bytes);
  for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<char>(i * 11 + me * 5);
  RANK_CUDA(cudaMemcpy(sym, h.data(), bytes, cudaMemcpyHostToDevice));
  RANK_CUDA(cudaMemset(sym + bytes, 0x5a, bytes));
  RANK_OK(ccl_group_start());
  RANK_OK(ccl_send(sym, bytes, ccl_uint8, next, comm, s));
  RANK_OK(ccl_recv(sym + bytes, bytes, ccl_uint8, prev, comm, s));
  RANK_OK(ccl_group_end());
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  unsetenv("CCL_P2P_COPY_ENGINE");
  RANK_CUDA(cudaStreamSynchronize(s));
  RANK_CUDA(cudaMemcpy(got.data(), sym + bytes, bytes, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < bytes; ++i)
    RANK_CHECK(got[i] == static_cast<char>(i * 11 + prev * 5), "one work queue: byte %zu", i);
  uint64_t issued = 0;
  if (proxy_copies(comm, &issued)) return 1;
  RANK_CHECK(issued == 0, "one work queue: the proxy issued %llu copies",
             static_cast<unsigned long long>(issued));
  RANK_OK(ccl_mem_free(comm, sym));
  RANK_OK(ccl_comm_destroy(comm));
  return 0;
}

/// The rendezvous test again with CCL_P2P_COPY_ENGINE at the rendezvous size, on a communicator
/// of its own, with the copy engine taking all of each send and then 37 % of it beside the
/// sender's blocks: every send into a window (three per group: symmetric, registered, symmetric at
/// an odd offset) is copied by the copy-engine proxy, the one into cudaMalloc memory and the small
/// one go through the FIFOs, and the pair with the rank itself is a local copy. The proxy must
/// have issued exactly those copies (12 groups and 3 graph replays); the replays come after
/// host work longer than the proxy's busy polling, so they also meet its idle poll.
int copy_engine_point_to_point(ccl_comm_t world, int me, int n, cudaStream_t s) {
  // All of each send, then 37 % of it beside the blocks' 63 % (CCL_P2P_COPY_ENGINE_SHARE).
  for (const char* share : {"100", "37"}) {
    setenv("CCL_P2P_COPY_ENGINE", std::to_string(coll::kP2pRendezvousFrom).c_str(), 1);
    setenv("CCL_P2P_COPY_ENGINE_SHARE", share, 1);
    ccl_comm_t comm;
    if (fresh_comm(world, me, &comm)) return 1;
    // Read with the communicator's collective state, at its first call.
    const int failed = zero_copy_point_to_point(comm, me, n, s);
    unsetenv("CCL_P2P_COPY_ENGINE");
    unsetenv("CCL_P2P_COPY_ENGINE_SHARE");
    if (failed) return 1;
    const uint64_t want = n > 1 ? 3 * (12 + 3) : 0;  // one rank: every pair is a local copy
    uint64_t issued = 0;
    if (proxy_copies(comm, &issued)) return 1;
    RANK_CHECK(issued == want, "share %s %%: the copy-engine proxy issued %llu copies, not %llu",
               share, static_cast<unsigned long long>(issued),
               static_cast<unsigned long long>(want));
    RANK_OK(ccl_comm_destroy(comm));
  }
  if (copy_engine_first_call_captured(world, me, n, s)) return 1;
  return copy_engine_one_work_queue(world, me, n, s);
}

/// Send/recv: a ring shift in one group, self send/recv, and a lone pair outside a group.
int point_to_point(ccl_comm_t comm, int me, int n, cudaStream_t s) {
  for (size_t bytes : {size_t{1}, size_t{4097}, size_t{5} << 20}) {
    char *sb, *rb, *self_rb;
    RANK_CUDA(cudaMalloc(&sb, bytes));
    RANK_CUDA(cudaMalloc(&rb, bytes));
    RANK_CUDA(cudaMalloc(&self_rb, bytes));
    std::vector<char> h(bytes), got(bytes);
    for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<char>(i * 7 + me * 13);
    RANK_CUDA(cudaMemcpy(sb, h.data(), bytes, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemset(rb, 0, bytes));
    RANK_OK(ccl_group_start());
    RANK_OK(ccl_send(sb, bytes, ccl_uint8, (me + 1) % n, comm, s));
    RANK_OK(ccl_recv(rb, bytes, ccl_uint8, (me + n - 1) % n, comm, s));
    RANK_OK(ccl_send(sb, bytes, ccl_uint8, me, comm, s));
    RANK_OK(ccl_recv(self_rb, bytes, ccl_uint8, me, comm, s));
    RANK_OK(ccl_group_end());
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(got.data(), rb, bytes, cudaMemcpyDeviceToHost));
    const int from = (me + n - 1) % n;
    for (size_t i = 0; i < bytes; ++i)
      RANK_CHECK(got[i] == static_cast<char>(i * 7 + from * 13), "sendrecv %zu bytes: byte %zu",
                 bytes, i);
    RANK_CUDA(cudaMemcpy(got.data(), self_rb, bytes, cudaMemcpyDeviceToHost));
    RANK_CHECK(std::memcmp(got.data(), h.data(), bytes) == 0, "self send/recv %zu bytes", bytes);
    // Outside a group: rank 0 sends, rank 1 receives (one rank has no pair: a lone send to
    // itself would wait for its receive forever).
    if (me == 0 && n > 1) RANK_OK(ccl_send(sb, bytes, ccl_uint8, 1, comm, s));
    if (me == 1) RANK_OK(ccl_recv(rb, bytes, ccl_uint8, 0, comm, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    if (me == 1) {
      RANK_CUDA(cudaMemcpy(got.data(), rb, bytes, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < bytes; ++i)
        RANK_CHECK(got[i] == static_cast<char>(i * 7), "lone recv %zu bytes: byte %zu", bytes, i);
    }
    RANK_CUDA(cudaFree(sb));
    RANK_CUDA(cudaFree(rb));
    RANK_CUDA(cudaFree(self_rb));
  }
  // Operations with the rank itself match in order across calls: a lone send to itself, then a
  // group of a second send and a receive (which takes the first send's data: the pair must not
  // become a copy), then a lone receive (the second send's). LL-sized: a sender may run ahead.
  {
    const size_t bytes = 100;
    char* d = nullptr;
    RANK_CUDA(cudaMalloc(&d, 4 * bytes));
    std::vector<char> a(bytes), b(bytes), got(bytes);
    for (size_t i = 0; i < bytes; ++i)
      a[i] = static_cast<char>(i + 1), b[i] = static_cast<char>(200 - i);
    RANK_CUDA(cudaMemcpy(d, a.data(), bytes, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemcpy(d + bytes, b.data(), bytes, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemset(d + 2 * bytes, 0, 2 * bytes));
    RANK_OK(ccl_send(d, bytes, ccl_uint8, me, comm, s));
    RANK_OK(ccl_group_start());
    RANK_OK(ccl_send(d + bytes, bytes, ccl_uint8, me, comm, s));
    RANK_OK(ccl_recv(d + 2 * bytes, bytes, ccl_uint8, me, comm, s));
    RANK_OK(ccl_group_end());
    RANK_OK(ccl_recv(d + 3 * bytes, bytes, ccl_uint8, me, comm, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(got.data(), d + 2 * bytes, bytes, cudaMemcpyDeviceToHost));
    RANK_CHECK(got == a, "the first receive from itself did not get the first send");
    RANK_CUDA(cudaMemcpy(got.data(), d + 3 * bytes, bytes, cudaMemcpyDeviceToHost));
    RANK_CHECK(got == b, "the second receive from itself did not get the second send");
    // Now balanced again: a group of a send and a receive with itself is a copy, any size.
    RANK_CUDA(cudaMemset(d + 2 * bytes, 0, bytes));
    RANK_OK(ccl_group_start());
    RANK_OK(ccl_send(d, bytes, ccl_uint8, me, comm, s));
    RANK_OK(ccl_recv(d + 2 * bytes, bytes, ccl_uint8, me, comm, s));
    RANK_OK(ccl_group_end());
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(got.data(), d + 2 * bytes, bytes, cudaMemcpyDeviceToHost));
    RANK_CHECK(got == a, "a paired send/recv with itself");
    RANK_CUDA(cudaFree(d));
  }
  if (many_sends_to_one_peer(comm, me, n, s)) return 1;
  if (ll_point_to_point(comm, me, n, s)) return 1;
  if (zero_copy_point_to_point(comm, me, n, s)) return 1;
  return copy_engine_point_to_point(comm, me, n, s);
}

/// Every entry point refuses bad input with CCL_INVALID_ARGUMENT and enqueues nothing.
int bad_input(ccl_comm_t comm, int me, int n, cudaStream_t s) {
  float* d = nullptr;
  RANK_CUDA(cudaMalloc(&d, 64 * n));
  std::vector<float> host(16);
  const auto I = CCL_INVALID_ARGUMENT;
  const auto bad_t = static_cast<ccl_datatype_t>(99);
  const auto bad_op = static_cast<ccl_redop_t>(99);
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                       Collective::kBroadcast, Collective::kReduce, Collective::kAllToAll}) {
    const char* name = coll::collective_name(c);
    // Every rank must refuse every call (a rank that accepted one would run it alone): each is
    // its own root, so no rank ignores a buffer as a non-root would.
    const int root = me;
    RANK_CHECK(call(nullptr, c, d, d, 4, ccl_float32, ccl_sum, root, s) == I, "%s: null comm",
               name);
    RANK_CHECK(call(comm, c, d, d, 4, bad_t, ccl_sum, root, s) == I, "%s: datatype", name);
    RANK_CHECK(call(comm, c, d, d, SIZE_MAX / 2, ccl_float32, ccl_sum, root, s) == I,
               "%s: overflow", name);
    RANK_CHECK(call(comm, c, host.data(), d, 4, ccl_float32, ccl_sum, root, s) == I,
               "%s: host send", name);
    RANK_CHECK(call(comm, c, d, d, 1 << 24, ccl_float32, ccl_sum, root, s) == I, "%s: small buffer",
               name);
    RANK_CHECK(call(comm, c, nullptr, d, 4, ccl_float32, ccl_sum, root, s) == I, "%s: null send",
               name);
    RANK_CHECK(call(comm, c, d, nullptr, 4, ccl_float32, ccl_sum, root, s) == I, "%s: null recv",
               name);
    if (reduces(c))
      RANK_CHECK(call(comm, c, d, d, 4, ccl_float32, bad_op, root, s) == I, "%s: op", name);
    if (c == Collective::kBroadcast || c == Collective::kReduce) {
      RANK_CHECK(call(comm, c, d, d, 4, ccl_float32, ccl_sum, n, s) == I, "%s: root n", name);
      RANK_CHECK(call(comm, c, d, d, 4, ccl_float32, ccl_sum, -1, s) == I, "%s: root -1", name);
    }
    RANK_CHECK(std::strstr(ccl_get_last_error(), name) != nullptr, "%s: message '%s'", name,
               ccl_get_last_error());
  }
  RANK_CHECK(ccl_send(d, 4, ccl_float32, n, comm, s) == I, "send: peer");
  RANK_CHECK(ccl_recv(d, 4, ccl_float32, -1, comm, s) == I, "recv: peer");
  RANK_CHECK(ccl_send(nullptr, 4, ccl_float32, 0, comm, s) == I, "send: null");
  RANK_CHECK(ccl_recv(d, 4, bad_t, 0, comm, s) == I, "recv: datatype");
  RANK_CHECK(ccl_send(nullptr, 4, ccl_float32, 0, nullptr, s) == I, "send: comm");
  RANK_CHECK(ccl_barrier(nullptr, s) == I, "barrier: comm");
  RANK_CHECK(ccl_group_end() == CCL_INVALID_USAGE, "group end without start");
  // Nothing was enqueued: the stream is idle and the communicator healthy.
  RANK_CHECK(cudaStreamQuery(s) == cudaSuccess, "stream busy after refused calls");
  ccl_result_t async;
  RANK_OK(ccl_comm_get_async_error(comm, &async, nullptr));
  RANK_CHECK(async == CCL_SUCCESS, "communicator in error");
  RANK_CUDA(cudaFree(d));
  return 0;
}

/// One rank copies with a kernel below 48 MiB (32 MiB in a graph) and the copy engine from
/// there, and in a graph without PDL (local_copy.cc): both sides of the eager cutoff with ragged
/// lengths, then captured with CCL_PDL=1 and 0 (aligned, unaligned, and both sides of the graph
/// cutoff in one graph, replayed).
int one_rank_copies(ccl_comm_t world, cudaStream_t s) {
  const size_t at = (size_t{48} << 20) / sizeof(float),
               in_graph = (size_t{32} << 20) / sizeof(float);
  uint32_t seed = 7;
  for (size_t count : {at - 1, at, at + 3})
    for (Collective c : {Collective::kAllReduce, Collective::kAllToAll})
      for (Mem m : {Mem::kDevice, Mem::kSymmetric}) {
        Case k{c, c == Collective::kAllReduce ? ccl_avg : ccl_sum, 0, count, m, 0, true, seed++};
        if (run_case_any(world, 0, 1, ccl_float32, k, s, "one rank")) return 1;
      }
  const size_t counts[] = {1001, 1001, in_graph - 1, in_graph + 3};
  const size_t offsets[] = {0, 1, 0, 0};  // floats past an aligned address
  constexpr int kCopies = 4;
  for (const char* pdl : {"1", "0"}) {
    setenv("CCL_PDL", pdl, 1);
    ccl_comm_t comm;
    if (fresh_comm(world, 0, &comm)) return 1;
    float *send[kCopies], *recv[kCopies];
    for (int i = 0; i < kCopies; ++i) {
      RANK_CUDA(cudaMalloc(&send[i], (counts[i] + 1) * 4));
      RANK_CUDA(cudaMalloc(&recv[i], (counts[i] + 1) * 4));
      send[i] += offsets[i], recv[i] += offsets[i];
    }
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    RANK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < kCopies; ++i)
      RANK_OK(ccl_allreduce(send[i], recv[i], counts[i], ccl_float32, ccl_max, comm, s));
    RANK_CUDA(cudaStreamEndCapture(s, &graph));
    RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 2; ++replay) {
      std::vector<std::vector<float>> in(kCopies);
      for (int i = 0; i < kCopies; ++i) {
        in[i] = make_input<ccl_float32>(seed++, 0, counts[i], ccl_max, true);
        RANK_CUDA(cudaMemcpy(send[i], in[i].data(), counts[i] * 4, cudaMemcpyHostToDevice));
        RANK_CUDA(cudaMemset(recv[i], 0, counts[i] * 4));
      }
      RANK_CUDA(cudaGraphLaunch(exec, s));
      RANK_CUDA(cudaStreamSynchronize(s));
      for (int i = 0; i < kCopies; ++i) {
        std::vector<float> got(counts[i]);
        RANK_CUDA(cudaMemcpy(got.data(), recv[i], counts[i] * 4, cudaMemcpyDeviceToHost));
        RANK_CHECK(std::memcmp(got.data(), in[i].data(), counts[i] * 4) == 0,
                   "one rank, CCL_PDL=%s, graph replay %d: copy %d (%zu floats) wrong", pdl, replay,
                   i, counts[i]);
      }
    }
    RANK_CUDA(cudaGraphExecDestroy(exec));
    RANK_CUDA(cudaGraphDestroy(graph));
    for (int i = 0; i < kCopies; ++i) {
      RANK_CUDA(cudaFree(send[i] - offsets[i]));
      RANK_CUDA(cudaFree(recv[i] - offsets[i]));
    }
    RANK_OK(ccl_comm_destroy(comm));
  }
  unsetenv("CCL_PDL");
  return 0;
}

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, EveryAlgorithmTypeAndReduction) {
  REQUIRE_GPUS(1);
  const int n = GetParam();
  ccl_unique_id_t id;
  ASSERT_EQ(ccl_get_unique_id(&id), CCL_SUCCESS);
  const uint32_t seed = std::random_device{}();
  auto results = fork_ranks(
      n,
      [&](int r) {
        setenv("CCL_COLL_SCRATCH_SIZE", "1M", 1);
        ccl_comm_t world;
        if (init_on_gpu(id, n, r, &world)) return 1;
        cudaStream_t s;
        // A blocking stream: the cudaMemset/cudaMemcpy of the set-up (legacy default stream) are
        // ordered before the collectives.
        RANK_CUDA(cudaStreamCreate(&s));
        if (bad_input(world, r, n, s)) return 2;
        if (algorithms(world, r, n, seed, s)) return 3;
        if (deterministic(world, r, n, seed, s)) return 4;
        if (graphs(world, r, n, s)) return 5;
        if (registration(world, r, n, s)) return 8;
        if (stress(world, r, n, s)) return 6;
        if (push_stress(world, r, n, s)) return 10;
        if (dependent_launch(world, r, n, s)) return 9;
        if (copy_engine(world, r, n, s)) return 12;
        if (point_to_point(world, r, n, s)) return 7;
        if (n == 1 && one_rank_copies(world, s)) return 11;
        RANK_OK(ccl_barrier(world, s));
        RANK_CUDA(cudaStreamSynchronize(s));
        ccl_result_t async;
        RANK_OK(ccl_comm_get_async_error(world, &async, nullptr));
        RANK_CHECK(async == CCL_SUCCESS, "communicator in error");
        RANK_OK(ccl_comm_destroy(world));
        return 0;
      },
      600000);
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(results[r].code, 0) << "rank " << r << " (seed " << seed << ")";
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(1, 2, 3, 4, 8));

/// One thread driving two ranks (ccl_comm_init_all, as the harness's `-g 2` does), one call per
/// rank in each group: with CCL_ALGO=copy_engine on symmetric buffers, then with
/// CCL_CHECK_MODE=1 on cudaMalloc buffers. Each communicator's first call is a send/recv group
/// (its first call creates its scratch collectively: both at once). Then the two calls of an
/// allgather or alltoall group each meet the other rank's host before enqueueing, so run one
/// after the other the first would wait for the second until the bootstrap timeout; they run in
/// threads that have made no CUDA call yet (the buffer checks' driver calls need a current
/// context). Every block must arrive, and a group whose two calls differ must fail naming what
/// compared them (the copy-engine path, or the check mode: proof that path ran). On one GPU
/// both ranks share it.
TEST(CollectiveGroups, OneThreadDrivesTwoRanksThroughHostExchanges) {
  REQUIRE_GPUS(1);
  auto results = fork_ranks(1, [&](int) {
    setenv("CCL_BOOTSTRAP_TIMEOUT", "5000", 1);
    const int devs[2] = {0, cuda_device_count() > 1 ? 1 : 0};
    constexpr size_t count = 100003;  // floats per rank block
    struct Mode {
      const char* name;
      const char* value;
      bool symmetric;           // ccl_mem_alloc buffers, else cudaMalloc
      const char* compared_by;  // in the error of a mismatched group
    };
    for (const Mode& m : {Mode{"CCL_ALGO", "copy_engine", true, "(copy_engine)"},
                          Mode{"CCL_CHECK_MODE", "1", false, "CCL_CHECK_MODE"}}) {
      setenv(m.name, m.value, 1);
      ccl_comm_t comms[2] = {nullptr, nullptr};
      RANK_OK(ccl_comm_init_all(comms, 2, devs));
      float* buf[2] = {nullptr, nullptr};  // per rank: 2 send blocks, then 2 receive blocks
      cudaStream_t s[2] = {nullptr, nullptr};
      const size_t bytes = 4 * count * sizeof(float);
      ccl_result_t rc[2] = {CCL_INTERNAL_ERROR, CCL_INTERNAL_ERROR};
      {
        // ccl_mem_alloc is collective: both ranks at once.
        std::thread t[2];
        for (int i = 0; i < 2; ++i)
          t[i] = std::thread([&, i] {
            if (cudaSetDevice(devs[i]) != cudaSuccess ||
                cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking) != cudaSuccess)
              return;
            if (m.symmetric)
              rc[i] = ccl_mem_alloc(comms[i], bytes, reinterpret_cast<void**>(&buf[i]));
            else
              rc[i] = cudaMalloc(&buf[i], bytes) == cudaSuccess ? CCL_SUCCESS
                                                                : CCL_UNHANDLED_CUDA_ERROR;
          });
        for (auto& th : t) th.join();
      }
      RANK_CHECK(rc[0] == CCL_SUCCESS && rc[1] == CCL_SUCCESS, "%s: allocation %d %d", m.name,
                 rc[0], rc[1]);
      auto value = [](int rank, size_t i) {
        return static_cast<float>((i * 13 + static_cast<size_t>(rank) * 977) % 8191);
      };
      auto fill = [&]() -> int {
        std::vector<float> h(2 * count);
        for (int i = 0; i < 2; ++i) {
          for (size_t e = 0; e < h.size(); ++e) h[e] = value(i, e);
          RANK_CUDA(cudaSetDevice(devs[i]));
          RANK_CUDA(cudaMemcpy(buf[i], h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
          RANK_CUDA(cudaMemset(buf[i] + 2 * count, 0, 2 * count * sizeof(float)));
        }
        return 0;
      };
      // Rank i's receive blocks against want(i, b, e); after syncing both streams.
      std::vector<float> got(2 * count);
      auto check = [&](const char* what, int blocks,
                       const std::function<float(int, int, size_t)>& want) -> int {
        for (int i = 0; i < 2; ++i) {
          RANK_CUDA(cudaSetDevice(devs[i]));
          RANK_CUDA(cudaStreamSynchronize(s[i]));
          RANK_CUDA(cudaMemcpy(got.data(), buf[i] + 2 * count, got.size() * sizeof(float),
                               cudaMemcpyDeviceToHost));
          for (int b = 0; b < blocks; ++b)
            for (size_t e = 0; e < count; ++e)
              RANK_CHECK(got[b * count + e] == want(i, b, e),
                         "%s=%s: %s, rank %d, block %d element %zu is %f", m.name, m.value, what, i,
                         b, e, got[b * count + e]);
        }
        return 0;
      };
      if (fill()) return 1;
      // First calls: each rank sends its first block to the other.
      ccl_group_start();
      for (int i = 0; i < 2; ++i) {
        RANK_OK(ccl_send(buf[i], count, ccl_float32, 1 - i, comms[i], s[i]));
        RANK_OK(ccl_recv(buf[i] + 2 * count, count, ccl_float32, 1 - i, comms[i], s[i]));
      }
      RANK_OK(ccl_group_end());
      if (check("send/recv", 1, [&](int i, int, size_t e) { return value(1 - i, e); })) return 1;
      auto group = [&](bool alltoall, size_t count1) {
        ccl_group_start();
        for (int i = 0; i < 2; ++i) {
          const size_t c = i == 0 ? count : count1;
          const ccl_result_t r =
              alltoall ? ccl_alltoall(buf[i], buf[i] + 2 * count, c, ccl_float32, comms[i], s[i])
                       : ccl_allgather(buf[i], buf[i] + 2 * count, c, ccl_float32, comms[i], s[i]);
          if (r != CCL_SUCCESS) return r;
        }
        return ccl_group_end();
      };
      for (bool alltoall : {false, true}) {
        if (fill()) return 1;
        RANK_OK(group(alltoall, count));
        // Block b of rank i: rank b's input, its first block (allgather) or its block i.
        if (check(alltoall ? "alltoall" : "allgather", 2,
                  [&](int i, int b, size_t e) { return value(b, (alltoall ? i * count : 0) + e); }))
          return 1;
      }
      const ccl_result_t r = group(false, count / 2);
      const std::string msg = ccl_get_last_error();
      RANK_CHECK(r == CCL_INVALID_USAGE && msg.find(m.compared_by) != std::string::npos,
                 "%s=%s: mismatched group gave %d '%s' (expected from %s)", m.name, m.value, r,
                 msg.c_str(), m.compared_by);
      for (int i = 0; i < 2; ++i) {
        RANK_CUDA(cudaSetDevice(devs[i]));
        RANK_CUDA(cudaStreamSynchronize(s[i]));
      }
      {
        std::thread t[2];
        for (int i = 0; i < 2; ++i)
          t[i] = std::thread([&, i] {
            rc[i] = CCL_UNHANDLED_CUDA_ERROR;
            if (cudaSetDevice(devs[i]) != cudaSuccess) return;
            rc[i] = m.symmetric                       ? ccl_mem_free(comms[i], buf[i])
                    : cudaFree(buf[i]) == cudaSuccess ? CCL_SUCCESS
                                                      : CCL_UNHANDLED_CUDA_ERROR;
            if (rc[i] == CCL_SUCCESS) rc[i] = ccl_comm_destroy(comms[i]);
            cudaStreamDestroy(s[i]);
          });
        for (auto& th : t) th.join();
      }
      RANK_CHECK(rc[0] == CCL_SUCCESS && rc[1] == CCL_SUCCESS, "%s: free and destroy %d %d", m.name,
                 rc[0], rc[1]);
      unsetenv(m.name);
    }
    return 0;
  });
  EXPECT_EQ(results[0].code, 0);
}

/// A rank that stops calling collectives: its peer's next collective ends, within
/// CCL_WAIT_TIMEOUT, with a timeout report that names it, through each kind of wait a collective
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
    ccl_unique_id_t id;
    ASSERT_EQ(ccl_get_unique_id(&id), CCL_SUCCESS);
    auto results = fork_ranks(
        2,
        [&](int r) {
          setenv("CCL_WAIT_TIMEOUT", "300", 1);
          setenv("CCL_ALGO", w.algo, 1);
          setenv("CCL_PROTO", w.proto, 1);
          ccl_comm_t comm;
          if (init_on_gpu(id, 2, r, &comm)) return 1;
          cudaStream_t s;
          RANK_CUDA(cudaStreamCreate(&s));
          float* buf = nullptr;
          RANK_CUDA(cudaMalloc(&buf, w.count * sizeof(float)));
          RANK_CUDA(cudaMemset(buf, 0, w.count * sizeof(float)));
          RANK_CUDA(cudaDeviceSynchronize());
          // One call together first: whatever the communicator sets up on first use is set up.
          RANK_OK(ccl_allreduce(buf, buf, w.count, ccl_float32, ccl_sum, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          if (r == 1) {  // absent from here on, alive until rank 0 has had its report
            std::this_thread::sleep_for(std::chrono::seconds(4));
            RANK_OK(ccl_comm_abort(comm));
            return 0;
          }
          const auto t0 = std::chrono::steady_clock::now();
          RANK_OK(ccl_allreduce(buf, buf, w.count, ccl_float32, ccl_sum, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          const double sec =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          RANK_CHECK(sec > 0.25 && sec < 3.5, "%s/%s: gave up after %.2f s (CCL_WAIT_TIMEOUT=300)",
                     w.algo, w.proto, sec);
          ccl_result_t async;
          const char* msg = nullptr;
          RANK_OK(ccl_comm_get_async_error(comm, &async, &msg));
          RANK_CHECK(async == CCL_TIMEOUT, "%s/%s: async error %d", w.algo, w.proto, async);
          const std::string m = msg != nullptr ? msg : "";
          RANK_CHECK(
              m.find("timed out") != std::string::npos && m.find("peer 1") != std::string::npos,
              "%s/%s: report '%s' does not name peer 1", w.algo, w.proto, m.c_str());
          RANK_OK(ccl_comm_abort(comm));
          return 0;
        },
        60000);
    for (int r = 0; r < 2; ++r)
      EXPECT_EQ(results[r].code, 0) << w.algo << "/" << w.proto << " rank " << r;
  }
}

/// The copy-engine path waits for its peers on the host (the window exchange): a rank that never
/// comes makes the others' call fail within CCL_BOOTSTRAP_TIMEOUT, naming it, with nothing
/// enqueued.
TEST(CollectiveFailures, AnAbsentRankStopsTheCopyEnginePath) {
  REQUIRE_GPUS(1);
  ccl_unique_id_t id;
  ASSERT_EQ(ccl_get_unique_id(&id), CCL_SUCCESS);
  auto results = fork_ranks(
      2,
      [&](int r) {
        setenv("CCL_ALGO", "copy_engine", 1);
        setenv("CCL_BOOTSTRAP_TIMEOUT", "1500", 1);
        ccl_comm_t comm;
        if (init_on_gpu(id, 2, r, &comm)) return 1;
        cudaStream_t s;
        RANK_CUDA(cudaStreamCreate(&s));
        const size_t count = 4096;
        float* buf = nullptr;
        RANK_OK(ccl_mem_alloc(comm, 4 * count * sizeof(float), reinterpret_cast<void**>(&buf)));
        // One call together first (the communicator's set-up), then rank 1 stays away.
        RANK_OK(ccl_alltoall(buf, buf + 2 * count, count, ccl_float32, comm, s));
        RANK_CUDA(cudaStreamSynchronize(s));
        if (r == 1) {
          std::this_thread::sleep_for(std::chrono::seconds(4));
          RANK_OK(ccl_comm_abort(comm));
          return 0;
        }
        const auto t0 = std::chrono::steady_clock::now();
        const ccl_result_t res = ccl_alltoall(buf, buf + 2 * count, count, ccl_float32, comm, s);
        const double sec =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const std::string m = ccl_get_last_error();
        RANK_CHECK(res != CCL_SUCCESS && m.find("rank 1") != std::string::npos,
                   "copy_engine alltoall without rank 1: %d after %.2f s, '%s'", res, sec,
                   m.c_str());
        RANK_CHECK(sec > 1.0 && sec < 3.5,
                   "copy_engine alltoall gave up after %.2f s (CCL_BOOTSTRAP_TIMEOUT=1500)", sec);
        RANK_CHECK(cudaStreamQuery(s) == cudaSuccess, "the failed call enqueued work");
        RANK_OK(ccl_comm_abort(comm));
        return 0;
      },
      60000);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

/// A copy-engine proxy that fails (injected: CopyProxy::fail, as when CUDA refuses a copy) fails
/// the sender's kernel with CCL_UNHANDLED_CUDA_ERROR naming the proxy instead of leaving it
/// waiting, and its receiver, whose bytes never come, times out naming the sender. Both within
/// CCL_WAIT_TIMEOUT; the first exchange, before the failure, is correct.
TEST(CollectiveFailures, AFailedCopyEngineProxyIsReported) {
  REQUIRE_GPUS(1);
  ccl_unique_id_t id;
  ASSERT_EQ(ccl_get_unique_id(&id), CCL_SUCCESS);
  auto results = fork_ranks(
      2,
      [&](int r) {
        setenv("CCL_P2P_COPY_ENGINE", "256K", 1);
        setenv("CCL_WAIT_TIMEOUT", "2000", 1);
        ccl_comm_t comm;
        if (init_on_gpu(id, 2, r, &comm)) return 1;
        cudaStream_t s;
        RANK_CUDA(cudaStreamCreate(&s));
        const size_t bytes = size_t{1} << 20;
        char* buf = nullptr;
        RANK_OK(ccl_mem_alloc(comm, 2 * bytes, reinterpret_cast<void**>(&buf)));
        RANK_CUDA(cudaMemset(buf, 1 + r, bytes));
        auto exchange = [&]() -> int {
          RANK_OK(ccl_group_start());
          RANK_OK(ccl_send(buf, bytes, ccl_uint8, 1 - r, comm, s));
          RANK_OK(ccl_recv(buf + bytes, bytes, ccl_uint8, 1 - r, comm, s));
          RANK_OK(ccl_group_end());
          RANK_CUDA(cudaStreamSynchronize(s));
          return 0;
        };
        if (exchange()) return 1;
        std::vector<char> got(bytes);
        RANK_CUDA(cudaMemcpy(got.data(), buf + bytes, bytes, cudaMemcpyDeviceToHost));
        RANK_CHECK(got == std::vector<char>(bytes, static_cast<char>(2 - r)),
                   "the exchange before the failure");
        uint64_t issued = 0;
        if (proxy_copies(comm, &issued)) return 1;
        RANK_CHECK(issued == 1, "the first exchange did not go through the copy-engine proxy");
        coll::CollState* st = nullptr;
        RANK_CHECK(coll::coll_state(comm, &st).ok(), "no collective state");
        if (r == 0) st->p2p_proxy->fail("injected by the test");
        const auto t0 = std::chrono::steady_clock::now();
        if (exchange()) return 1;
        const double sec =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ccl_result_t async;
        const char* msg = nullptr;
        RANK_OK(ccl_comm_get_async_error(comm, &async, &msg));
        const std::string m = msg ? msg : "";
        if (r == 0)
          RANK_CHECK(
              async == CCL_UNHANDLED_CUDA_ERROR && m.find("copy-engine proxy") != std::string::npos,
              "sender with a failed proxy: %d '%s' after %.2f s", async, m.c_str(), sec);
        else
          RANK_CHECK(async == CCL_TIMEOUT && m.find("peer 0") != std::string::npos,
                     "receiver of the failed copy: %d '%s' after %.2f s", async, m.c_str(), sec);
        RANK_CHECK(sec < 3.5, "the failed exchange took %.2f s (CCL_WAIT_TIMEOUT=2000)", sec);
        RANK_OK(ccl_comm_abort(comm));
        return 0;
      },
      60000);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

/// Rank 0 sends `sent` bytes to rank 1, which receives `room` into symmetric or cudaMalloc
/// memory of `sent` bytes, poisoned (the sent bytes differ from the poison); then each rank checks
/// its communicator's async error with `check` (rank 1 also that its whole buffer kept the poison)
/// and aborts it.
int mismatched_pair(ccl_unique_id_t id, int r, size_t sent, size_t room, bool symmetric,
                    int (*check)(int r, ccl_result_t async, const std::string& msg)) {
  setenv("CCL_WAIT_TIMEOUT", "2000", 1);
  ccl_comm_t comm;
  if (init_on_gpu(id, 2, r, &comm)) return 1;
  cudaStream_t s;
  RANK_CUDA(cudaStreamCreate(&s));
  char* buf = nullptr;
  if (symmetric)
    RANK_OK(ccl_mem_alloc(comm, sent, reinterpret_cast<void**>(&buf)));
  else
    RANK_CUDA(cudaMalloc(&buf, sent));
  RANK_CUDA(cudaMemset(buf, r == 0 ? 0x11 : 0x5a, sent));  // sent bytes differ from the poison
  RANK_OK(ccl_group_start());
  if (r == 0) RANK_OK(ccl_send(buf, sent, ccl_uint8, 1, comm, s));
  if (r == 1) RANK_OK(ccl_recv(buf, room, ccl_uint8, 0, comm, s));
  RANK_OK(ccl_group_end());
  RANK_CUDA(cudaStreamSynchronize(s));
  ccl_result_t async;
  const char* msg = nullptr;
  RANK_OK(ccl_comm_get_async_error(comm, &async, &msg));
  if (int rc = check(r, async, msg ? msg : "")) return rc;
  if (r == 1) {
    std::vector<char> got(sent);
    RANK_CUDA(cudaMemcpy(got.data(), buf, sent, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < sent; ++i)
      RANK_CHECK(got[i] == 0x5a, "byte %zu of the receiver's buffer or heap was written", i);
  }
  RANK_OK(ccl_comm_abort(comm));
  return 0;
}

void run_mismatched_pair(size_t sent, size_t room, bool symmetric,
                         int (*check)(int, ccl_result_t, const std::string&)) {
  ccl_unique_id_t id;
  ASSERT_EQ(ccl_get_unique_id(&id), CCL_SUCCESS);
  auto results = fork_ranks(
      2, [&](int r) { return mismatched_pair(id, r, sent, room, symmetric, check); }, 60000);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

/// Through the rendezvous (1 MiB sent, 512 KiB received into symmetric memory): the receiver's
/// offer carries its size, so the sender's launch fails with CCL_INVALID_ARGUMENT naming the
/// receiver and both sizes before a byte is written, and the receiver, whose bytes never come,
/// times out naming the sender. Before the offer carried the size the send wrote past the
/// buffer into the heap beyond it.
TEST(CollectiveFailures, ASendLargerThanItsReceiveIsRefused) {
  REQUIRE_GPUS(1);
  run_mismatched_pair(
      size_t{1} << 20, size_t{1} << 19, true, [](int r, ccl_result_t async, const std::string& m) {
        if (r == 0)
          RANK_CHECK(async == CCL_INVALID_ARGUMENT && m.find("peer 1") != std::string::npos &&
                         m.find("1048576") != std::string::npos &&
                         m.find("524288") != std::string::npos,
                     "sender of 1 MiB to a 512 KiB receive: %d '%s'", async, m.c_str());
        else
          RANK_CHECK(async == CCL_TIMEOUT && m.find("peer 0") != std::string::npos,
                     "receiver of 512 KiB from a 1 MiB send: %d '%s'", async, m.c_str());
        return 0;
      });
}

/// Through the FIFOs (192 KiB sent, 100 KiB received into cudaMalloc memory): every message
/// carries its operation's size beside its slot, so the receiver refuses the first one with
/// CCL_INVALID_ARGUMENT naming the sender and both sizes and stores nothing; without the check
/// the extra messages would have gone to the pair's next receives.
TEST(CollectiveFailures, AFifoSendOfAnotherSizeIsRefused) {
  REQUIRE_GPUS(1);
  run_mismatched_pair(
      size_t{192} << 10, size_t{100} << 10, false,
      [](int r, ccl_result_t async, const std::string& m) {
        if (r == 1)
          RANK_CHECK(async == CCL_INVALID_ARGUMENT && m.find("peer 0") != std::string::npos &&
                         m.find("196608") != std::string::npos &&
                         m.find("102400") != std::string::npos,
                     "receiver of 100 KiB from a 192 KiB send: %d '%s'", async, m.c_str());
        return 0;
      });
}

/// Destroys a communicator that must not be in error: 0, or non-zero after printing its report.
int destroy_healthy(ccl_comm_t comm) {
  ccl_result_t async;
  const char* msg = nullptr;
  RANK_OK(ccl_comm_get_async_error(comm, &async, &msg));
  RANK_CHECK(async == CCL_SUCCESS, "async error %d: %s", async, msg ? msg : "");
  RANK_OK(ccl_comm_destroy(comm));
  return 0;
}

/// Ranks may pass buffers of different kinds. Within the staging, a call where one rank's
/// buffers are staged and its peer's symmetric runs, for every direct collective (two-shot,
/// reduce-scatter and alltoall switch every rank to pushing; the one-shot's staged side keeps the
/// exit barrier). Beyond it the ranks would cut the call into different pieces: every rank's
/// kernel fails with CCL_INVALID_ARGUMENT naming its peer instead of pairing different ranges.
TEST(CollectiveFailures, MixedBufferKinds) {
  REQUIRE_GPUS(1);
  ccl_unique_id_t id, id2;
  ASSERT_EQ(ccl_get_unique_id(&id), CCL_SUCCESS);
  ASSERT_EQ(ccl_get_unique_id(&id2), CCL_SUCCESS);
  auto results = fork_ranks(
      2,
      [&](int r) {
        setenv("CCL_COLL_SCRATCH_SIZE", "1M", 1);
        setenv("CCL_WAIT_TIMEOUT", "300", 1);
        setenv("CCL_ALGO",
               "allreduce:two_shot,reduce_scatter:direct,allgather:direct,broadcast:direct,"
               "reduce:direct,alltoall:direct",
               1);
        setenv("CCL_PROTO", "SIMPLE", 1);
        ccl_comm_t comm;
        if (init_on_gpu(id, 2, r, &comm)) return 1;
        cudaStream_t s;
        RANK_CUDA(cudaStreamCreate(&s));
        const size_t big = size_t{1} << 20;  // float32 elements: 4 MiB, four staging pieces
        float *sym = nullptr, *dev = nullptr;
        RANK_OK(ccl_mem_alloc(comm, 2 * big * sizeof(float), reinterpret_cast<void**>(&sym)));
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
          RANK_OK(ccl_allreduce(send, recv, 2 * count, ccl_float32, ccl_sum, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          RANK_CUDA(cudaMemcpy(got.data(), recv, 2 * count * 4, cudaMemcpyDeviceToHost));
          for (size_t i = 0; i < 2 * count; ++i)
            RANK_CHECK(got[i] == static_cast<float>((i * 7) % 1000 + (i * 7 + 1) % 1000),
                       "allreduce, rank %d staged: element %zu is %f", staged, i, got[i]);
          RANK_CUDA(cudaMemset(recv, 0xff, count * 4));
          RANK_OK(ccl_reduce_scatter(send, recv, count, ccl_float32, ccl_sum, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          RANK_CUDA(cudaMemcpy(got.data(), recv, count * 4, cudaMemcpyDeviceToHost));
          for (size_t i = 0; i < count; ++i) {
            const size_t g = r * count + i;
            RANK_CHECK(got[i] == static_cast<float>((g * 7) % 1000 + (g * 7 + 1) % 1000),
                       "reduce_scatter, rank %d staged: element %zu is %f", staged, i, got[i]);
          }
          // Alltoall: the symmetric rank receives into its window, the staged one in its inbox.
          RANK_CUDA(cudaMemset(recv, 0xff, 2 * count * 4));
          RANK_OK(ccl_alltoall(send, recv, count, ccl_float32, comm, s));
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
          RANK_OK(ccl_allgather(send, recv, count, ccl_float32, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          RANK_CUDA(cudaMemcpy(got.data(), recv, 2 * count * 4, cudaMemcpyDeviceToHost));
          for (size_t i = 0; i < 2 * count; ++i)
            RANK_CHECK(got[i] == static_cast<float>(((i % count) * 7 + i / count) % 1000),
                       "allgather, rank %d staged: element %zu is %f", staged, i, got[i]);
          for (int root = 0; root < 2; ++root) {
            RANK_CUDA(cudaMemset(recv, 0xff, 2 * count * 4));
            RANK_OK(ccl_broadcast(send, recv, 2 * count, ccl_float32, root, comm, s));
            RANK_CUDA(cudaStreamSynchronize(s));
            RANK_CUDA(cudaMemcpy(got.data(), recv, 2 * count * 4, cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < 2 * count; ++i)
              RANK_CHECK(got[i] == static_cast<float>((i * 7 + root) % 1000),
                         "broadcast from %d, rank %d staged: element %zu is %f", root, staged, i,
                         got[i]);
            RANK_CUDA(cudaMemset(recv, 0xff, 2 * count * 4));
            RANK_OK(ccl_reduce(send, recv, 2 * count, ccl_float32, ccl_sum, root, comm, s));
            RANK_CUDA(cudaStreamSynchronize(s));
            RANK_CUDA(cudaMemcpy(got.data(), recv, 2 * count * 4, cudaMemcpyDeviceToHost));
            for (size_t i = 0; r == root && i < 2 * count; ++i)
              RANK_CHECK(got[i] == static_cast<float>((i * 7) % 1000 + (i * 7 + 1) % 1000),
                         "reduce to %d, rank %d staged: element %zu is %f", root, staged, i,
                         got[i]);
          }
        }
        // A broadcast beyond the staging from a symmetric root to ranks that pass NULL as their
        // send buffer (NCCL's convention): they cut the call as their symmetric recv says.
        {
          std::vector<float> bin(big), bgot(big);
          for (size_t i = 0; i < big; ++i) bin[i] = static_cast<float>(i % 997);
          float* bsend = r == 1 ? sym : nullptr;
          if (r == 1) RANK_CUDA(cudaMemcpy(sym, bin.data(), big * 4, cudaMemcpyHostToDevice));
          RANK_CUDA(cudaMemset(sym + big, 0xff, big * 4));
          RANK_OK(ccl_broadcast(bsend, sym + big, big, ccl_float32, 1, comm, s));
          RANK_CUDA(cudaStreamSynchronize(s));
          RANK_CUDA(cudaMemcpy(bgot.data(), sym + big, big * 4, cudaMemcpyDeviceToHost));
          RANK_CHECK(bgot == bin, "broadcast beyond the staging with a NULL send at rank 0");
        }
        // Beyond it: rank 0 zero copy in one launch, rank 1 staged in four.
        float* b = r == 0 ? sym : dev;
        RANK_OK(ccl_allreduce(b, b + big, big, ccl_float32, ccl_sum, comm, s));
        RANK_CHECK(cudaStreamSynchronize(s) == cudaSuccess, "the kernels end (no trap)");
        ccl_result_t async;
        const char* msg = nullptr;
        RANK_OK(ccl_comm_get_async_error(comm, &async, &msg));
        const std::string m = msg != nullptr ? msg : "";
        const std::string peer = r == 0 ? "peer 1" : "peer 0";
        RANK_CHECK(async == CCL_INVALID_ARGUMENT && m.find("collective") != std::string::npos &&
                       m.find(peer) != std::string::npos,
                   "async error %d, report '%s' (wanted an argument error naming %s)", async,
                   m.c_str(), peer.c_str());
        RANK_OK(ccl_comm_abort(comm));
        // The SIMPLE one-shot, each side of the mix in turn, on a second communicator: its
        // staged side leaves without an exit barrier only where no peer is read in place (the
        // symmetric side waits there for it; before, it timed out).
        setenv("CCL_ALGO", "allreduce:one_shot", 1);
        if (init_on_gpu(id2, 2, r, &comm)) return 1;
        RANK_OK(ccl_mem_alloc(comm, 2 * big * sizeof(float), reinterpret_cast<void**>(&sym)));
        for (int staged = 0; staged < 2; ++staged) {
          float* b = r == staged ? dev : sym;
          RANK_CUDA(cudaMemcpy(b, in.data(), 2 * count * 4, cudaMemcpyHostToDevice));
          RANK_CUDA(cudaMemset(b + big, 0xff, 2 * count * 4));
          for (int k = 0; k < 3; ++k)  // back to back: the staged side would run ahead
            RANK_OK(ccl_allreduce(b, b + big, 2 * count, ccl_float32, ccl_sum, comm, s));
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

// Epochs and point-to-point sequence numbers crossing 2^32 (CCL_EPOCH_BASE starts them just
// below). LL entries carry a 32-bit flag; it was the low 32 bits, 0 at 2^32, which is what rows
// never written hold, so a call there read the units no earlier call of its parity reached as
// arrived (zeros in the sum). Each call below is larger than the one before, so every call has
// such units. LL one-shot allreduce, point-to-point LL, then the tuner's own choices on a second
// communicator started just below 2^32.
TEST(CollectiveCounters, CrossTheLLFlagWrap) {
  REQUIRE_GPUS(1);
  ccl_unique_id_t id, id2;
  ASSERT_EQ(ccl_get_unique_id(&id), CCL_SUCCESS);
  ASSERT_EQ(ccl_get_unique_id(&id2), CCL_SUCCESS);
  auto results = fork_ranks(
      2,
      [&](int r) {
        setenv("CCL_EPOCH_BASE", std::to_string((uint64_t{1} << 32) - 6).c_str(), 1);
        setenv("CCL_WAIT_TIMEOUT", "3000", 1);
        ccl_comm_t comm;
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
          RANK_OK(ccl_allreduce(buf, out, count, ccl_float32, ccl_sum, comm, s));
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
        setenv("CCL_PROTO", "LL", 1);
        setenv("CCL_ALGO", "allreduce:one_shot", 1);
        for (int k = 0; k < 12; ++k)
          if (int rc = allreduce(size_t{4} << k, k, "LL")) return rc;
        // Point-to-point LL: 12 exchanges (sequence numbers 2^32 - 5 .. 2^32 + 6), doubling
        // from 8 bytes to 16 KiB.
        for (int k = 0; k < 12; ++k) {
          const size_t bytes = size_t{8} << k;
          RANK_CUDA(fill(100 + k));
          RANK_CUDA(cudaMemset(out, 0xff, bytes));
          RANK_OK(ccl_group_start());
          RANK_OK(ccl_send(buf, bytes, ccl_uint8, 1 - r, comm, s));
          RANK_OK(ccl_recv(out, bytes, ccl_uint8, 1 - r, comm, s));
          RANK_OK(ccl_group_end());
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
        setenv("CCL_EPOCH_BASE", std::to_string((uint64_t{1} << 32) - 1).c_str(), 1);
        unsetenv("CCL_PROTO");
        unsetenv("CCL_ALGO");
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
}  // namespace ccl::test
