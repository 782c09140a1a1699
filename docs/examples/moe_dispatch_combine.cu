// SPDX-License-Identifier: Apache-2.0
// MoE-style dispatch and combine. Every rank holds kTokens tokens of kHidden floats; each token
// goes to one of kExpertsPerRank * nranks experts. Dispatch: one warp per token packs it (with
// its token id) into a slot of a symmetric send buffer and puts the slot into the expert owner's
// receive buffer; then one atomic per expert publishes how many tokens that expert got from us,
// and a signal says our dispatch is complete. The owner waits for every rank, runs its experts
// (scale by expert id + 1) and puts each result back to the token's home slot; a counter signal
// tells the home rank how many results have arrived. Every put's source is symmetric memory, so
// the same kernels reach ranks on other nodes through the network proxy (GICL_HOSTID or
// GICL_P2P_DISABLE=1 emulate them on one machine).
#include "example_util.cuh"

using namespace gicl::dev;

constexpr int kTokens = 2048;
constexpr int kHidden = 512;
constexpr int kExpertsPerRank = 4;

struct Slot {      // one received token
  int32_t token;   // index at its home rank
  int32_t home;    // home rank
  int32_t expert;  // global expert id
  int32_t pad;
  float h[kHidden];
};

__host__ __device__ int route(int rank, int token, int experts) {
  uint32_t x = static_cast<uint32_t>(rank * 7919 + token) * 2654435761u;
  return static_cast<int>((x >> 7) % static_cast<uint32_t>(experts));
}
__host__ __device__ float input(int rank, int token, int i) {
  return 0.001f * ((rank * 131 + token * 7 + i) % 1000);
}

// Dispatch: warp w sends token w. cursor[d] hands out slots in our region of rank d's buffer.
__global__ void dispatch(DeviceComm c, Slot* recv, Slot* send, const float* tokens, int* cursor,
                         int* counts) {
  const int token = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (token >= kTokens) return;
  const int expert = route(c.rank, token, kExpertsPerRank * c.nranks),
            dst = expert / kExpertsPerRank;
  int pos = 0;
  if (lane == 0) {
    pos = atomicAdd(cursor + dst, 1);
    atomicAdd(counts + expert, 1);
  }
  pos = __shfl_sync(0xffffffffu, pos, 0);
  Slot* out = send + token;  // packed here, then sent whole
  if (lane == 0) out->token = token, out->home = c.rank, out->expert = expert, out->pad = 0;
  for (int i = lane; i < kHidden; i += 32)
    out->h[i] = tokens[static_cast<size_t>(token) * kHidden + i];
  __syncwarp();
  Slot* slot = recv + static_cast<size_t>(c.rank) * kTokens + pos;  // our region at rank dst
  put<Scope::kWarp>(c, slot, out, 1, dst);
}

// Publish: one atomic per expert (how many of our tokens it owns), then "rank done" at each rank.
__global__ void publish(DeviceComm c, const int* counts, int* expert_tokens, uint64_t* dispatched) {
  quiet(c);  // every token put is complete before the counts that announce them
  for (int e = 0; e < kExpertsPerRank * c.nranks; ++e)
    if (counts[e])
      atomic_add(c, expert_tokens + e % kExpertsPerRank, counts[e], e / kExpertsPerRank);
  fence(c);  // the counts land before "dispatch complete" (signal() alone is relaxed)
  for (int r = 0; r < c.nranks; ++r) signal(c, dispatched, 1, SignalOp::kAdd, r);
}

// Experts + combine at the owner: wait for all ranks, then scale each received token and put it
// back to its home slot; count results per home rank with a signal.
__global__ void experts_and_combine(DeviceComm c, Slot* recv, float* out, uint64_t* dispatched,
                                    uint64_t* returned, int* seen_tokens) {
  __shared__ bool ok;
  if (threadIdx.x == 0)
    ok = signal_wait_until(c, dispatched, Cmp::kAtLeast, static_cast<uint64_t>(c.nranks));
  __syncthreads();
  if (!ok) return;
  const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
  for (int src = 0; src < c.nranks; ++src) {
    // How many tokens src sent us: the sum of src's per-expert atomics is in expert_tokens in
    // total; per source we read the slots until the metadata says "unused" (home < 0).
    for (int k = blockIdx.x * warps + threadIdx.x / 32; k < kTokens; k += gridDim.x * warps) {
      Slot* s = recv + static_cast<size_t>(src) * kTokens + k;
      if (s->home < 0) continue;
      const float scale = static_cast<float>(s->expert + 1);
      for (int i = lane; i < kHidden; i += 32) s->h[i] *= scale;
      __syncwarp();
      if (lane == 0) atomicAdd(seen_tokens + s->expert % kExpertsPerRank, 1);
      // The result, then "one more result" at its home rank, in that order.
      put_signal<Scope::kWarp>(c, out + static_cast<size_t>(s->token) * kHidden, s->h,
                               kHidden * sizeof(float), returned, 1, SignalOp::kAdd, s->home);
    }
  }
}

