// SPDX-License-Identifier: Apache-2.0
// Every collective where the peers are on the network path: the pipe FIFOs carry each message to
// a network neighbour as a put_signal through the proxy, over libfabric's tcp;ofi_rxm on loopback
// (staged: GPU memory is not registrable there). Two ranks (on two GPUs, or as two processes
// sharing the one GPU of a one-GPU machine) made "remote" by GICL_P2P_DISABLE=1 and by a
// GICL_HOSTID per rank; with four GPUs, 2 nodes x 2 GPUs, whose rings cross NVLink inside a node
// and the network between. Each case is the collective matrix (every type, reduction, size, in and
// out of place, cudaMalloc, symmetric and registered buffers; bitwise against the host's reference,
// run twice) with a 1 MiB staging, so that large calls run as many FIFO messages and pieces; then
// the ring's floating-point results must equal those of the same ring over NVLink bit for bit (the
// transport changes no reduction order), a captured graph replays, and send/recv reach network
// ranks (a size mismatch named). A barrier and an allreduce complete while their rank is inside
// cudaFree.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "collectives/schedule/tables.hpp"
#include "core/comm.hpp"
#include "core/net_path.hpp"
#include "gicl/gicl.h"
#include "gpu/coll_cases.cuh"
#include "gpu/gpu_ranks.cuh"
#include "proxy/cuda_copier.hpp"

