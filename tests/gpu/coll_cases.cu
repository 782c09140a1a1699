// SPDX-License-Identifier: Apache-2.0
#include "gpu/coll_cases.cuh"

#include <cstring>
#include <vector>

#include "collectives/host/coll_state.hpp"
#include "gpu/coll_reference.hpp"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {

gicl_result_t call(gicl_comm_t comm, Collective c, const void* send, void* recv, size_t count,
                   gicl_datatype_t d, gicl_redop_t op, int root, cudaStream_t s) {
  switch (c) {
    case Collective::kAllReduce:
      return gicl_allreduce(send, recv, count, d, op, comm, s);
    case Collective::kReduceScatter:
      return gicl_reduce_scatter(send, recv, count, d, op, comm, s);
    case Collective::kAllGather:
      return gicl_allgather(send, recv, count, d, comm, s);
    case Collective::kBroadcast:
      return gicl_broadcast(send, recv, count, d, root, comm, s);
    case Collective::kReduce:
      return gicl_reduce(send, recv, count, d, op, root, comm, s);
    case Collective::kAllToAll:
      return gicl_alltoall(send, recv, count, d, comm, s);
  }
  return GICL_INTERNAL_ERROR;
}

namespace {

/// One case of type D (run_case_any dispatches on the runtime type).
template <gicl_datatype_t D>
int run_case(gicl_comm_t comm, int me, int n, const Case& k, cudaStream_t s, const char* label) {
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
  const bool symmetric = k.mem == Mem::kSymmetric || k.mem == Mem::kInPlaceSymmetric;
  const bool in_place =
      k.mem == Mem::kInPlace || k.mem == Mem::kInPlaceSymmetric || k.mem == Mem::kInPlaceRegistered;
  if (symmetric) {
    RANK_OK(gicl_mem_alloc(comm, bytes, reinterpret_cast<void**>(&base)));
  } else {
    RANK_CUDA(cudaMalloc(&base, bytes));
  }
  void* reg = nullptr;
  if (k.mem == Mem::kRegistered || k.mem == Mem::kInPlaceRegistered)
    RANK_OK(gicl_comm_register(comm, base, bytes, &reg));
  T *send = base + off, *recv = base + off + se + 16;
  if (in_place) {
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
    // Poison on the call's stream, done before the input's copy into the same buffer (a
    // legacy-stream memset would not be ordered with a non-blocking stream's calls).
    RANK_CUDA(cudaMemsetAsync(base, 0x7b, bytes, s));
    RANK_CUDA(cudaStreamSynchronize(s));
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
                 k.mem == Mem::kInPlace             ? "in place"
                 : k.mem == Mem::kSymmetric         ? "symmetric"
                 : k.mem == Mem::kRegistered        ? "registered"
                 : k.mem == Mem::kInPlaceSymmetric  ? "in place, symmetric"
                 : k.mem == Mem::kInPlaceRegistered ? "in place, registered"
                                                    : "device",
                 off, rep, wrong, re, at, g, w);
      if (rep == 1)
        RANK_CHECK(std::memcmp(got.data(), first.data(), re * sizeof(T)) == 0,
                   "[%s] %s: run 2 differs from run 1", label, coll::collective_name(k.coll));
      first = got;
    }
  }
  if (reg != nullptr) RANK_OK(gicl_comm_deregister(comm, reg));
  if (symmetric) {
    RANK_OK(gicl_mem_free(comm, base));
  } else {
    RANK_CUDA(cudaFree(base));
  }
  return 0;
}

}  // namespace

int run_case_any(gicl_comm_t comm, int me, int n, gicl_datatype_t d, const Case& k, cudaStream_t s,
                 const char* label) {
  switch (d) {
#define GICL_CASE(e, T, A, name) \
  case e:                        \
    return run_case<e>(comm, me, n, k, s, label);
    GICL_FOR_EACH_DTYPE(GICL_CASE)
#undef GICL_CASE
    default:
      return 99;
  }
}

int matrix(gicl_comm_t comm, int me, int n, Collective c, uint32_t seed, cudaStream_t s,
           const char* label, bool full) {
  // 70001 x n elements of 8 bytes pass the 1 MiB staging several times.
  const size_t counts[] = {1, 7, 1000, 70001};
  const gicl_redop_t ops[] = {gicl_sum, gicl_prod, gicl_min, gicl_max, gicl_avg};
  for (int d = 0; d < gicl_num_datatypes; ++d) {
    // Ranks sharing a GPU time-slice it (every call costs milliseconds): beyond 2 ranks, one type
    // of each size and class.
    if (n > 2 && d != gicl_int8 && d != gicl_float16 && d != gicl_float32 && d != gicl_uint64)
      continue;
    // Beyond 4 ranks (8 share two GPUs, or one): a float and an integer type, two sizes.
    if (n > 4 && d != gicl_int8 && d != gicl_float32) continue;
    for (size_t ci = 0; ci < 4; ++ci) {
      if (n > 2 && (ci == 0 || ci == 2) && d != gicl_float32) continue;
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
          if (run_case_any(comm, me, n, static_cast<gicl_datatype_t>(d), k, s, label)) return 1;
        }
      }
    }
  }
  return 0;
}

int fresh_comm(gicl_comm_t world, int me, gicl_comm_t* out) {
  RANK_OK(gicl_comm_split(world, 0, me, out));
  return 0;
}

int proxy_copies(gicl_comm_t comm, uint64_t* out) {
  coll::CollState* st = nullptr;
  RANK_CHECK(coll::coll_state(comm, &st).ok(), "no collective state");
  *out = st->p2p_proxy ? st->p2p_proxy->issued() : 0;
  return 0;
}

int ring_exchange(gicl_comm_t comm, int me, int n, char* sym, size_t bytes, int tag, cudaStream_t s,
                  const char* label) {
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  std::vector<char> h(bytes), got(bytes);
  for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<char>(i * 7 + me * 3 + tag);
  RANK_CUDA(cudaMemcpy(sym, h.data(), bytes, cudaMemcpyHostToDevice));
  RANK_CUDA(cudaMemsetAsync(sym + bytes, 0x5a, bytes, s));
  RANK_OK(gicl_group_start());
  RANK_OK(gicl_send(sym, bytes, gicl_uint8, next, comm, s));
  RANK_OK(gicl_recv(sym + bytes, bytes, gicl_uint8, prev, comm, s));
  RANK_OK(gicl_group_end());
  const cudaError_t e = cudaStreamSynchronize(s);
  gicl_result_t async = GICL_SUCCESS;
  const char* msg = nullptr;
  RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
  RANK_CHECK(e == cudaSuccess && async == GICL_SUCCESS, "%s: %s / %s", label, cudaGetErrorString(e),
             msg != nullptr ? msg : "");
  RANK_CUDA(cudaMemcpy(got.data(), sym + bytes, bytes, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < bytes; ++i)
    RANK_CHECK(got[i] == static_cast<char>(i * 7 + prev * 3 + tag), "%s: byte %zu", label, i);
  return 0;
}

}  // namespace gicl::test
