// Which streams share a hardware work queue: stream A runs a kernel that spins on a flag, then a
// second kernel (which in A's queue waits for the first); stream B, created after k streams were
// created and destroyed, runs the kernel that sets the flag. If B shares A's queue, B's kernel
// sits behind A's second kernel and the spin ends only at its timeout.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
__device__ unsigned long long now() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__global__ void spin(volatile int* flag, int* seen, unsigned long long timeout_ns) {
  unsigned long long t0 = now();
  while (*flag == 0 && now() - t0 < timeout_ns) {}
  *seen = *flag;
}
__global__ void nop() {}
__global__ void set(volatile int* flag) { *flag = 1; __threadfence_system(); }
int trial(cudaStream_t a, cudaStream_t b, int* flag, int* seen) {
  CK(cudaMemset(flag, 0, 4)); CK(cudaMemset(seen, 0, 4)); CK(cudaDeviceSynchronize());
  spin<<<1, 1, 0, a>>>(flag, seen, 50'000'000ull);
  nop<<<1, 1, 0, a>>>();
  set<<<1, 1, 0, b>>>(flag);
  CK(cudaStreamSynchronize(a)); CK(cudaStreamSynchronize(b)); CK(cudaGetLastError());
  int h = 0; CK(cudaMemcpy(&h, seen, 4, cudaMemcpyDeviceToHost));
  return h == 0;  // 1: shared queue (the spin timed out)
}
int main() {
  const char* c = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  int *flag, *seen; CK(cudaMalloc(&flag, 4)); CK(cudaMalloc(&seen, 4));
  if (!getenv("NOWARM")) { int* d; CK(cudaMalloc(&d, 4)); spin<<<1, 1>>>(d, d, 0); nop<<<1, 1>>>(); set<<<1, 1>>>(d); CK(cudaDeviceSynchronize()); }
  printf("CUDA_DEVICE_MAX_CONNECTIONS=%s\nk (streams made and destroyed between A and B): shared?\n", c ? c : "(unset)");
  for (int k = 0; k <= 40; ++k) {
    cudaStream_t a, b;
    CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    for (int i = 0; i < k; ++i) { cudaStream_t t; CK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking)); CK(cudaStreamDestroy(t)); }
    CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    printf("%d:%d ", k, trial(a, b, flag, seen));
    CK(cudaStreamDestroy(a)); CK(cudaStreamDestroy(b));
  }
  printf("\nlive (A, then k live streams, then B):\n");
  for (int k = 0; k <= 40; ++k) {
    cudaStream_t a, b, t[64];
    CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    for (int i = 0; i < k; ++i) CK(cudaStreamCreateWithFlags(&t[i], cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    printf("%d:%d ", k, trial(a, b, flag, seen));
    for (int i = 0; i < k; ++i) CK(cudaStreamDestroy(t[i]));
    CK(cudaStreamDestroy(a)); CK(cudaStreamDestroy(b));
  }
  printf("\nwarm (A, k live streams, B; each ran a nop and synced before the trial):\n");
  for (int k = 0; k <= 40; ++k) {
    cudaStream_t a, b, t[64];
    CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking)); nop<<<1, 1, 0, a>>>(); CK(cudaStreamSynchronize(a));
    for (int i = 0; i < k; ++i) { CK(cudaStreamCreateWithFlags(&t[i], cudaStreamNonBlocking)); nop<<<1, 1, 0, t[i]>>>(); CK(cudaStreamSynchronize(t[i])); }
    CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking)); nop<<<1, 1, 0, b>>>(); CK(cudaStreamSynchronize(b));
    printf("%d:%d ", k, trial(a, b, flag, seen));
    for (int i = 0; i < k; ++i) CK(cudaStreamDestroy(t[i]));
    CK(cudaStreamDestroy(a)); CK(cudaStreamDestroy(b));
  }
  printf("\nsame stream control (must be 1): %d\n", [&] { cudaStream_t a; CK(cudaStreamCreate(&a)); int r = trial(a, a, flag, seen); CK(cudaStreamDestroy(a)); return r; }());
  return 0;
}
