// SPDX-License-Identifier: Apache-2.0
// Send-and-signal producer/consumer: every rank streams K chunks to the next rank through a
// 4-slot ring buffer. A slot's signal says "chunk k is here"; a credit signal back says "slot
// free again", so the producer never overwrites a chunk the consumer has not read.
#include "example_util.cuh"

using namespace gicl::dev;

constexpr int kSlots = 4;
constexpr int kChunks = 1000;
constexpr size_t kChunkInts = 4096;

__device__ int value(int src, int chunk, size_t i) {
  return src * 7919 + chunk * 131 + static_cast<int>(i);
}

// Block 0 produces for the next rank, block 1 consumes from the previous one.
__global__ void stream(DeviceComm c, int* slots, uint64_t* full, uint64_t* credits, int* staging,
                       unsigned long long* wrong) {
  const int next = (c.rank + 1) % c.nranks, prev = (c.rank + c.nranks - 1) % c.nranks;
  for (int k = 0; k < kChunks; ++k) {
    const int slot = k % kSlots;
    if (blockIdx.x == 0) {
      // Credits count slots the consumer has released: chunk k needs k - kSlots + 1 of them.
      if (threadIdx.x == 0)
        signal_wait_until(c, credits, Cmp::kAtLeast,
                          static_cast<uint64_t>(k - kSlots + 1 > 0 ? k - kSlots + 1 : 0));
      int* stage = staging + slot * kChunkInts;
      for (size_t i = threadIdx.x; i < kChunkInts; i += blockDim.x) stage[i] = value(c.rank, k, i);
      __syncthreads();
      put_signal<Scope::kBlock>(c, slots + slot * kChunkInts, stage, kChunkInts * sizeof(int),
                                full + slot, static_cast<uint64_t>(k / kSlots + 1), SignalOp::kSet,
                                next);
    } else {
      if (threadIdx.x == 0)
        signal_wait_until(c, full + slot, Cmp::kAtLeast, static_cast<uint64_t>(k / kSlots + 1));
      __syncthreads();
      unsigned long long bad = 0;
      for (size_t i = threadIdx.x; i < kChunkInts; i += blockDim.x)
        bad += slots[slot * kChunkInts + i] != value(prev, k, i);
      if (bad) atomicAdd(wrong, bad);
      __syncthreads();
      if (threadIdx.x == 0) signal(c, credits, 1, SignalOp::kAdd, prev);
    }
  }
}

int main() {
  Example e = example_start();
  int *slots, *staging;
  uint64_t* sigs;
  unsigned long long* wrong;
  EX_GICL(
      gicl_mem_alloc(e.comm, kSlots * kChunkInts * sizeof(int), reinterpret_cast<void**>(&slots)));
  EX_GICL(gicl_mem_alloc(e.comm, (kSlots + 1) * sizeof(uint64_t), reinterpret_cast<void**>(&sigs)));
  EX_CUDA(cudaMalloc(&staging, kSlots * kChunkInts * sizeof(int)));
  EX_CUDA(cudaMallocManaged(&wrong, sizeof(*wrong)));
  *wrong = 0;
  EX_CUDA(cudaMemset(sigs, 0, (kSlots + 1) * sizeof(uint64_t)));
  EX_CUDA(cudaDeviceSynchronize());
  EX_GICL(gicl_barrier_on_stream(e.comm, e.s));
  stream<<<2, 512, 0, e.s>>>(e.dc, slots, sigs, sigs + kSlots, staging, wrong);
  EX_CUDA(cudaGetLastError());
  EX_CUDA(cudaStreamSynchronize(e.s));
  return example_finish(e, static_cast<long long>(*wrong), "producer/consumer, 1000 chunks");
}
