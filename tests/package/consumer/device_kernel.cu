// SPDX-License-Identifier: Apache-2.0
// A CUDA program against the installed package's device API: a kernel that puts to the next rank
// with a signal and waits for its own. Compiles and links anywhere; runs the kernel only where a
// launcher started it with a GPU, and otherwise checks the host-side argument errors.
#include <cstdio>

#include <gicl/device.cuh>

__global__ void ring_put(gicl_device_comm_t dc, float* buf, uint64_t* sig, int n) {
  const int me = gicl::dev::rank(dc), peer = (me + 1) % gicl::dev::size(dc);
  namespace dev = gicl::dev;
  dev::put_signal<dev::Scope::kBlock>(dc, buf, buf, n * sizeof(float), sig, 1, dev::SignalOp::kAdd,
                                      peer);
  if (threadIdx.x == 0 && !dev::signal_wait_until(dc, sig, dev::Cmp::kGe, 1))
    printf("rank %d: the signal did not arrive\n", me);
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    gicl_device_comm_t dc;
    if (gicl_comm_get_device_comm(nullptr, &dc) != GICL_INVALID_ARGUMENT) return 1;
    std::printf("device_kernel: built; no GPU here, argument errors checked\n");
    return 0;
  }
  gicl_comm_t comm;
  if (gicl_comm_init_env(&comm) != GICL_SUCCESS) {
    std::fprintf(stderr, "init: %s\n", gicl_get_last_error());
    return 2;
  }
  gicl_device_comm_t dc;
  float* buf = nullptr;
  uint64_t* sig = nullptr;
  if (gicl_comm_get_device_comm(comm, &dc) != GICL_SUCCESS ||
      gicl_mem_alloc(comm, 1024 * sizeof(float), reinterpret_cast<void**>(&buf)) != GICL_SUCCESS ||
      gicl_mem_alloc(comm, sizeof(uint64_t), reinterpret_cast<void**>(&sig)) != GICL_SUCCESS ||
      cudaMemset(sig, 0, sizeof(uint64_t)) != cudaSuccess ||
      gicl_barrier_on_stream(comm, nullptr) != GICL_SUCCESS ||
      cudaDeviceSynchronize() != cudaSuccess) {
    std::fprintf(stderr, "setup: %s\n", gicl_get_last_error());
    return 3;
  }
  ring_put<<<1, 128>>>(dc, buf, sig, 1024);
  if (cudaDeviceSynchronize() != cudaSuccess) return 4;
  gicl_mem_free(comm, sig);
  gicl_mem_free(comm, buf);
  gicl_comm_destroy(comm);
  std::printf("device_kernel: ring put_signal done\n");
  return 0;
}
