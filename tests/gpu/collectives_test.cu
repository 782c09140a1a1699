// SPDX-License-Identifier: Apache-2.0
// Every collective on real GPUs, 2 processes on 2 GPUs, 3 to 8 ranks sharing them, and one rank
// (a copy unless GICL_ALGO forces the general kernels): every algorithm (GICL_ALGO) x every type x
// every reduction, in place and out of place, ordinary, registered and symmetric buffers,
// unaligned offsets, counts from 1 element to several staging pieces, poisoned outputs, bitwise
// comparison with the host's reference (coll_cases.cu), run-to-run determinism, cross-algorithm
// identity under GICL_DETERMINISTIC=1, CUDA graph capture and replay, registration, 10^4 mixed
// back-to-back calls, push mode, stream order under programmatic dependent launch, argument
// checks, one rank's copies, and no kernel deeper than CUDA's default stack; the matrix's
// copy-engine, send/recv and back-to-back / stream order steps live in host_exchange_test.cu,
// p2p_test.cu and coll_order_test.cu, failures in coll_failures_test.cu.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "collectives/common/coll_args.h"
#include "collectives/schedule/tables.hpp"
#include "gicl/gicl.h"
#include "gpu/coll_cases.cuh"
#include "gpu/coll_reference.hpp"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

struct AlgoConfig {
  const char* algo;  // GICL_ALGO
  const char* proto;
  std::vector<Collective> colls;
  bool nvls_emulate = false;
};

int algorithms(gicl_comm_t world, int me, int n, uint32_t seed, cudaStream_t s) {
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
  // Debugging: one algorithm (GICL_TEST_ALGO) and/or one protocol (GICL_TEST_PROTO).
  const char* only = std::getenv("GICL_TEST_ALGO");
  const char* only_proto = std::getenv("GICL_TEST_PROTO");
  for (const AlgoConfig& cfg : configs) {
    if (only != nullptr && std::strcmp(only, cfg.algo) != 0) continue;
    if (only_proto != nullptr && std::strcmp(only_proto, cfg.proto) != 0) continue;
    setenv("GICL_ALGO", cfg.algo, 1);
    setenv("GICL_PROTO", cfg.proto, 1);
    setenv("GICL_NVLS_EMULATE", cfg.nvls_emulate ? "1" : "0", 1);
    gicl_comm_t comm;
    if (fresh_comm(world, me, &comm)) return 1;
    std::string label = std::string(cfg.algo[0] ? cfg.algo : "tuner") + "/" + cfg.proto;
    for (Collective c : cfg.colls)
      if (matrix(comm, me, n, c, seed, s, label.c_str(), cfg.algo[0] == 0 || c == C::kAllReduce))
        return 1;
    // LL128 at its rows' capacity: every block of the grid walks several line groups per warp.
    if (std::strcmp(cfg.proto, "LL128") == 0)
      for (Collective c : cfg.colls) {
        const size_t block = coll::ll128_capacity(n) / 4 - 3;  // float32 elements, a ragged tail
        Case k{c, gicl_sum, 1 % n, block, Mem::kSymmetric, 0, true, seed++};
        if (run_case_any(comm, me, n, gicl_float32, k, s, label.c_str())) return 1;
      }
    RANK_OK(gicl_comm_destroy(comm));
  }
  unsetenv("GICL_ALGO");
  unsetenv("GICL_PROTO");
  return 0;
}

/// GICL_DETERMINISTIC=1: random (inexact) inputs reduce to the canonical result bitwise under
/// every allreduce algorithm and for sizes that pick different protocols.
int deterministic(gicl_comm_t world, int me, int n, uint32_t seed, cudaStream_t s) {
  setenv("GICL_DETERMINISTIC", "1", 1);
  for (const char* algo :
       {"allreduce:one_shot", "allreduce:two_shot", "ring", "recursive_doubling", "rabenseifner"}) {
    setenv("GICL_ALGO", algo, 1);
    gicl_comm_t comm;
    if (fresh_comm(world, me, &comm)) return 1;
    for (size_t count : {size_t{5}, size_t{4099}, size_t{300001}})
      for (gicl_datatype_t d : {gicl_float32, gicl_bfloat16, gicl_float16, gicl_float8_e4m3})
        for (gicl_redop_t op : {gicl_sum, gicl_avg}) {
          Case k{Collective::kAllReduce, op, 0, count, Mem::kDevice, 0, false, seed};
          if (run_case_any(comm, me, n, d, k, s, algo)) return 1;
        }
    Case rs{Collective::kReduceScatter, gicl_sum, 0, 4099, Mem::kDevice, 0, false, seed};
    if (std::strcmp(algo, "ring") == 0 && run_case_any(comm, me, n, gicl_float32, rs, s, algo))
      return 1;
    RANK_OK(gicl_comm_destroy(comm));
  }
  unsetenv("GICL_ALGO");
  unsetenv("GICL_DETERMINISTIC");
  return 0;
}

