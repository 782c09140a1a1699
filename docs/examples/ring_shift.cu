// SPDX-License-Identifier: Apache-2.0
// Ring shift: every rank sends an array to the next rank with one block-wide put_signal, then
// waits for the array of the previous rank. The smallest complete use of the device API.
#include "example_util.cuh"

using namespace gicl::dev;

// __launch_bounds__: a block of 1024 threads may use at most 64 registers each; without the bound
// the compiler spends more on the device API's network branch and the launch fails.
__global__ void __launch_bounds__(1024) ring_shift(DeviceComm c, int* recv, const int* send, size_t n, uint64_t* arrived) {
  const int next = (c.rank + 1) % c.nranks;
  // Payload first, then the signal, both to `next`: the signal lands only after the data.
  put_signal<Scope::kBlock>(c, recv, send, n * sizeof(int), arrived, 1, SignalOp::kSet, next);
  if (threadIdx.x == 0) signal_wait_until(c, arrived, Cmp::kEq, 1);
  __syncthreads();
}

int main() {
  Example e = example_start();
  const size_t n = 1 << 20;
  int *recv, *send;
  uint64_t* arrived;
  EX_GICL(gicl_mem_alloc(e.comm, n * sizeof(int), reinterpret_cast<void**>(&recv)));
  EX_GICL(gicl_mem_alloc(e.comm, sizeof(uint64_t), reinterpret_cast<void**>(&arrived)));
  EX_CUDA(cudaMalloc(&send, n * sizeof(int)));
  std::vector<int> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = e.rank * 1000003 + static_cast<int>(i);
  EX_CUDA(cudaMemcpy(send, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  EX_CUDA(cudaMemset(recv, 0xff, n * sizeof(int)));
  EX_CUDA(cudaMemset(arrived, 0, sizeof(uint64_t)));
  EX_CUDA(cudaDeviceSynchronize());
  EX_GICL(gicl_barrier_on_stream(e.comm, e.s));  // everyone has cleared its flag
  ring_shift<<<1, 1024, 0, e.s>>>(e.dc, recv, send, n, arrived);
  EX_CUDA(cudaGetLastError());
  EX_CUDA(cudaStreamSynchronize(e.s));
  EX_CUDA(cudaMemcpy(h.data(), recv, n * sizeof(int), cudaMemcpyDeviceToHost));
  const int prev = (e.rank + e.n - 1) % e.n;
  long long wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += h[i] != prev * 1000003 + static_cast<int>(i);
  return example_finish(e, wrong, "ring shift");
}