namespace gicl::test {
namespace {

constexpr size_t kCudaFreeCount = 1 << 18;  // 1 MiB of float32: several host FIFO messages

/// Random floats through the ring on `nvlink` and on `net`: the same bytes.
int same_as_nvlink(gicl_comm_t nvlink, gicl_comm_t net, int me, int n, uint32_t seed,
                   cudaStream_t s) {
  const size_t count = 300001;
  std::mt19937 rng(seed + me);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> in(count * n);
  for (float& x : in) x = u(rng);
  float *send = nullptr, *a = nullptr, *b = nullptr;
  RANK_CUDA(cudaMalloc(&send, in.size() * 4));
  RANK_CUDA(cudaMalloc(&a, in.size() * 4));
  RANK_CUDA(cudaMalloc(&b, in.size() * 4));
  RANK_CUDA(cudaMemcpy(send, in.data(), in.size() * 4, cudaMemcpyHostToDevice));
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kReduce})
    for (gicl_redop_t op : {gicl_sum, gicl_avg}) {
      RANK_CUDA(cudaMemset(a, 0, in.size() * 4));
      RANK_CUDA(cudaMemset(b, 0xff, in.size() * 4));
      RANK_OK(call(nvlink, c, send, a, count, gicl_float32, op, n - 1, s));
      RANK_OK(call(net, c, send, b, count, gicl_float32, op, n - 1, s));
      RANK_CUDA(cudaStreamSynchronize(s));
      if (c == Collective::kReduce && me != n - 1) continue;
      std::vector<float> ha(count), hb(count);
      RANK_CUDA(cudaMemcpy(ha.data(), a, count * 4, cudaMemcpyDeviceToHost));
      RANK_CUDA(cudaMemcpy(hb.data(), b, count * 4, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < count; ++i)
        RANK_CHECK(std::memcmp(&ha[i], &hb[i], 4) == 0,
                   "%s op %d element %zu: %.9g over NVLink, %.9g over the network",
                   coll::collective_name(c), static_cast<int>(op), i, ha[i], hb[i]);
    }
  RANK_CUDA(cudaFree(send));
  RANK_CUDA(cudaFree(a));
  RANK_CUDA(cudaFree(b));
  return 0;
}

/// An allreduce and an alltoall captured into one graph, replayed with new inputs.
int graph_replays(gicl_comm_t comm, int me, int n, cudaStream_t s) {
  const size_t count = 50000;
  int32_t *send = nullptr, *sum = nullptr, *swapped = nullptr;
  RANK_CUDA(cudaMalloc(&send, count * n * 4));
  RANK_CUDA(cudaMalloc(&sum, count * n * 4));
  RANK_CUDA(cudaMalloc(&swapped, count * n * 4));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  RANK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  RANK_OK(gicl_allreduce(send, sum, count * n, gicl_int32, gicl_sum, comm, s));
  RANK_OK(gicl_alltoall(send, swapped, count, gicl_int32, comm, s));
  RANK_CUDA(cudaStreamEndCapture(s, &graph));
  RANK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  auto value = [](int rank, size_t i, int replay) {
    return static_cast<int32_t>(rank * 100003 + i * 7 + replay * 13);
  };
  std::vector<int32_t> h(count * n), got(count * n);
  for (int replay = 0; replay < 3; ++replay) {
    for (size_t i = 0; i < h.size(); ++i) h[i] = value(me, i, replay);
    RANK_CUDA(cudaMemcpy(send, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaGraphLaunch(exec, s));
    RANK_CUDA(cudaStreamSynchronize(s));
    RANK_CUDA(cudaMemcpy(got.data(), sum, got.size() * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < got.size(); ++i) {
      int32_t want = 0;
      for (int r = 0; r < n; ++r) want += value(r, i, replay);
      RANK_CHECK(got[i] == want, "replay %d: allreduce element %zu is %d, want %d", replay, i,
                 got[i], want);
    }
    RANK_CUDA(cudaMemcpy(got.data(), swapped, got.size() * 4, cudaMemcpyDeviceToHost));
    for (int from = 0; from < n; ++from)
      for (size_t i = 0; i < count; ++i) {
        const int32_t want = value(from, me * count + i, replay);
        RANK_CHECK(got[from * count + i] == want,
                   "replay %d: alltoall block from rank %d element %zu is %d, want %d", replay,
                   from, i, got[from * count + i], want);
      }
  }
  RANK_CUDA(cudaGraphExecDestroy(exec));
  RANK_CUDA(cudaGraphDestroy(graph));
  RANK_CUDA(cudaFree(send));
  RANK_CUDA(cudaFree(sum));
  RANK_CUDA(cudaFree(swapped));
  return 0;
}

/// Point to point with ranks on the network path: ring exchanges in one group each (to the next
/// rank, from the previous; on 2 x 2 GPUs one neighbour of each is on its node, the other across
/// the network) of sizes that take every path over NVLink (LL rows, FIFOs, rendezvous), in
/// cudaMalloc and symmetric memory, every byte checked; then 40 small ones back to back. Then a
/// receive smaller than its send from a network peer fails on the receiver, naming the sender and
/// both sizes (the size travels in each message's header), and the sender completes.
int network_send_recv(gicl_comm_t world, gicl_comm_t comm, int me, int n, cudaStream_t s) {
  const size_t most = size_t{3} << 20;
  char *dev = nullptr, *sym = nullptr;
  RANK_CUDA(cudaMalloc(&dev, 2 * most));
  RANK_OK(gicl_mem_alloc(comm, 2 * most, reinterpret_cast<void**>(&sym)));
  int tag = 0;
  for (size_t bytes : {size_t{8}, size_t{4096}, size_t{100003}, most})
    for (char* buf : {dev, sym}) {
      const std::string label = "send/recv of " + std::to_string(bytes) + " bytes, " +
                                (buf == dev ? "cudaMalloc" : "symmetric");
      if (ring_exchange(comm, me, n, buf, bytes, ++tag, s, label.c_str())) return 1;
    }
  for (int i = 0; i < 40; ++i)
    if (ring_exchange(comm, me, n, dev, 64, ++tag, s, "back-to-back send/recv of 64 bytes"))
      return 1;
  RANK_OK(gicl_mem_free(comm, sym));
  // The mismatch, on a communicator of its own (it ends in error) with short waits: rank 0 sends
  // 200000 bytes to its first network peer, which receives 100000. Rank 0 names the peer to all
  // through the NVLink communicator.
  int peer = -1;
  for (int r = 0; r < n && peer < 0; ++r)
    if (comm->paths[r] == PeerPath::kNetwork) peer = r;
  int* shared = nullptr;
  RANK_CUDA(cudaMalloc(&shared, sizeof(int)));
  RANK_CUDA(cudaMemcpy(shared, &peer, sizeof(int), cudaMemcpyHostToDevice));
  RANK_OK(gicl_broadcast(shared, shared, 1, gicl_int32, 0, world, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  RANK_CUDA(cudaMemcpy(&peer, shared, sizeof(int), cudaMemcpyDeviceToHost));
  RANK_CUDA(cudaFree(shared));
  setenv("GICL_WAIT_TIMEOUT", "3000", 1);
  gicl_comm_t pair;
  if (fresh_comm(world, me, &pair)) return 1;
  setenv("GICL_WAIT_TIMEOUT", "60000", 1);
  // The first collective or point-to-point call sets the communicator's collective state up on
  // every rank together (a bootstrap barrier, coll_state.cc): an allreduce does it on all; then
  // only the two ranks of the pair take part.
  RANK_OK(gicl_allreduce(dev, dev, 1, gicl_float32, gicl_sum, pair, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  RANK_CUDA(cudaMemset(dev, 0x11, 200000));
  RANK_CUDA(cudaMemset(dev + 200000, 0x5a, 200000));
  if (me == 0) RANK_OK(gicl_send(dev, 200000, gicl_uint8, peer, pair, s));
  if (me == peer) RANK_OK(gicl_recv(dev + 200000, 100000, gicl_uint8, 0, pair, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  gicl_result_t async = GICL_SUCCESS;
  const char* msg = nullptr;
  RANK_OK(gicl_comm_get_async_error(pair, &async, &msg));
  const std::string m = msg != nullptr ? msg : "";
  if (me == peer) {
    RANK_CHECK(async == GICL_INVALID_ARGUMENT && m.find("peer 0") != std::string::npos &&
                   m.find("200000") != std::string::npos && m.find("100000") != std::string::npos,
               "receiver of 100000 bytes from a 200000-byte network send: %d '%s'", async,
               m.c_str());
    std::vector<char> got(200000);
    RANK_CUDA(cudaMemcpy(got.data(), dev + 200000, got.size(), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < got.size(); ++i)
      RANK_CHECK(got[i] == 0x5a, "byte %zu of the mismatched receive was written", i);
  } else {
    RANK_CHECK(async == GICL_SUCCESS, "rank %d: %d '%s'", me, async, m.c_str());
  }
  // The sender's proxy delivers its message only while it runs: no rank aborts before the
  // receiver has seen it.
  RANK_OK(gicl_barrier(world, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  RANK_OK(gicl_comm_abort(pair));
  RANK_CUDA(cudaFree(dev));
  return 0;
}

int run_rank(gicl_unique_id_t id, int n, int r, const std::string& how, uint32_t seed) {
  setenv("GICL_COLL_SCRATCH_SIZE", "1M", 1);
  setenv("GICL_WAIT_TIMEOUT", "60000", 1);
  use_network_path("", n, r);
  gicl_comm_t nvlink;
  if (init_on_gpu(id, n, r, &nvlink)) return 1;
  RANK_CHECK(nvlink->net == nullptr, "the NVLink communicator opened a network path");
  use_network_path(how, n, r);
  gicl_comm_t net;
  if (fresh_comm(nvlink, r, &net)) return 1;
  RANK_CHECK(net->net != nullptr, "no network path opened (%s)", how.c_str());
  cudaStream_t s;
  RANK_CUDA(cudaStreamCreate(&s));
  const std::string label = "network/" + how;
  for (int c = 0; c < coll::kNumCollectives; ++c)
    if (matrix(net, r, n, static_cast<Collective>(c), seed + 1000 * c, s, label.c_str(), false))
      return 2;
  setenv("GICL_ALGO", "ring", 1);
  gicl_comm_t ring_nvlink, ring_net;
  use_network_path("", n, r);
  if (fresh_comm(nvlink, r, &ring_nvlink)) return 3;
  use_network_path(how, n, r);
  if (fresh_comm(nvlink, r, &ring_net)) return 3;
  // The tuner reads GICL_ALGO at a communicator's first collective, inside same_as_nvlink.
  if (same_as_nvlink(ring_nvlink, ring_net, r, n, seed, s)) return 4;
  unsetenv("GICL_ALGO");
  if (graph_replays(net, r, n, s)) return 5;
  if (network_send_recv(nvlink, net, r, n, s)) return 6;
  RANK_OK(gicl_barrier(net, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  gicl_result_t async = GICL_SUCCESS;
  const char* msg = nullptr;
  RANK_OK(gicl_comm_get_async_error(net, &async, &msg));
  RANK_CHECK(async == GICL_SUCCESS, "async error %d: %s", async, msg);
  RANK_OK(gicl_comm_destroy(ring_net));
  RANK_OK(gicl_comm_destroy(ring_nvlink));
  RANK_OK(gicl_comm_destroy(net));
  RANK_OK(gicl_comm_destroy(nvlink));
  return 0;
}

void run(int n, const char* how) {
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  const uint32_t seed = std::random_device{}();
  auto results = fork_ranks(
      n, [&](int r) { return run_rank(id, n, r, how, seed); }, 400000);
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(results[r].code, 0) << "rank " << r << " (" << how << ", seed " << seed << ")";
}

TEST(NetworkCollectives, TwoRanksWithP2pDisabled) {
  REQUIRE_GPUS(1);  // on one GPU the two ranks share it as processes
  run(2, "p2p_disable");
}

TEST(NetworkCollectives, TwoNodesByHostId) {
  REQUIRE_GPUS(1);  // on one GPU the two ranks share it as processes
  run(2, "hostid");
}

TEST(NetworkCollectives, FourRanksWithP2pDisabled) {
  REQUIRE_GPU_EACH_OR_MPS(4);
  run(4, "p2p_disable");
}

TEST(NetworkCollectives, TwoNodesOfTwoGpusByHostId) {
  REQUIRE_GPU_EACH_OR_MPS(4);
  run(4, "hostid");
}

/// A call to a network peer on the staged path completes while its rank's host thread is in
/// cudaFree, which waits for the device and holds back the launches of a copier without an agent
/// (docs/transports.md, "The proxy thread and CUDA"): a barrier's arrivals are counted in host
/// memory by the proxy, and a collective's messages travel through the host FIFOs, with no CUDA
/// call on the way. Rank 0 enqueues `call` and frees a buffer at once; rank 1 enters it 500 ms
/// later. Rank 0's cudaFree must return and the call complete without error well inside the 5 s
/// wait bound, whose expiry would have ended it otherwise; `sums`: the call sums `data` in place
/// (every element 1 + 2), else leaves it.
void completes_while_in_cuda_free(
    bool sums, const std::function<gicl_result_t(gicl_comm_t, float*, cudaStream_t)>& call) {
  gicl_unique_id_t id;
  ASSERT_EQ(gicl_get_unique_id(&id), GICL_SUCCESS);
  auto results = fork_ranks(2, [&](int r) {
    setenv("GICL_WAIT_TIMEOUT", "5000", 1);
    setenv("GICL_NET_COPY_AGENT", "0", 1);  // every copier step a launch or a copy
    use_network_path("p2p_disable", 2, r);
    gicl_comm_t comm;
    if (init_on_gpu(id, 2, r, &comm)) return 1;
    RANK_CHECK(comm->net != nullptr && comm->net->staged, "no staged network path");
    cudaStream_t s;
    RANK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void* spare = nullptr;
    float* data = nullptr;
    RANK_CUDA(cudaMalloc(&spare, 1 << 20));
    RANK_CUDA(cudaMalloc(&data, kCudaFreeCount * sizeof(float)));
    std::vector<float> in(kCudaFreeCount, static_cast<float>(r + 1));
    RANK_CUDA(cudaMemcpy(data, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice));
    RANK_OK(gicl_barrier(comm, s));  // both ranks ready
    RANK_CUDA(cudaStreamSynchronize(s));
    const auto t0 = std::chrono::steady_clock::now();
    if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    RANK_OK(call(comm, data, s));
    if (r == 0) RANK_CUDA(cudaFree(spare));  // waits for the call's kernel
    RANK_CUDA(cudaStreamSynchronize(s));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    gicl_result_t async = GICL_SUCCESS;
    const char* why = nullptr;
    RANK_OK(gicl_comm_get_async_error(comm, &async, &why));
    RANK_CHECK(async == GICL_SUCCESS, "asynchronous error %d: %s", static_cast<int>(async),
               why != nullptr ? why : "");
    RANK_CHECK(ms < 3000, "the call took %.0f ms", ms);
    RANK_CUDA(cudaMemcpy(in.data(), data, in.size() * sizeof(float), cudaMemcpyDeviceToHost));
    if (r == 1) RANK_CUDA(cudaFree(spare));
    RANK_CUDA(cudaFree(data));
    RANK_CUDA(cudaStreamDestroy(s));
    RANK_OK(gicl_comm_destroy(comm));
    const float want = sums ? 3.f : static_cast<float>(r + 1);
    for (size_t i = 0; i < in.size(); ++i)
      RANK_CHECK(in[i] == want, "element %zu: %g, not %g", i, in[i], want);
    return 0;
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].code, 0) << "rank " << r;
}

TEST(NetworkCollectives, ABarrierCompletesWhileItsRankIsInCudaFree) {
  REQUIRE_GPUS(1);  // on one GPU the two ranks share it as processes
  completes_while_in_cuda_free(
      false, [](gicl_comm_t comm, float*, cudaStream_t s) { return gicl_barrier(comm, s); });
}

TEST(NetworkCollectives, AnAllreduceCompletesWhileItsRankIsInCudaFree) {
  REQUIRE_GPUS(1);
  completes_while_in_cuda_free(true, [](gicl_comm_t comm, float* data, cudaStream_t s) {
    return gicl_allreduce(data, data, kCudaFreeCount, gicl_float32, gicl_sum, comm, s);
  });
}

/// A thread rank on GPU 0 over the staged path: 20 allreduces, each followed by a barrier (whose
/// arrivals, with GICL_NET_HOST_ARRIVALS=0, are signals the target's copier applies), queued back
/// to back before one synchronize, each sum checked. `agent`: whether its copier runs a copy agent.
int queued_calls(gicl_unique_id_t id, int r, bool* agent) {
  RANK_CUDA(cudaSetDevice(0));
  gicl_comm_t comm;
  RANK_OK(gicl_comm_init_rank(&comm, 2, id, r));
  RANK_CHECK(comm->net != nullptr && comm->net->copier != nullptr, "no staged network path");
  *agent = comm->net->copier->agent() != nullptr;
  // A non-blocking stream and asynchronous copies: the legacy stream would wait for the
  // sibling rank's kernels, which wait for this rank's (docs/design/sharing-a-gpu.md).
  cudaStream_t s;
  RANK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  constexpr int kCalls = 20, kCount = 8;
  float* buf = nullptr;
  RANK_CUDA(cudaMalloc(&buf, kCalls * kCount * sizeof(float)));
  std::vector<float> in(kCalls * kCount);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((r + 1) * (i + 1));
  RANK_CUDA(cudaMemcpyAsync(buf, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  for (int k = 0; k < kCalls; ++k) {
    RANK_OK(gicl_allreduce(buf + k * kCount, buf + k * kCount, kCount, gicl_float32, gicl_sum, comm,
                           s));
    RANK_OK(gicl_barrier(comm, s));
  }
  // Into pageable memory: CUDA waits for the stream inside this call, while the calls above
  // still need the proxy (docs/transports.md, "The proxy thread and CUDA").
  RANK_CUDA(cudaMemcpyAsync(in.data(), buf, in.size() * sizeof(float), cudaMemcpyDeviceToHost, s));
  RANK_CUDA(cudaStreamSynchronize(s));
  gicl_result_t async = GICL_SUCCESS;
  const char* why = nullptr;
  RANK_OK(gicl_comm_get_async_error(comm, &async, &why));
  RANK_CHECK(async == GICL_SUCCESS, "asynchronous error %d: %s", static_cast<int>(async),
             why != nullptr ? why : "");
  for (size_t i = 0; i < in.size(); ++i)
    RANK_CHECK(in[i] == static_cast<float>(3 * (i + 1)), "element %zu: %g, not %g", i, in[i],
               static_cast<float>(3 * (i + 1)));
  RANK_CUDA(cudaFree(buf));
  RANK_CUDA(cudaStreamDestroy(s));
  RANK_OK(gicl_comm_destroy(comm));
  return 0;
}

/// Two ranks as threads of one process on GPU 0 over the staged path. CUDA maps the process's
/// streams onto CUDA_DEVICE_MAX_CONNECTIONS hardware queues, and each rank has three: its own,
/// its copier's, its copy agent's; a copy queued behind a kernel that waits for it waits until
/// the bound. With 8 queues the collectives run with the agents; gicl's check then refuses 3 queues
/// naming the count on every rank, and on 4 runs without agents (the context keeps the 8 queues it
/// was made with: those two cases check what gicl makes of the variable).
TEST(NetworkCollectives, ThreadRanksOnOneGpuHaveAHardwareQueuePerStream) {
  REQUIRE_GPUS(1);
  auto results = fork_ranks(1, [&](int) {
    // Before CUDA starts in this process and before the threads (setenv is not thread-safe).
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8", 1);
    setenv("GICL_SHARED_GPU_THREADS", "1", 1);
    setenv("GICL_WAIT_TIMEOUT", "20000", 1);
    setenv("GICL_NET_COPY_AGENT", "500", 1);   // the agent runs where the queues fit it
    setenv("GICL_NET_HOST_ARRIVALS", "0", 1);  // the barriers' arrivals through the copiers
    use_network_path("p2p_disable", 2, 0);
    auto both = [](const char* queues, bool agents[2], std::string msgs[2]) {
      setenv("CUDA_DEVICE_MAX_CONNECTIONS", queues, 1);
      gicl_unique_id_t id;
      if (gicl_get_unique_id(&id) != GICL_SUCCESS) return std::vector<int>(2, -1);
      return thread_ranks(2, [&](int r) {
        const int rc = queued_calls(id, r, &agents[r]);
        msgs[r] = gicl_get_last_error();
        return rc;
      });
    };
    bool agents[2] = {false, false};
    std::string msgs[2];
    std::vector<int> rc = both("8", agents, msgs);
    for (int r = 0; r < 2; ++r)
      RANK_CHECK(rc[r] == 0 && agents[r], "8 queues: rank %d gave %d (agent %d) '%s'", r, rc[r],
                 agents[r], msgs[r].c_str());
    rc = both("3", agents, msgs);
    for (int r = 0; r < 2; ++r)
      RANK_CHECK(rc[r] != 0 && msgs[r].find("CUDA_DEVICE_MAX_CONNECTIONS=4 (6 with the copy "
                                            "agent)") != std::string::npos,
                 "3 queues: rank %d gave %d '%s'", r, rc[r], msgs[r].c_str());
    agents[0] = agents[1] = true;
    rc = both("4", agents, msgs);
    for (int r = 0; r < 2; ++r)
      RANK_CHECK(rc[r] == 0 && !agents[r], "4 queues: rank %d gave %d (agent %d) '%s'", r, rc[r],
                 agents[r], msgs[r].c_str());
    return 0;
  });
  EXPECT_EQ(results[0].code, 0);
}

}  // namespace
}  // namespace gicl::test