/// Every collective captured into one graph, replayed with new inputs each time. The communicator
/// is new: its first collective (which sets up the scratch) is captured too, in the strictest
/// capture mode.
int graphs(gicl_comm_t world, int me, int n, cudaStream_t s) {
  gicl_comm_t comm;
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
    RANK_OK(call(comm, colls[i], send[i], recv[i], count, gicl_float32, gicl_sum, 1 % n, s));
  RANK_CUDA(cudaStreamEndCapture(s, &graph));
  RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 4; ++replay) {
    std::vector<std::vector<std::vector<float>>> in(6);
    for (int i = 0; i < 6; ++i) {
      size_t se, re;
      coll_elems(colls[i], count, n, &se, &re);
      for (int r = 0; r < n; ++r)
        in[i].push_back(make_input<gicl_float32>(replay * 10 + i, r, se, gicl_sum, true));
      RANK_CUDA(cudaMemcpy(send[i], in[i][me].data(), se * 4, cudaMemcpyHostToDevice));
      RANK_CUDA(cudaMemset(recv[i], 0, re * 4));
    }
    RANK_CUDA(cudaGraphLaunch(exec, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < 6; ++i) {
      if (colls[i] == Collective::kReduce && me != 1 % n) continue;
      size_t se, re;
      coll_elems(colls[i], count, n, &se, &re);
      const auto want = reference<gicl_float32>(colls[i], gicl_sum, 1 % n, me, n, count, in[i]);
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
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// gicl_comm_register beyond the matrix: two registrations inside one allocation (the peers map it
/// once), one outliving the other; a symmetric buffer; refused memory and handles fail on every
/// rank, the rank at fault with GICL_INVALID_ARGUMENT and its peers with GICL_REMOTE_ERROR.
int registration(gicl_comm_t comm, int me, int n, cudaStream_t s) {
  const size_t count = 100000;  // past the LL limit: the zero-copy kernels
  float* base = nullptr;
  RANK_CUDA(cudaMalloc(&base, 4 * count * n * sizeof(float)));
  float *a_send = base, *a_recv = base + count * n, *b_send = base + 2 * count * n,
        *b_recv = base + 3 * count * n;
  void *ha = nullptr, *hb = nullptr;
  RANK_OK(gicl_comm_register(comm, a_send, 2 * count * n * sizeof(float), &ha));
  RANK_OK(gicl_comm_register(comm, b_send, 2 * count * n * sizeof(float), &hb));
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
  RANK_OK(gicl_allgather(a_send, a_recv, count, gicl_float32, comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  if (check_allgather(a_recv, "registered allgather")) return 1;
  RANK_OK(gicl_comm_deregister(comm, ha));
  // b is still registered (its allocation still mapped by the peers); a is staged now.
  RANK_CUDA(cudaMemset(b_recv, 0, count * n * 4));
  RANK_OK(gicl_allgather(b_send, b_recv, count, gicl_float32, comm, s));
  RANK_CUDA(cudaMemset(a_recv, 0, count * n * 4));
  RANK_OK(gicl_allgather(a_send, a_recv, count, gicl_float32, comm, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  if (check_allgather(b_recv, "allgather after the other registration left")) return 1;
  if (check_allgather(a_recv, "allgather of a deregistered buffer")) return 1;
  const auto I = GICL_INVALID_ARGUMENT;
  RANK_CHECK(gicl_comm_deregister(comm, ha) == I, "deregister twice");
  RANK_CHECK(std::strstr(gicl_get_last_error(), "handle") != nullptr, "message '%s'",
             gicl_get_last_error());
  RANK_OK(gicl_comm_deregister(comm, hb));
  // A symmetric buffer is accepted (nothing to map).
  void* sym = nullptr;
  RANK_OK(gicl_mem_alloc(comm, 4096, &sym));
  RANK_OK(gicl_comm_register(comm, sym, 4096, &ha));
  RANK_OK(gicl_comm_deregister(comm, ha));
  RANK_OK(gicl_mem_free(comm, sym));
  // Refused everywhere: host memory, a size past the allocation.
  std::vector<char> host(64);
  void* h = nullptr;
  RANK_CHECK(gicl_comm_register(comm, host.data(), host.size(), &h) == I && h == nullptr,
             "host memory");
  RANK_CHECK(std::strstr(gicl_get_last_error(), "buff") != nullptr, "message '%s'",
             gicl_get_last_error());
  RANK_CHECK(gicl_comm_register(comm, base, 10 * count * n * sizeof(float), &h) == I, "size");
  // One rank at fault: it gets INVALID_ARGUMENT, the others REMOTE_ERROR naming it.
  const gicl_result_t r0 = gicl_comm_register(comm, me == 0 ? nullptr : base, 64, &h);
  if (me == 0) {
    RANK_CHECK(r0 == I, "rank 0's NULL buffer: %d", r0);
  } else {
    RANK_CHECK(r0 == GICL_REMOTE_ERROR && std::strstr(gicl_get_last_error(), "rank 0") != nullptr,
               "peer of a failed registration: %d '%s'", r0, gicl_get_last_error());
  }
  RANK_CHECK(gicl_comm_deregister(comm, reinterpret_cast<void*>(0x12345)) == I, "stray handle");
  RANK_CUDA(cudaFree(base));
  return 0;
}

/// In-place alltoall on windows (symmetric and registered buffers): where a call spans several
/// pieces of the 1 MiB staging every rank offers its buffer and the ranks trade blocks in place
/// (direct.cu, swap_blocks); within one piece they push to inboxes. Aligned and not, three
/// element sizes, under SIMPLE and under the tuner's protocol. Then rank 0 in place on symmetric
/// memory beside peers in place on cudaMalloc memory: not every rank offers a window, so all push
/// to inboxes, in the same pieces.
int in_place_alltoall(gicl_comm_t world, int me, int n, uint32_t seed, cudaStream_t s) {
  if (n < 2) return 0;
  const bool few = n > 2;  // ranks sharing a GPU: fewer cases
  for (const char* proto : {"SIMPLE", "AUTO"}) {
    setenv("GICL_PROTO", proto, 1);
    gicl_comm_t comm;
    if (fresh_comm(world, me, &comm)) return 1;
    for (size_t count : {size_t{1}, size_t{7}, size_t{1000}, size_t{70001}, size_t{300001}}) {
      if (few && count != 7 && count != 300001) continue;
      for (gicl_datatype_t d : {gicl_int8, gicl_float32, gicl_uint64}) {
        if (few && d != gicl_float32) continue;
        for (Mem m : {Mem::kInPlaceSymmetric, Mem::kInPlaceRegistered})
          for (size_t off : {size_t{0}, size_t{1}}) {
            const Case k{Collective::kAllToAll, gicl_sum, 0, count, m, off, true, seed++};
            const std::string label = std::string("in-place alltoall, ") + proto;
            if (run_case_any(comm, me, n, d, k, s, label.c_str())) return 1;
          }
      }
    }
    RANK_OK(gicl_comm_destroy(comm));
  }
  unsetenv("GICL_PROTO");
  gicl_comm_t comm;
  if (fresh_comm(world, me, &comm)) return 1;
  auto value = [](int from, int block, size_t i) {
    return static_cast<float>((static_cast<size_t>(from) * 1000003 + block * 7919 + i) % 65521);
  };
  for (size_t count : {size_t{1000}, size_t{300001}}) {
    const size_t elems = count * n;
    float *sym = nullptr, *dev = nullptr;
    RANK_OK(gicl_mem_alloc(comm, elems * sizeof(float), reinterpret_cast<void**>(&sym)));
    RANK_CUDA(cudaMalloc(&dev, elems * sizeof(float)));
    float* buf = me == 0 ? sym : dev;
    std::vector<float> h(elems);
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < count; ++i) h[j * count + i] = value(me, j, i);
    RANK_CUDA(cudaMemcpy(buf, h.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
    RANK_OK(gicl_alltoall(buf, buf, count, gicl_float32, comm, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(h.data(), buf, elems * sizeof(float), cudaMemcpyDeviceToHost));
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < count; ++i)
        RANK_CHECK(h[j * count + i] == value(j, me, i),
                   "in-place alltoall, rank 0 symmetric: count %zu block %d element %zu is %f",
                   count, j, i, h[j * count + i]);
    RANK_CUDA(cudaFree(dev));
    RANK_OK(gicl_mem_free(comm, sym));
  }
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// The direct broadcast with receive buffers of mixed kinds: even ranks receive into symmetric
/// memory (their peers push their parts there), odd ranks into cudaMalloc memory (their peers
/// push into their staging, copied out after the exit barrier, or, where a piece exceeds the
/// staging, nobody pushes and they read every part from the root). Every root in turn, in place
/// at the root and not, sizes that split unevenly among the non-roots. Ranks cut pieces alike
/// only where their buffers agree on staging: the sizes above the 1 MiB staging pass symmetric
/// send buffers everywhere, out of place.
int mixed_broadcast(gicl_comm_t world, int me, int n, cudaStream_t s) {
  if (n < 3) return 0;
  setenv("GICL_ALGO", "broadcast:direct", 1);
  setenv("GICL_PROTO", "SIMPLE", 1);
  gicl_comm_t comm;
  if (fresh_comm(world, me, &comm)) return 1;
  unsetenv("GICL_ALGO");
  unsetenv("GICL_PROTO");
  auto value = [](int root, size_t i) {
    return static_cast<uint32_t>((static_cast<size_t>(root) * 2654435761u + i * 40503u) ^ i);
  };
  for (size_t count : {size_t{1}, size_t{13}, size_t{4099}, size_t{200003}, size_t{1000003}}) {
    const bool big = count * 4 > (size_t{1} << 20);
    uint32_t *sym = nullptr, *dev = nullptr;
    RANK_OK(gicl_mem_alloc(comm, count * 4, reinterpret_cast<void**>(&sym)));
    RANK_CUDA(cudaMalloc(&dev, count * 4));
    uint32_t* buf = me % 2 == 0 ? sym : dev;
    std::vector<uint32_t> h(count);
    for (int root = 0; root < n; ++root)
      for (bool in_place : {false, true}) {
        if (big && in_place) continue;
        uint32_t* send = in_place ? buf : (me == root || big ? sym : nullptr);
        if (me == root) {
          for (size_t i = 0; i < count; ++i) h[i] = value(root, i);
          RANK_CUDA(cudaMemcpy(in_place ? buf : sym, h.data(), count * 4, cudaMemcpyHostToDevice));
          if (!in_place) RANK_CUDA(cudaMemset(dev, 0xee, count * 4));
        } else {
          RANK_CUDA(cudaMemset(buf, 0xee, count * 4));
        }
        uint32_t* recv = me == root && !in_place ? dev : buf;
        RANK_OK(gicl_broadcast(send, recv, count, gicl_uint32, root, comm, s));
        RANK_CUDA(cudaStreamSynchronize(s));
        RANK_CUDA(cudaMemcpy(h.data(), recv, count * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; ++i)
          RANK_CHECK(h[i] == value(root, i),
                     "mixed broadcast, count %zu root %d%s: element %zu is %08x (want %08x)", count,
                     root, in_place ? " in place" : "", i, h[i], value(root, i));
      }
    RANK_CUDA(cudaFree(dev));
    RANK_OK(gicl_mem_free(comm, sym));
  }
  // Every buffer cudaMalloc'd, three pieces of the staging: the non-roots take their peers' parts
  // in their staging piece by piece.
  const size_t count = 600001;
  uint32_t *send = nullptr, *recv = nullptr;
  RANK_CUDA(cudaMalloc(&send, count * 4));
  RANK_CUDA(cudaMalloc(&recv, count * 4));
  std::vector<uint32_t> h(count);
  for (int root = 0; root < n; ++root) {
    for (size_t i = 0; i < count; ++i) h[i] = value(root, i);
    RANK_CUDA(cudaMemcpy(send, h.data(), count * 4, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemset(recv, 0xee, count * 4));
    RANK_OK(gicl_broadcast(send, recv, count, gicl_uint32, root, comm, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(h.data(), recv, count * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i)
      RANK_CHECK(h[i] == value(root, i), "staged broadcast, root %d: element %zu is %08x", root, i,
                 h[i]);
  }
  RANK_CUDA(cudaFree(send));
  RANK_CUDA(cudaFree(recv));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// Every entry point refuses bad input with GICL_INVALID_ARGUMENT and enqueues nothing.
int bad_input(gicl_comm_t comm, int me, int n, cudaStream_t s) {
  float* d = nullptr;
  RANK_CUDA(cudaMalloc(&d, 64 * n));
  std::vector<float> host(16);
  const auto I = GICL_INVALID_ARGUMENT;
  const auto bad_t = static_cast<gicl_datatype_t>(99);
  const auto bad_op = static_cast<gicl_redop_t>(99);
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                       Collective::kBroadcast, Collective::kReduce, Collective::kAllToAll}) {
    const char* name = coll::collective_name(c);
    // Every rank must refuse every call (a rank that accepted one would run it alone): each is
    // its own root, so no rank ignores a buffer as a non-root would.
    const int root = me;
    RANK_CHECK(call(nullptr, c, d, d, 4, gicl_float32, gicl_sum, root, s) == I, "%s: null comm",
               name);
    RANK_CHECK(call(comm, c, d, d, 4, bad_t, gicl_sum, root, s) == I, "%s: datatype", name);
    RANK_CHECK(call(comm, c, d, d, SIZE_MAX / 2, gicl_float32, gicl_sum, root, s) == I,
               "%s: overflow", name);
    RANK_CHECK(call(comm, c, host.data(), d, 4, gicl_float32, gicl_sum, root, s) == I,
               "%s: host send", name);
    RANK_CHECK(call(comm, c, d, d, 1 << 24, gicl_float32, gicl_sum, root, s) == I,
               "%s: small buffer", name);
    RANK_CHECK(call(comm, c, nullptr, d, 4, gicl_float32, gicl_sum, root, s) == I, "%s: null send",
               name);
    RANK_CHECK(call(comm, c, d, nullptr, 4, gicl_float32, gicl_sum, root, s) == I, "%s: null recv",
               name);
    if (reduces(c))
      RANK_CHECK(call(comm, c, d, d, 4, gicl_float32, bad_op, root, s) == I, "%s: op", name);
    if (c == Collective::kBroadcast || c == Collective::kReduce) {
      RANK_CHECK(call(comm, c, d, d, 4, gicl_float32, gicl_sum, n, s) == I, "%s: root n", name);
      RANK_CHECK(call(comm, c, d, d, 4, gicl_float32, gicl_sum, -1, s) == I, "%s: root -1", name);
    }
    RANK_CHECK(std::strstr(gicl_get_last_error(), name) != nullptr, "%s: message '%s'", name,
               gicl_get_last_error());
  }
  RANK_CHECK(gicl_send(d, 4, gicl_float32, n, comm, s) == I, "send: peer");
  RANK_CHECK(gicl_recv(d, 4, gicl_float32, -1, comm, s) == I, "recv: peer");
  RANK_CHECK(gicl_send(nullptr, 4, gicl_float32, 0, comm, s) == I, "send: null");
  RANK_CHECK(gicl_recv(d, 4, bad_t, 0, comm, s) == I, "recv: datatype");
  RANK_CHECK(gicl_send(nullptr, 4, gicl_float32, 0, nullptr, s) == I, "send: comm");
  RANK_CHECK(gicl_barrier(nullptr, s) == I, "barrier: comm");
  RANK_CHECK(gicl_group_end() == GICL_INVALID_USAGE, "group end without start");
  // Nothing was enqueued: the stream is idle and the communicator healthy.
  RANK_CHECK(cudaStreamQuery(s) == cudaSuccess, "stream busy after refused calls");
  gicl_result_t async;
  RANK_OK(gicl_comm_get_async_error(comm, &async, nullptr));
  RANK_CHECK(async == GICL_SUCCESS, "communicator in error");
  RANK_CUDA(cudaFree(d));
  return 0;
}

/// One rank copies with a kernel below 48 MiB (32 MiB in a graph) and the copy engine from
/// there, and in a graph without PDL (local_copy.cc): both sides of the eager cutoff with ragged
/// lengths, then captured with GICL_PDL=1 and 0 (aligned, unaligned, and both sides of the graph
/// cutoff in one graph, replayed).
int one_rank_copies(gicl_comm_t world, cudaStream_t s) {
  const size_t at = (size_t{48} << 20) / sizeof(float),
               in_graph = (size_t{32} << 20) / sizeof(float);
  uint32_t seed = 7;
  for (size_t count : {at - 1, at, at + 3})
    for (Collective c : {Collective::kAllReduce, Collective::kAllToAll})
      for (Mem m : {Mem::kDevice, Mem::kSymmetric}) {
        Case k{c, c == Collective::kAllReduce ? gicl_avg : gicl_sum, 0, count, m, 0, true, seed++};
        if (run_case_any(world, 0, 1, gicl_float32, k, s, "one rank")) return 1;
      }
  const size_t counts[] = {1001, 1001, in_graph - 1, in_graph + 3};
  const size_t offsets[] = {0, 1, 0, 0};  // floats past an aligned address
  constexpr int kCopies = 4;
  for (const char* pdl : {"1", "0"}) {
    setenv("GICL_PDL", pdl, 1);
    gicl_comm_t comm;
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
      RANK_OK(gicl_allreduce(send[i], recv[i], counts[i], gicl_float32, gicl_max, comm, s));
    RANK_CUDA(cudaStreamEndCapture(s, &graph));
    RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 2; ++replay) {
      std::vector<std::vector<float>> in(kCopies);
      for (int i = 0; i < kCopies; ++i) {
        in[i] = make_input<gicl_float32>(seed++, 0, counts[i], gicl_max, true);
        RANK_CUDA(cudaMemcpy(send[i], in[i].data(), counts[i] * 4, cudaMemcpyHostToDevice));
        RANK_CUDA(cudaMemset(recv[i], 0, counts[i] * 4));
      }
      RANK_CUDA(cudaGraphLaunch(exec, s));
      RANK_CUDA(cudaStreamSynchronize(s));
      for (int i = 0; i < kCopies; ++i) {
        std::vector<float> got(counts[i]);
        RANK_CUDA(cudaMemcpy(got.data(), recv[i], counts[i] * 4, cudaMemcpyDeviceToHost));
        RANK_CHECK(std::memcmp(got.data(), in[i].data(), counts[i] * 4) == 0,
                   "one rank, GICL_PDL=%s, graph replay %d: copy %d (%zu floats) wrong", pdl,
                   replay, i, counts[i]);
      }
    }
    RANK_CUDA(cudaGraphExecDestroy(exec));
    RANK_CUDA(cudaGraphDestroy(graph));
    for (int i = 0; i < kCopies; ++i) {
      RANK_CUDA(cudaFree(send[i] - offsets[i]));
      RANK_CUDA(cudaFree(recv[i] - offsets[i]));
    }
    RANK_OK(gicl_comm_destroy(comm));
  }
  unsetenv("GICL_PDL");
  return 0;
}

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, EveryAlgorithmTypeAndReduction) {
  REQUIRE_GPUS(1);
  const int n = GetParam();
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  const uint32_t seed = std::random_device{}();
  auto results = fork_ranks(
      n,
      [&](int r) {
        setenv("GICL_COLL_SCRATCH_SIZE", "1M", 1);
        gicl_comm_t world;
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
        if (in_place_alltoall(world, r, n, seed, s)) return 13;
        if (mixed_broadcast(world, r, n, s)) return 14;
        if (dependent_launch(world, r, n, s)) return 9;
        if (copy_engine(world, r, n, s)) return 12;
        if (point_to_point(world, r, n, s)) return 7;
        if (n == 1 && one_rank_copies(world, s)) return 11;
        RANK_OK(gicl_barrier(world, s));
        RANK_CUDA(cudaStreamSynchronize(s));
        gicl_result_t async;
        RANK_OK(gicl_comm_get_async_error(world, &async, nullptr));
        RANK_CHECK(async == GICL_SUCCESS, "communicator in error");
        // No kernel the matrix launched needs more stack than CUDA's default (1 KiB): a deeper
        // one makes the driver reserve local memory for it on every thread the GPU can hold,
        // and keep it (the send/recv kernel once took 2432 bytes: p2p_footprint_test.cu).
        size_t stack = 0;
        RANK_CUDA(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
        RANK_CHECK(stack <= 1024, "a kernel raised the stack limit to %zu bytes", stack);
        RANK_OK(gicl_comm_destroy(world));
        return 0;
      },
      600000);
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(results[r].code, 0) << "rank " << r << " (seed " << seed << ")";
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(1, 2, 3, 4, 8));

}  // namespace
}  // namespace gicl::test
