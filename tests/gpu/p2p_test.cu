// SPDX-License-Identifier: Apache-2.0
// Send/recv on real GPUs: groups of many sends to one peer, the LL path, the rendezvous path
// into symmetric, registered and cudaMalloc buffers, the copy-engine proxy (first call captured,
// one work queue, every kind of window, a proxy that fails), the matrix test's send/recv step
// (groups larger than a launch among them), and sends whose receive is of another size.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "collectives/common/coll_args.h"
#include "collectives/host/coll_state.hpp"
#include "collectives/host/residency.hpp"
#include "collectives/schedule/copy_lists.hpp"
#include "collectives/schedule/p2p.hpp"
#include "gicl/gicl.h"
#include "gpu/coll_cases.cuh"
#include "gpu/gpu_ranks.cuh"

namespace gicl::test {
namespace {

/// Captures enqueue() on `s` in a CUDA graph (`mode`), then replays it for rounds [first, last):
/// fresh inputs before each (prepare(round)), every byte checked after (check(round, label)).
int replay_captured(cudaStream_t s, cudaStreamCaptureMode mode, const std::function<int()>& enqueue,
                    const std::function<int(int)>& prepare,
                    const std::function<int(int, const char*)>& check, int first, int last,
                    const char* label) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  RANK_CUDA(cudaStreamBeginCapture(s, mode));
  const int enqueued = enqueue();
  RANK_CUDA(cudaStreamEndCapture(s, &graph));
  if (enqueued) return 1;
  RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int round = first; round < last; ++round) {
    if (prepare(round)) return 1;
    RANK_CUDA(cudaGraphLaunch(exec, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    if (check(round, label)) return 1;
  }
  RANK_CUDA(cudaGraphExecDestroy(exec));
  RANK_CUDA(cudaGraphDestroy(graph));
  return 0;
}

/// Round 0 run eagerly, then captured (thread-local mode) and replayed for rounds 1 and 2.
int eager_then_replayed(cudaStream_t s, const std::function<int()>& enqueue,
                        const std::function<int(int)>& prepare,
                        const std::function<int(int, const char*)>& check) {
  if (prepare(0) || enqueue()) return 1;
  RANK_CUDA(cudaStreamSynchronize(s));
  if (check(0, "an eager")) return 1;
  return replay_captured(s, cudaStreamCaptureModeThreadLocal, enqueue, prepare, check, 1, 3,
                         "a captured");
}

/// One group with more sends to the next rank (and receives from the previous one) than a launch
/// holds (kMaxP2pOps, both directions together), so it runs as several batches in two or more
/// launches, of unequal sizes from LL to several FIFO messages each: more sends to one peer than
/// its FIFO has slots, which deadlocked the first message order; each receive must get its own
/// send's bytes, in order.
int many_sends_to_one_peer(gicl_comm_t comm, int me, int n, cudaStream_t s) {
  constexpr int kOps = coll::kMaxP2pOps / 2 + 13;
  size_t bytes[kOps], total = 0;
  for (int i = 0; i < kOps; ++i) total += bytes[i] = 1 + (i * 97531) % 700000;
  char *sb, *rb;
  RANK_CUDA(cudaMalloc(&sb, total));
  RANK_CUDA(cudaMalloc(&rb, total));
  std::vector<char> h(total), got(total);
  for (size_t i = 0; i < total; ++i) h[i] = static_cast<char>(i * 5 + me * 31);
  RANK_CUDA(cudaMemcpy(sb, h.data(), total, cudaMemcpyHostToDevice));
  RANK_CUDA(cudaMemsetAsync(rb, 0, total, s));
  RANK_OK(gicl_group_start());
  size_t off = 0;
  for (int i = 0; i < kOps; off += bytes[i++]) {
    RANK_OK(gicl_send(sb + off, bytes[i], gicl_uint8, (me + 1) % n, comm, s));
    RANK_OK(gicl_recv(rb + off, bytes[i], gicl_uint8, (me + n - 1) % n, comm, s));
  }
  RANK_OK(gicl_group_end());
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
int ll_point_to_point(gicl_comm_t comm, int me, int n, cudaStream_t s) {
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
    RANK_CUDA(cudaMemsetAsync(rb, 0xee, room, s));
    RANK_OK(gicl_group_start());
    for (int i = 0; i < kOps; ++i) {
      RANK_OK(gicl_send(sb + at[i], bytes[i], gicl_uint8, next, comm, s));
      RANK_OK(gicl_recv(rb + at[i], bytes[i], gicl_uint8, prev, comm, s));
    }
    RANK_OK(gicl_group_end());
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
  for (int i = 0; i < kAhead; ++i) RANK_OK(gicl_send(sb + i * 100, 100, gicl_uint8, next, comm, s));
  for (int i = 0; i < kAhead; ++i) RANK_OK(gicl_recv(rb + i * 100, 100, gicl_uint8, prev, comm, s));
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
int zero_copy_point_to_point(gicl_comm_t comm, int me, int n, cudaStream_t s) {
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
  RANK_OK(gicl_mem_alloc(comm, sym_bytes, reinterpret_cast<void**>(&sym)));
  RANK_CUDA(cudaMalloc(&dev, bytes[2]));
  RANK_CUDA(cudaMalloc(&regd, bytes[1]));
  void* reg = nullptr;
  RANK_OK(gicl_comm_register(comm, regd, bytes[1], &reg));
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
    RANK_CUDA(cudaMemsetAsync(sym, 0x5a, sym_bytes, s));
    RANK_CUDA(cudaMemsetAsync(dev, 0x5a, bytes[2], s));
    RANK_CUDA(cudaMemsetAsync(regd, 0x5a, bytes[1], s));
    return 0;
  };
  auto enqueue = [&]() -> int {
    RANK_OK(gicl_group_start());
    size_t off = 0;
    for (int o = 0; o < kOps; off += bytes[o++]) {
      RANK_OK(gicl_send(sb + off, bytes[o], gicl_uint8, to(o), comm, s));
      RANK_OK(gicl_recv(dst[o], bytes[o], gicl_uint8, from(o), comm, s));
    }
    RANK_OK(gicl_group_end());
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
  if (replay_captured(s, cudaStreamCaptureModeGlobal, enqueue, fill, check, 100, 103,
                      "graph replay"))
    return 1;
  RANK_OK(gicl_comm_deregister(comm, reg));
  RANK_OK(gicl_mem_free(comm, sym));
  RANK_CUDA(cudaFree(regd));
  RANK_CUDA(cudaFree(dev));
  RANK_CUDA(cudaFree(sb));
  return 0;
}

/// Alltoall as one group with the copy engines off, blocks past p2p_self_beside's size (odd, and
/// the pair with the rank itself at an odd offset): where launches have no block limit the pair
/// stays in the kernel on blocks of its own beside the SM sends to peers (launch_p2p's self
/// blocks), elsewhere it is a local copy first. Every byte of every block, eagerly and in graph
/// replays on fresh data, outputs poisoned first.
int self_pairs_beside_sm_sends(gicl_comm_t world, int me, int n, cudaStream_t s) {
  setenv("GICL_P2P_COPY_ENGINE", "0", 1);
  gicl_comm_t comm;
  const int made = fresh_comm(world, me, &comm);
  unsetenv("GICL_P2P_COPY_ENGINE");
  if (made) return 1;
  const size_t block = coll::kP2pSelfBesideFrom + 4099, total = block * n + 3;
  char *src = nullptr, *dst = nullptr;
  RANK_OK(gicl_mem_alloc(comm, total, reinterpret_cast<void**>(&src)));
  RANK_OK(gicl_mem_alloc(comm, total, reinterpret_cast<void**>(&dst)));
  auto value = [](int from, int to, size_t i, int round) {
    return static_cast<char>(i * 13 + from * 5 + to * 17 + round * 3);
  };
  std::vector<char> h(block * n);
  auto prepare = [&](int round) -> int {
    for (int p = 0; p < n; ++p)
      for (size_t i = 0; i < block; ++i) h[p * block + i] = value(me, p, i, round);
    RANK_CUDA(cudaMemcpy(src, h.data(), block * n, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemsetAsync(dst, 0x5a, total, s));
    return 0;
  };
  auto enqueue = [&]() -> int {
    RANK_OK(gicl_group_start());
    for (int p = 0; p < n; ++p) {
      RANK_OK(gicl_send(src + p * block, block, gicl_uint8, p, comm, s));
      RANK_OK(gicl_recv(dst + 3 + p * block, block, gicl_uint8, p, comm, s));
    }
    RANK_OK(gicl_group_end());
    return 0;
  };
  auto check = [&](int round, const char* how) -> int {
    RANK_CUDA(cudaMemcpy(h.data(), dst + 3, block * n, cudaMemcpyDeviceToHost));
    for (int p = 0; p < n; ++p)
      for (size_t i = 0; i < block; ++i)
        RANK_CHECK(h[p * block + i] == value(p, me, i, round),
                   "%s alltoall group beside SM sends: block from %d, byte %zu", how, p, i);
    return 0;
  };
  for (int round = 0; round < 3; ++round) {
    if (prepare(round) || enqueue()) return 1;
    RANK_CUDA(cudaStreamSynchronize(s));
    if (check(round, "eager")) return 1;
  }
  if (replay_captured(s, cudaStreamCaptureModeGlobal, enqueue, prepare, check, 10, 12,
                      "graph replay"))
    return 1;
  RANK_OK(gicl_mem_free(comm, dst));
  RANK_OK(gicl_mem_free(comm, src));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// A communicator whose first call is a copy-engine send/recv captured into a graph (global
/// capture mode): its collective state and the proxy start inside the capture; two replays with
/// new data, each one copy by the proxy per rank (none on one rank: a local copy).
int copy_engine_first_call_captured(gicl_comm_t world, int me, int n, cudaStream_t s) {
  setenv("GICL_P2P_COPY_ENGINE", "256K", 1);
  gicl_comm_t comm;
  if (fresh_comm(world, me, &comm)) return 1;
  const size_t bytes = (size_t{1} << 20) + 3;
  char* sym = nullptr;
  RANK_OK(gicl_mem_alloc(comm, 2 * bytes, reinterpret_cast<void**>(&sym)));
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  RANK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  RANK_OK(gicl_group_start());
  RANK_OK(gicl_send(sym, bytes, gicl_uint8, next, comm, s));
  RANK_OK(gicl_recv(sym + bytes, bytes, gicl_uint8, prev, comm, s));
  RANK_OK(gicl_group_end());
  RANK_CUDA(cudaStreamEndCapture(s, &graph));
  unsetenv("GICL_P2P_COPY_ENGINE");
  RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<char> h(bytes), got(bytes);
  for (int replay = 0; replay < 2; ++replay) {
    for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<char>(i * 13 + me * 7 + replay * 3);
    RANK_CUDA(cudaMemcpy(sym, h.data(), bytes, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemsetAsync(sym + bytes, 0x5a, bytes, s));
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
  RANK_OK(gicl_mem_free(comm, sym));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// CUDA_DEVICE_MAX_CONNECTIONS=1: one hardware queue, behind which the proxy's copies would
/// wait for the kernel that waits for them (every such send timed out on one H100), so the
/// proxy is not started and the SMs copy: a 1 MiB ring exchange arrives whole, no proxy copy.
/// (The variable is read by the check as the process runs; CUDA read it at start-up, so this
/// process still has its queues: the check, not the stall, is what runs here.)
int copy_engine_one_work_queue(gicl_comm_t world, int me, int n, cudaStream_t s) {
  setenv("GICL_P2P_COPY_ENGINE", "256K", 1);
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 1);
  gicl_comm_t comm;
  if (fresh_comm(world, me, &comm)) return 1;
  const size_t bytes = size_t{1} << 20;
  char* sym = nullptr;
  RANK_OK(gicl_mem_alloc(comm, 2 * bytes, reinterpret_cast<void**>(&sym)));
  const int failed = ring_exchange(comm, me, n, sym, bytes, 0, s, "one work queue");
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  unsetenv("GICL_P2P_COPY_ENGINE");
  if (failed) return 1;
  uint64_t issued = 0;
  if (proxy_copies(comm, &issued)) return 1;
  RANK_CHECK(issued == 0, "one work queue: the proxy issued %llu copies",
             static_cast<unsigned long long>(issued));
  RANK_OK(gicl_mem_free(comm, sym));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// The rendezvous test again with GICL_P2P_COPY_ENGINE at the rendezvous size, on a communicator
/// of its own, with the copy engine taking all of each send and then 37 % of it beside the
/// sender's blocks: every send into a window (three per group: symmetric, registered, symmetric at
/// an odd offset) is copied by the copy-engine proxy, the one into cudaMalloc memory and the small
/// one go through the FIFOs, and the pair with the rank itself is a local copy. The proxy must
/// have issued exactly those copies (12 groups and 3 graph replays); the replays come after
/// host work longer than the proxy's busy polling, so they also meet its idle poll.
int copy_engine_point_to_point(gicl_comm_t world, int me, int n, cudaStream_t s) {
  // All of each send, then 37 % of it beside the blocks' 63 % (GICL_P2P_COPY_ENGINE_SHARE).
  for (const char* share : {"100", "37"}) {
    setenv("GICL_P2P_COPY_ENGINE", std::to_string(coll::kP2pRendezvousFrom).c_str(), 1);
    setenv("GICL_P2P_COPY_ENGINE_SHARE", share, 1);
    gicl_comm_t comm;
    if (fresh_comm(world, me, &comm)) return 1;
    // Read with the communicator's collective state, at its first call.
    const int failed = zero_copy_point_to_point(comm, me, n, s);
    unsetenv("GICL_P2P_COPY_ENGINE");
    unsetenv("GICL_P2P_COPY_ENGINE_SHARE");
    if (failed) return 1;
    const uint64_t want = n > 1 ? 3 * (12 + 3) : 0;  // one rank: every pair is a local copy
    uint64_t issued = 0;
    if (proxy_copies(comm, &issued)) return 1;
    RANK_CHECK(issued == want, "share %s %%: the copy-engine proxy issued %llu copies, not %llu",
               share, static_cast<unsigned long long>(issued),
               static_cast<unsigned long long>(want));
    RANK_OK(gicl_comm_destroy(comm));
  }
  if (copy_engine_first_call_captured(world, me, n, s)) return 1;
  return copy_engine_one_work_queue(world, me, n, s);
}

/// Byte j of the i-th operation from a to b in exchange `round`.
char group_byte(int a, int b, int i, size_t j, int round) {
  return static_cast<char>(j * 7 + a * 13 + b * 3 + i * 11 + round * 5);
}

/// A group far larger than a launch holds: every rank sends 8 + (3a + 5b) % 7 + 48 / n operations
/// to every other rank (so no two ranks' groups are alike and each packs its batches its own way)
/// and two to itself, sizes cycling through LL, FIFO and rendezvous ones, receives alternately
/// into symmetric memory (rendezvous ones written in place) and cudaMalloc memory (through the
/// FIFOs), the streams interleaved differently on every rank. Run eagerly, then captured in a
/// CUDA graph and replayed twice on fresh data; every byte checked each time.
int large_group(gicl_comm_t comm, int me, int n, cudaStream_t s) {
  static constexpr size_t kSizes[] = {8, 24, 1000, 4096, 12000, 65544, 300000, 2};
  auto ops_from = [n](int a, int b) { return a == b ? 2 : 8 + (3 * a + 5 * b) % 7 + 48 / n; };
  auto bytes_of = [](int a, int b, int i) { return kSizes[(a + 2 * b + 3 * i) % 8]; };
  struct Op {
    int peer, i;
    bool send;
    size_t off, bytes;
  };
  std::vector<Op> sends, recvs;
  size_t send_total = 0, recv_total[2] = {0, 0};
  for (int p = 0; p < n; ++p) {
    for (int i = 0; i < ops_from(me, p); ++i) {
      sends.push_back({p, i, true, send_total, bytes_of(me, p, i)});
      send_total += sends.back().bytes;
    }
    for (int i = 0; i < ops_from(p, me); ++i) {
      recvs.push_back({p, i, false, recv_total[i % 2], bytes_of(p, me, i)});
      recv_total[i % 2] += recvs.back().bytes;
    }
  }
  // The group's order: streams interleaved at random, each stream's operations in order.
  std::vector<const Op*> order;
  {
    std::vector<std::vector<const Op*>> streams(2 * n);
    for (const Op& o : sends) streams[2 * o.peer].push_back(&o);
    for (const Op& o : recvs) streams[2 * o.peer + 1].push_back(&o);
    std::vector<size_t> next(2 * n, 0);
    uint32_t seed = 12345u + 977u * static_cast<uint32_t>(me);
    for (size_t left = sends.size() + recvs.size(); left > 0;) {
      seed = seed * 1664525u + 1013904223u;
      const size_t k = (seed >> 8) % streams.size();
      if (next[k] == streams[k].size()) continue;
      order.push_back(streams[k][next[k]++]);
      --left;
    }
  }
  char *sb = nullptr, *plain = nullptr, *sym = nullptr;
  RANK_CUDA(cudaMalloc(&sb, send_total));
  RANK_CUDA(cudaMalloc(&plain, recv_total[1] + 1));
  // Symmetric memory is one size on every rank: the largest of every rank's even receives.
  size_t sym_bytes = 1;
  for (int r = 0; r < n; ++r) {
    size_t even = 1;
    for (int p = 0; p < n; ++p)
      for (int i = 0; i < ops_from(p, r); i += 2) even += bytes_of(p, r, i);
    sym_bytes = std::max(sym_bytes, even);
  }
  RANK_OK(gicl_mem_alloc(comm, sym_bytes, reinterpret_cast<void**>(&sym)));
  auto enqueue = [&]() -> int {
    RANK_OK(gicl_group_start());
    for (const Op* o : order) {
      if (o->send) {
        RANK_OK(gicl_send(sb + o->off, o->bytes, gicl_uint8, o->peer, comm, s));
      } else {
        char* to = (o->i % 2 == 0 ? sym : plain) + o->off;
        RANK_OK(gicl_recv(to, o->bytes, gicl_uint8, o->peer, comm, s));
      }
    }
    RANK_OK(gicl_group_end());
    return 0;
  };
  // Fresh sends and poisoned receives for exchange `round`, then (after it ran) every byte.
  std::vector<char> h(send_total),
      got[2] = {std::vector<char>(recv_total[0]), std::vector<char>(recv_total[1])};
  auto prepare = [&](int round) -> int {
    for (const Op& o : sends)
      for (size_t j = 0; j < o.bytes; ++j) h[o.off + j] = group_byte(me, o.peer, o.i, j, round);
    RANK_CUDA(cudaMemcpy(sb, h.data(), send_total, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemsetAsync(sym, 0x5a, recv_total[0] + 1, s));
    RANK_CUDA(cudaMemsetAsync(plain, 0x5a, recv_total[1] + 1, s));
    return 0;
  };
  auto check = [&](int round, const char* how) -> int {
    gicl_result_t async = GICL_SUCCESS;
    const char* msg = nullptr;
    RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
    RANK_CHECK(async == GICL_SUCCESS, "%s group of %zu operations: %s", how, order.size(),
               msg != nullptr ? msg : "");
    RANK_CUDA(cudaMemcpy(got[0].data(), sym, recv_total[0], cudaMemcpyDeviceToHost));
    RANK_CUDA(cudaMemcpy(got[1].data(), plain, recv_total[1], cudaMemcpyDeviceToHost));
    for (const Op& o : recvs)
      for (size_t j = 0; j < o.bytes; ++j)
        RANK_CHECK(got[o.i % 2][o.off + j] == group_byte(o.peer, me, o.i, j, round),
                   "%s group of %zu operations: receive %d of %zu bytes from rank %d, byte %zu",
                   how, order.size(), o.i, o.bytes, o.peer, j);
    return 0;
  };
  if (eager_then_replayed(s, enqueue, prepare, check)) return 1;
  RANK_OK(gicl_mem_free(comm, sym));
  RANK_CUDA(cudaFree(plain));
  RANK_CUDA(cudaFree(sb));
  return 0;
}

/// A group of more pairs with the rank itself than a list kernel holds (kMaxCopyList), beside a
/// send to the next rank and a receive from the previous: the pairs become list kernels
/// (collectives/schedule/copy_lists.hpp), the unaligned ones and one of 40 MiB (above the list
/// cutoff) copied alone. Sizes from 1 byte (a tail only) to 40 MiB; the receives lie in one
/// buffer with 48-byte gaps, which must keep their poison. Eager, then captured and replayed
/// twice on fresh data.
int many_self_pairs(gicl_comm_t comm, int me, int n, cudaStream_t s) {
  constexpr int kPairs = coll::kMaxCopyList + 9;
  constexpr size_t kSizes[] = {1, 8, 15, 16, 100, 4096, 65537, 300000, size_t{2} << 20};
  constexpr size_t kRing = 5000;
  struct Pair {
    size_t src, dst, bytes;
  };
  std::vector<Pair> pairs;
  size_t src_total = 0, dst_total = 48;
  for (int i = 0; i < kPairs; ++i) {
    const size_t bytes = i == 40 ? size_t{40} << 20 : kSizes[(i * 5) % 9];
    const size_t skew = i % 11 == 3 ? 1 + i % 7 : 0;  // an unaligned receive
    pairs.push_back({src_total, dst_total + skew, bytes});
    src_total = (src_total + bytes + 15) / 16 * 16;
    dst_total = (dst_total + skew + bytes + 48 + 15) / 16 * 16;
  }
  char *sb = nullptr, *rb = nullptr, *ring = nullptr;
  RANK_CUDA(cudaMalloc(&sb, src_total + kRing));
  RANK_CUDA(cudaMalloc(&rb, dst_total));
  RANK_CUDA(cudaMalloc(&ring, kRing));
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  auto enqueue = [&]() -> int {
    RANK_OK(gicl_group_start());
    // Receives trail their sends by five; the ring in between (not for one rank: its ring would
    // be one more pair with itself).
    for (int i = 0; i < kPairs + 5; ++i) {
      if (i < kPairs)
        RANK_OK(gicl_send(sb + pairs[i].src, pairs[i].bytes, gicl_uint8, me, comm, s));
      if (i == 20 && n > 1) {
        RANK_OK(gicl_send(sb + src_total, kRing, gicl_uint8, next, comm, s));
        RANK_OK(gicl_recv(ring, kRing, gicl_uint8, prev, comm, s));
      }
      if (i >= 5)
        RANK_OK(gicl_recv(rb + pairs[i - 5].dst, pairs[i - 5].bytes, gicl_uint8, me, comm, s));
    }
    RANK_OK(gicl_group_end());
    return 0;
  };
  std::vector<char> h(src_total + kRing), want(dst_total), got(dst_total), got_ring(kRing);
  auto prepare = [&](int round) -> int {
    for (int i = 0; i < kPairs; ++i)
      for (size_t j = 0; j < pairs[i].bytes; ++j)
        h[pairs[i].src + j] = group_byte(me, me, i, j, round);
    for (size_t j = 0; j < kRing; ++j) h[src_total + j] = group_byte(me, next, -1, j, round);
    RANK_CUDA(cudaMemcpy(sb, h.data(), h.size(), cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemsetAsync(rb, 0x5a, dst_total, s));
    RANK_CUDA(cudaMemsetAsync(ring, 0x5a, kRing, s));
    return 0;
  };
  auto check = [&](int round, const char* how) -> int {
    std::fill(want.begin(), want.end(), static_cast<char>(0x5a));
    for (int i = 0; i < kPairs; ++i)
      for (size_t j = 0; j < pairs[i].bytes; ++j)
        want[pairs[i].dst + j] = group_byte(me, me, i, j, round);
    RANK_CUDA(cudaMemcpy(got.data(), rb, dst_total, cudaMemcpyDeviceToHost));
    for (size_t k = 0; k < dst_total; ++k)
      RANK_CHECK(got[k] == want[k], "%s group of %d pairs with itself: byte %zu of the receives",
                 how, kPairs, k);
    if (n == 1) return 0;
    RANK_CUDA(cudaMemcpy(got_ring.data(), ring, kRing, cudaMemcpyDeviceToHost));
    for (size_t j = 0; j < kRing; ++j)
      RANK_CHECK(got_ring[j] == group_byte(prev, me, -1, j, round),
                 "%s group of %d pairs with itself: byte %zu from rank %d", how, kPairs, j, prev);
    return 0;
  };
  if (eager_then_replayed(s, enqueue, prepare, check)) return 1;
  RANK_CUDA(cudaFree(ring));
  RANK_CUDA(cudaFree(rb));
  RANK_CUDA(cudaFree(sb));
  return 0;
}

/// Broadcast, allgather and alltoall as sends and receives (tuner.hpp, send_recv_wins). With
/// GICL_P2P_COPY_ENGINE at the rendezvous size, two ranks' unforced broadcasts, allgathers and
/// alltoalls past it go through the copy-engine proxy, which no other collective path asks (so
/// its copy count tells which path ran): every kind of buffer, in place (the
/// alltoall's outgoing blocks copied aside) and out of place, unaligned, bitwise against the
/// reference; ranks limited in blocks (MPS) and other rank counts keep the SM kernels. Then
/// forced (GICL_ALGO=send_recv) through the matrix wherever the FIFO channels fit, and captured
/// in a graph (an in-place alltoall among the calls) and replayed on fresh data.
int send_recv_collectives(gicl_comm_t world, int me, int n, cudaStream_t s) {
  setenv("GICL_P2P_COPY_ENGINE", std::to_string(coll::kP2pRendezvousFrom).c_str(), 1);
  gicl_comm_t comm;
  if (fresh_comm(world, me, &comm)) return 1;
  const size_t count = coll::kP2pRendezvousFrom / 4 + 17;  // float32: a block past the size
  uint32_t seed = 7;
  for (Collective c : {Collective::kBroadcast, Collective::kAllGather, Collective::kAllToAll})
    for (int m = 0; m < 4; ++m)
      for (size_t offset : {size_t{0}, size_t{1}}) {
        if (m == static_cast<int>(Mem::kInPlace) && offset != 0) continue;
        Case k{c, gicl_sum, (1 + m) % n, count, static_cast<Mem>(m), offset, true, seed++};
        if (run_case_any(comm, me, n, gicl_float32, k, s, "send_recv (tuner)")) return 1;
      }
  unsetenv("GICL_P2P_COPY_ENGINE");
  coll::CollState* st = nullptr;
  RANK_CHECK(coll::coll_state(comm, &st).ok(), "no collective state");
  const bool routed = n == 2 && st->resident_blocks == 0;
  const bool fifo_fits = coll::fifo_channels_fit(st->resident_blocks);
  uint64_t issued = 0;
  if (proxy_copies(comm, &issued)) return 1;
  RANK_CHECK(routed ? issued > 0 : issued == 0,
             "%d ranks (resident blocks %d): the proxy issued %llu copies for the tuner's "
             "broadcasts, allgathers and alltoalls",
             n, st->resident_blocks, static_cast<unsigned long long>(issued));
  RANK_OK(gicl_comm_destroy(comm));
  if (!fifo_fits) return 0;  // forced, their FIFO sends would be refused (issue_p2p)
  setenv("GICL_ALGO", "send_recv", 1);
  setenv("GICL_P2P_COPY_ENGINE", std::to_string(coll::kP2pRendezvousFrom).c_str(), 1);
  if (fresh_comm(world, me, &comm)) return 1;
  for (Collective c : {Collective::kBroadcast, Collective::kAllGather, Collective::kAllToAll})
    if (matrix(comm, me, n, c, seed++, s, "send_recv (GICL_ALGO)", false)) return 1;
  float *send = nullptr, *recv = nullptr, *a2a = nullptr;
  RANK_OK(gicl_mem_alloc(comm, count * 4, reinterpret_cast<void**>(&send)));
  RANK_OK(gicl_mem_alloc(comm, count * n * 4, reinterpret_cast<void**>(&recv)));
  RANK_OK(gicl_mem_alloc(comm, count * n * 4, reinterpret_cast<void**>(&a2a)));
  const int root = n - 1;
  auto value = [](int r, size_t i, int round) {
    return static_cast<float>((i * 3 + r * 7 + round * 11) % 1021);
  };
  auto enqueue = [&]() -> int {
    RANK_OK(gicl_allgather(send, recv, count, gicl_float32, comm, s));
    // In place at the root, into the first block elsewhere: after the allgather on one stream.
    RANK_OK(gicl_broadcast(me == root ? recv + me * count : send, recv, count, gicl_float32, root,
                           comm, s));
    // In place: the outgoing blocks are set aside in a buffer the graph keeps reading.
    RANK_OK(gicl_alltoall(a2a, a2a, count, gicl_float32, comm, s));
    return 0;
  };
  std::vector<float> h(count), got(count * n), h2(count * n);
  auto prepare = [&](int round) -> int {
    for (size_t i = 0; i < count; ++i) h[i] = value(me, i, round);
    RANK_CUDA(cudaMemcpy(send, h.data(), count * 4, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemsetAsync(recv, 0xff, count * n * 4, s));
    for (size_t i = 0; i < count * n; ++i) h2[i] = value(me, i + 5, round);
    RANK_CUDA(cudaMemcpy(a2a, h2.data(), count * n * 4, cudaMemcpyHostToDevice));
    return 0;
  };
  auto check = [&](int round, const char* how) -> int {
    RANK_CUDA(cudaMemcpy(got.data(), recv, count * n * 4, cudaMemcpyDeviceToHost));
    // Block 0 holds the broadcast of the root's block, the others the allgather's blocks.
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i)
        RANK_CHECK(got[r * count + i] == value(r == 0 ? root : r, i, round),
                   "%s send_recv allgather + broadcast: block %d element %zu is %f", how, r, i,
                   static_cast<double>(got[r * count + i]));
    // Block r of the alltoall is rank r's block `me`.
    RANK_CUDA(cudaMemcpy(got.data(), a2a, count * n * 4, cudaMemcpyDeviceToHost));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i)
        RANK_CHECK(got[r * count + i] == value(r, me * count + i + 5, round),
                   "%s send_recv in-place alltoall: block %d element %zu is %f", how, r, i,
                   static_cast<double>(got[r * count + i]));
    return 0;
  };
  if (eager_then_replayed(s, enqueue, prepare, check)) return 1;
  unsetenv("GICL_ALGO");
  unsetenv("GICL_P2P_COPY_ENGINE");
  RANK_OK(gicl_mem_free(comm, a2a));
  RANK_OK(gicl_mem_free(comm, recv));
  RANK_OK(gicl_mem_free(comm, send));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

}  // namespace

/// Send/recv: a ring shift in one group, self send/recv, and a lone pair outside a group.
int point_to_point(gicl_comm_t comm, int me, int n, cudaStream_t s) {
  for (size_t bytes : {size_t{1}, size_t{4097}, size_t{5} << 20}) {
    char *sb, *rb, *self_rb;
    RANK_CUDA(cudaMalloc(&sb, bytes));
    RANK_CUDA(cudaMalloc(&rb, bytes));
    RANK_CUDA(cudaMalloc(&self_rb, bytes));
    std::vector<char> h(bytes), got(bytes);
    for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<char>(i * 7 + me * 13);
    RANK_CUDA(cudaMemcpy(sb, h.data(), bytes, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemsetAsync(rb, 0, bytes, s));
    RANK_OK(gicl_group_start());
    RANK_OK(gicl_send(sb, bytes, gicl_uint8, (me + 1) % n, comm, s));
    RANK_OK(gicl_recv(rb, bytes, gicl_uint8, (me + n - 1) % n, comm, s));
    RANK_OK(gicl_send(sb, bytes, gicl_uint8, me, comm, s));
    RANK_OK(gicl_recv(self_rb, bytes, gicl_uint8, me, comm, s));
    RANK_OK(gicl_group_end());
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
    if (me == 0 && n > 1) RANK_OK(gicl_send(sb, bytes, gicl_uint8, 1, comm, s));
    if (me == 1) RANK_OK(gicl_recv(rb, bytes, gicl_uint8, 0, comm, s));
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
    RANK_CUDA(cudaMemsetAsync(d + 2 * bytes, 0, 2 * bytes, s));
    RANK_OK(gicl_send(d, bytes, gicl_uint8, me, comm, s));
    RANK_OK(gicl_group_start());
    RANK_OK(gicl_send(d + bytes, bytes, gicl_uint8, me, comm, s));
    RANK_OK(gicl_recv(d + 2 * bytes, bytes, gicl_uint8, me, comm, s));
    RANK_OK(gicl_group_end());
    RANK_OK(gicl_recv(d + 3 * bytes, bytes, gicl_uint8, me, comm, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(got.data(), d + 2 * bytes, bytes, cudaMemcpyDeviceToHost));
    RANK_CHECK(got == a, "the first receive from itself did not get the first send");
    RANK_CUDA(cudaMemcpy(got.data(), d + 3 * bytes, bytes, cudaMemcpyDeviceToHost));
    RANK_CHECK(got == b, "the second receive from itself did not get the second send");
    // Now balanced again: a group of a send and a receive with itself is a copy, any size.
    RANK_CUDA(cudaMemsetAsync(d + 2 * bytes, 0, bytes, s));
    RANK_OK(gicl_group_start());
    RANK_OK(gicl_send(d, bytes, gicl_uint8, me, comm, s));
    RANK_OK(gicl_recv(d + 2 * bytes, bytes, gicl_uint8, me, comm, s));
    RANK_OK(gicl_group_end());
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(got.data(), d + 2 * bytes, bytes, cudaMemcpyDeviceToHost));
    RANK_CHECK(got == a, "a paired send/recv with itself");
    RANK_CUDA(cudaFree(d));
  }
  if (many_sends_to_one_peer(comm, me, n, s)) return 1;
  if (large_group(comm, me, n, s)) return 1;
  if (many_self_pairs(comm, me, n, s)) return 1;
  if (ll_point_to_point(comm, me, n, s)) return 1;
  if (zero_copy_point_to_point(comm, me, n, s)) return 1;
  if (copy_engine_point_to_point(comm, me, n, s)) return 1;
  if (self_pairs_beside_sm_sends(comm, me, n, s)) return 1;
  return send_recv_collectives(comm, me, n, s);
}

namespace {

/// The receiver whose sender failed: its wait times out naming peer 0, or, where the sender's
/// abort closes its connections first, the peer watch names rank 0 (GICL_REMOTE_ERROR).
bool names_the_failed_sender(gicl_result_t async, const std::string& m) {
  return (async == GICL_TIMEOUT && m.find("peer 0") != std::string::npos) ||
         (async == GICL_REMOTE_ERROR && m.find("rank 0") != std::string::npos);
}

/// A copy-engine proxy that fails (injected: CopyProxy::fail, as when CUDA refuses a copy) fails
/// the sender's kernel with GICL_UNHANDLED_CUDA_ERROR naming the proxy instead of leaving it
/// waiting, and its receiver, whose bytes never come, fails naming the sender. Both within
/// GICL_WAIT_TIMEOUT; the first exchange, before the failure, is correct.
TEST(CollectiveFailures, AFailedCopyEngineProxyIsReported) {
  REQUIRE_GPUS(1);
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(
      2,
      [&](int r) {
        setenv("GICL_P2P_COPY_ENGINE", "256K", 1);
        setenv("GICL_WAIT_TIMEOUT", "2000", 1);
        gicl_comm_t comm;
        if (init_on_gpu(id, 2, r, &comm)) return 1;
        cudaStream_t s;
        RANK_CUDA(cudaStreamCreate(&s));
        const size_t bytes = size_t{1} << 20;
        char* buf = nullptr;
        RANK_OK(gicl_mem_alloc(comm, 2 * bytes, reinterpret_cast<void**>(&buf)));
        RANK_CUDA(cudaMemsetAsync(buf, 1 + r, bytes, s));
        auto exchange = [&]() -> int {
          RANK_OK(gicl_group_start());
          RANK_OK(gicl_send(buf, bytes, gicl_uint8, 1 - r, comm, s));
          RANK_OK(gicl_recv(buf + bytes, bytes, gicl_uint8, 1 - r, comm, s));
          RANK_OK(gicl_group_end());
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
        gicl_result_t async;
        const char* msg = nullptr;
        RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
        const std::string m = msg ? msg : "";
        if (r == 0)
          RANK_CHECK(async == GICL_UNHANDLED_CUDA_ERROR &&
                         m.find("copy-engine proxy") != std::string::npos,
                     "sender with a failed proxy: %d '%s' after %.2f s", async, m.c_str(), sec);
        else
          RANK_CHECK(names_the_failed_sender(async, m),
                     "receiver of the failed copy: %d '%s' after %.2f s", async, m.c_str(), sec);
        RANK_CHECK(sec < 3.5, "the failed exchange took %.2f s (GICL_WAIT_TIMEOUT=2000)", sec);
        RANK_OK(gicl_comm_abort(comm));
        return 0;
      },
      60000);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

/// Rank 0 sends `sent` bytes to rank 1, which receives `room` into symmetric or cudaMalloc
/// memory of `sent` bytes, poisoned (the sent bytes differ from the poison); then each rank checks
/// its communicator's async error with `check` (rank 1 also that its whole buffer kept the poison)
/// and aborts it.
int mismatched_pair(gicl_unique_id_t id, int r, size_t sent, size_t room, bool symmetric,
                    int (*check)(int r, gicl_result_t async, const std::string& msg)) {
  setenv("GICL_WAIT_TIMEOUT", "2000", 1);
  gicl_comm_t comm;
  if (init_on_gpu(id, 2, r, &comm)) return 1;
  cudaStream_t s;
  RANK_CUDA(cudaStreamCreate(&s));
  char* buf = nullptr;
  if (symmetric)
    RANK_OK(gicl_mem_alloc(comm, sent, reinterpret_cast<void**>(&buf)));
  else
    RANK_CUDA(cudaMalloc(&buf, sent));
  RANK_CUDA(
      cudaMemsetAsync(buf, r == 0 ? 0x11 : 0x5a, sent, s));  // sent bytes differ from the poison
  RANK_OK(gicl_group_start());
  if (r == 0) RANK_OK(gicl_send(buf, sent, gicl_uint8, 1, comm, s));
  if (r == 1) RANK_OK(gicl_recv(buf, room, gicl_uint8, 0, comm, s));
  RANK_OK(gicl_group_end());
  RANK_CUDA(cudaStreamSynchronize(s));
  gicl_result_t async;
  const char* msg = nullptr;
  RANK_OK(gicl_comm_get_async_error(comm, &async, &msg));
  if (int rc = check(r, async, msg ? msg : "")) return rc;
  if (r == 1) {
    std::vector<char> got(sent);
    RANK_CUDA(cudaMemcpy(got.data(), buf, sent, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < sent; ++i)
      RANK_CHECK(got[i] == 0x5a, "byte %zu of the receiver's buffer or heap was written", i);
  }
  RANK_OK(gicl_comm_abort(comm));
  return 0;
}

void run_mismatched_pair(size_t sent, size_t room, bool symmetric,
                         int (*check)(int, gicl_result_t, const std::string&)) {
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(
      2, [&](int r) { return mismatched_pair(id, r, sent, room, symmetric, check); }, 60000);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

/// Through the rendezvous (1 MiB sent, 512 KiB received into symmetric memory): the receiver's
/// offer carries its size, so the sender's launch fails with GICL_INVALID_ARGUMENT naming the
/// receiver and both sizes before a byte is written, and the receiver, whose bytes never come,
/// fails naming the sender. Before the offer carried the size the send wrote past the
/// buffer into the heap beyond it.
TEST(CollectiveFailures, ASendLargerThanItsReceiveIsRefused) {
  REQUIRE_GPUS(1);
  run_mismatched_pair(
      size_t{1} << 20, size_t{1} << 19, true, [](int r, gicl_result_t async, const std::string& m) {
        if (r == 0)
          RANK_CHECK(async == GICL_INVALID_ARGUMENT && m.find("peer 1") != std::string::npos &&
                         m.find("1048576") != std::string::npos &&
                         m.find("524288") != std::string::npos,
                     "sender of 1 MiB to a 512 KiB receive: %d '%s'", async, m.c_str());
        else
          RANK_CHECK(names_the_failed_sender(async, m),
                     "receiver of 512 KiB from a 1 MiB send: %d '%s'", async, m.c_str());
        return 0;
      });
}

/// Through the FIFOs (192 KiB sent, 100 KiB received into cudaMalloc memory): every message
/// carries its operation's size beside its slot, so the receiver refuses the first one with
/// GICL_INVALID_ARGUMENT naming the sender and both sizes and stores nothing; without the check
/// the extra messages would have gone to the pair's next receives.
TEST(CollectiveFailures, AFifoSendOfAnotherSizeIsRefused) {
  REQUIRE_GPUS(1);
  run_mismatched_pair(
      size_t{192} << 10, size_t{100} << 10, false,
      [](int r, gicl_result_t async, const std::string& m) {
        if (r == 1)
          RANK_CHECK(async == GICL_INVALID_ARGUMENT && m.find("peer 0") != std::string::npos &&
                         m.find("196608") != std::string::npos &&
                         m.find("102400") != std::string::npos,
                     "receiver of 100 KiB from a 192 KiB send: %d '%s'", async, m.c_str());
        return 0;
      });
}

}  // namespace
}  // namespace gicl::test