__global__ void wait_returned(DeviceComm c, uint64_t* returned, int* ok) {
  *ok = signal_wait_until(c, returned, Cmp::kAtLeast, static_cast<uint64_t>(kTokens));
}

int main() {
  Example e = example_start();
  const int experts = kExpertsPerRank * e.n;
  Slot *recv, *send;
  float *out, *tokens;
  int *expert_tokens, *cursor, *counts, *seen, *ok;
  uint64_t* sigs;
  const size_t recv_bytes = sizeof(Slot) * kTokens * e.n;
  EX_GICL(gicl_mem_alloc(e.comm, recv_bytes, reinterpret_cast<void**>(&recv)));
  EX_GICL(gicl_mem_alloc(e.comm, sizeof(Slot) * kTokens, reinterpret_cast<void**>(&send)));
  EX_GICL(
      gicl_mem_alloc(e.comm, sizeof(float) * kTokens * kHidden, reinterpret_cast<void**>(&out)));
  EX_GICL(gicl_mem_alloc(e.comm, sizeof(int) * kExpertsPerRank,
                         reinterpret_cast<void**>(&expert_tokens)));
  EX_GICL(gicl_mem_alloc(e.comm, 2 * sizeof(uint64_t), reinterpret_cast<void**>(&sigs)));
  EX_CUDA(cudaMalloc(&tokens, sizeof(float) * kTokens * kHidden));
  EX_CUDA(cudaMallocManaged(&cursor, sizeof(int) * e.n));
  EX_CUDA(cudaMallocManaged(&counts, sizeof(int) * experts));
  EX_CUDA(cudaMallocManaged(&seen, sizeof(int) * kExpertsPerRank));
  EX_CUDA(cudaMallocManaged(&ok, sizeof(int)));
  std::vector<float> h(static_cast<size_t>(kTokens) * kHidden);
  for (int t = 0; t < kTokens; ++t)
    for (int i = 0; i < kHidden; ++i) h[static_cast<size_t>(t) * kHidden + i] = input(e.rank, t, i);
  EX_CUDA(cudaMemcpy(tokens, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  EX_CUDA(cudaMemset(recv, 0xff, recv_bytes));  // home = -1: unused slot
  EX_CUDA(cudaMemset(out, 0, sizeof(float) * kTokens * kHidden));
  EX_CUDA(cudaMemset(expert_tokens, 0, sizeof(int) * kExpertsPerRank));
  EX_CUDA(cudaMemset(sigs, 0, 2 * sizeof(uint64_t)));
  EX_CUDA(cudaMemset(cursor, 0, sizeof(int) * e.n));
  EX_CUDA(cudaMemset(counts, 0, sizeof(int) * experts));
  EX_CUDA(cudaMemset(seen, 0, sizeof(int) * kExpertsPerRank));
  EX_CUDA(cudaDeviceSynchronize());
  // Every kernel loaded before the first one waits on a peer: with CUDA's lazy loading a first
  // launch while a kernel of this process waits would wait for that kernel to end, and across
  // the network the wait ends only once the proxy's own launches on this GPU have run.
  cudaFuncAttributes attrs;
  EX_CUDA(cudaFuncGetAttributes(&attrs, dispatch));
  EX_CUDA(cudaFuncGetAttributes(&attrs, publish));
  EX_CUDA(cudaFuncGetAttributes(&attrs, experts_and_combine));
  EX_CUDA(cudaFuncGetAttributes(&attrs, wait_returned));
  EX_GICL(gicl_barrier_on_stream(e.comm, e.s));
  dispatch<<<kTokens / 8, 256, 0, e.s>>>(e.dc, recv, send, tokens, cursor, counts);
  EX_CUDA(cudaGetLastError());
  publish<<<1, 1, 0, e.s>>>(e.dc, counts, expert_tokens, sigs);
  EX_CUDA(cudaGetLastError());
  experts_and_combine<<<32, 256, 0, e.s>>>(e.dc, recv, out, sigs, sigs + 1, seen);
  EX_CUDA(cudaGetLastError());
  wait_returned<<<1, 1, 0, e.s>>>(e.dc, sigs + 1, ok);
  EX_CUDA(cudaGetLastError());
  EX_CUDA(cudaStreamSynchronize(e.s));
  long long wrong = *ok ? 0 : 1000000;
  // Every result is the input scaled by its expert's id + 1.
  std::vector<float> got(h.size());
  EX_CUDA(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int t = 0; t < kTokens; ++t) {
    const float scale = static_cast<float>(route(e.rank, t, experts) + 1);
    for (int i = 0; i < kHidden; ++i)
      wrong += std::fabs(got[static_cast<size_t>(t) * kHidden + i] - input(e.rank, t, i) * scale) >
               1e-4f;
  }
  // The published per-expert counts match the tokens the experts actually processed.
  std::vector<int> published(kExpertsPerRank);
  EX_CUDA(cudaMemcpy(published.data(), expert_tokens, sizeof(int) * kExpertsPerRank,
                     cudaMemcpyDeviceToHost));
  for (int x = 0; x < kExpertsPerRank; ++x) wrong += published[x] != seen[x];
  return example_finish(e, wrong, "MoE dispatch/combine");
}
