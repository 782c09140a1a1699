// SPDX-License-Identifier: Apache-2.0
// A persistent kernel that computes tiles and streams each finished tile to a peer while it
// computes the next: in every block, warps 1.. compute tile s into one half of a double buffer
// while warp 0 sends tile s-1 from the other half with a warp put_signal. Launched with
// gicl::dev::launch_collective, which refuses grids that cannot all be resident at once (the blocks
// wait for their peers' tiles at the end).
#include "example_util.cuh"

using namespace gicl::dev;

constexpr int kTiles = 512;
constexpr int kTileFloats = 8192;

__device__ float tile_value(int rank, int tile, int i) {
  float x = 0.f;
  for (int k = 1; k <= 8; ++k) x += __sinf(0.001f * (i + k * tile) + rank) / k;  // some real work
  return x;
}

__global__ void pipeline(DeviceComm c, float* recv, uint64_t* tile_flags, float* staging) {
  const int peer = (c.rank + 1) % c.nranks;
  const int warp = threadIdx.x / 32, compute_threads = blockDim.x - 32;
  float* stage = staging + blockIdx.x * 2 * kTileFloats;
  int step = 0;
  int prev_tile = -1;
  for (int tile = blockIdx.x;; tile += gridDim.x, ++step) {
    const bool have = tile < kTiles;
    if (warp > 0 && have) {
      float* out = stage + (step % 2) * kTileFloats;
      for (int i = threadIdx.x - 32; i < kTileFloats; i += compute_threads)
        out[i] = tile_value(c.rank, tile, i);
    } else if (warp == 0 && prev_tile >= 0) {
      // Meanwhile: send the tile finished in the previous step.
      put_signal<Scope::kWarp>(c, recv + static_cast<size_t>(prev_tile) * kTileFloats,
                               stage + ((step + 1) % 2) * kTileFloats, kTileFloats * sizeof(float),
                               tile_flags + prev_tile, 1, SignalOp::kSet, peer);
    }
    __syncthreads();  // the computed tile is complete before warp 0 sends it next step
    if (!have) break;
    prev_tile = tile;
  }
  // Every block then waits for the tiles it will check (the peer's tiles of the same indices).
  for (int tile = blockIdx.x; tile < kTiles; tile += gridDim.x)
    if (threadIdx.x == 0) signal_wait_until(c, tile_flags + tile, Cmp::kEq, 1);
  __syncthreads();
}

__global__ void verify(const float* recv, int src, unsigned long long* wrong) {
  for (int t = blockIdx.x; t < kTiles; t += gridDim.x)
    for (int i = threadIdx.x; i < kTileFloats; i += blockDim.x)
      if (fabsf(recv[static_cast<size_t>(t) * kTileFloats + i] - tile_value(src, t, i)) > 1e-5f)
        atomicAdd(wrong, 1ull);
}

int main() {
  Example e = example_start();
  float *recv, *staging;
  uint64_t* flags;
  unsigned long long* wrong;
  int sms = 0;
  EX_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = sms;  // one persistent block per SM
  EX_GICL(gicl_mem_alloc(e.comm, static_cast<size_t>(kTiles) * kTileFloats * sizeof(float),
                         reinterpret_cast<void**>(&recv)));
  EX_GICL(gicl_mem_alloc(e.comm, kTiles * sizeof(uint64_t), reinterpret_cast<void**>(&flags)));
  EX_CUDA(cudaMalloc(&staging, static_cast<size_t>(blocks) * 2 * kTileFloats * sizeof(float)));
  EX_CUDA(cudaMallocManaged(&wrong, sizeof(*wrong)));
  *wrong = 0;
  EX_CUDA(cudaMemset(flags, 0, kTiles * sizeof(uint64_t)));
  EX_CUDA(cudaMemset(recv, 0xff, static_cast<size_t>(kTiles) * kTileFloats * sizeof(float)));
  EX_CUDA(cudaDeviceSynchronize());
  EX_GICL(gicl_barrier_on_stream(e.comm, e.s));
  void* args[] = {&e.dc, &recv, &flags, &staging};
  EX_GICL(gicl::dev::launch_collective(reinterpret_cast<const void*>(pipeline), dim3(blocks),
                                       dim3(256), args, 0, e.s));
  verify<<<blocks, 256, 0, e.s>>>(recv, (e.rank + e.n - 1) % e.n, wrong);
  EX_CUDA(cudaGetLastError());
  EX_CUDA(cudaStreamSynchronize(e.s));
  return example_finish(e, static_cast<long long>(*wrong), "persistent compute + stream pipeline");
}
