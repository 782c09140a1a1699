// Can a block of another kernel function join SMs that run a spinning grid? Grid A: spinA,
// G blocks x 512 threads (one per SM at G=132). Then on another stream: X, and time how long
// after A's first block X starts (X sets the flag that releases A; A gives up after ~50 ms).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
__device__ unsigned long long gt() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ unsigned long long t_a, t_x;
__device__ int gave_up;
template <int kTag>
__global__ void spinner(volatile int* flag, int set = 0) {
  if (set) { if (threadIdx.x == 0 && blockIdx.x == 0) { t_x = gt(); *flag = 1; } return; }
  if (blockIdx.x == 0 && threadIdx.x == 0) t_a = gt();
  long long t0 = clock64();
  while (*flag == 0) if (clock64() - t0 > 100000000LL) { if (threadIdx.x == 0) atomicAdd(&gave_up, 1); break; }
}
template <int kTag>
__global__ void setter(volatile int* flag) {
  if (threadIdx.x == 0 && blockIdx.x == 0) { t_x = gt(); *flag = 1; }
}
__global__ void setter_smem(volatile int* flag) {
  __shared__ int big[8192];
  big[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0 && blockIdx.x == 0) { t_x = gt(); *flag = big[0] + 1; }
}
__global__ void release_after(volatile int* flag, int* dummy) { *flag = 1; }
int main() {
  int* flag; CK(cudaMalloc(&flag, 4));
  int* scratch; CK(cudaMalloc(&scratch, 1 << 20));
  cudaStream_t a, b; CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  // warm up
  CK(cudaMemset(flag, 1, 4)); spinner<0><<<1,32>>>(flag); setter<0><<<1,32>>>(flag); setter<1><<<1,32>>>(flag); setter_smem<<<1,32>>>(flag); spinner<1><<<1,32>>>(flag); CK(cudaDeviceSynchronize());
  auto run = [&](const char* what, int G, auto launch_x) {
    int z = 0; CK(cudaMemset(flag, 0, 4)); CK(cudaMemcpyToSymbol(gave_up, &z, 4)); CK(cudaDeviceSynchronize());
    spinner<0><<<G, 512, 0, a>>>(flag);
    launch_x();
    CK(cudaDeviceSynchronize());
    unsigned long long ta, tx; int g;
    CK(cudaMemcpyFromSymbol(&ta, t_a, 8)); CK(cudaMemcpyFromSymbol(&tx, t_x, 8)); CK(cudaMemcpyFromSymbol(&g, gave_up, 4));
    printf("G=%3d %-40s X started %9.1f us after A; A blocks that gave up %d\n", G, what, (double)(long long)(tx - ta) / 1e3, g);
  };
  const int ts[] = {32, 64, 128, 256, 384, 512, 768, 1024};
  printf("A = 132 blocks of TA threads spinning; X = 1 block of TX threads: us until X ran (50505 = blocked until A gave up)\n      ");
  for (int tx : ts) printf(" TX=%-6d", tx);
  printf("  memset\n");
  for (int ta : ts) {
    printf("TA=%-4d", ta);
    for (int tx = -1, k = 0; k <= 8; ++k) {
      tx = k < 8 ? ts[k] : 0;
      int z = 0; CK(cudaMemset(flag, 0, 4)); CK(cudaMemcpyToSymbol(gave_up, &z, 4)); CK(cudaDeviceSynchronize());
      spinner<0><<<132, ta, 0, a>>>(flag);
      if (tx > 0) {
        spinner<0><<<1, tx, 0, b>>>(flag, 1);
      } else {
        CK(cudaMemsetAsync(scratch, 0, 1 << 20, b));
        spinner<0><<<1, ta, 0, b>>>(flag, 1);
      }
      CK(cudaDeviceSynchronize());
      unsigned long long t0, t1;
      CK(cudaMemcpyFromSymbol(&t0, t_a, 8)); CK(cudaMemcpyFromSymbol(&t1, t_x, 8));
      printf(" %9.1f", (double)(long long)(t1 - t0) / 1e3);
    }
    printf("\n");
  }
  printf("A = 132 x 512 spinning; X = a memset of B bytes (value 0xff) then a 512-thread setter:\n");
  int* big; CK(cudaMalloc(&big, 64 << 20));
  for (size_t bytes : {size_t{4}, size_t{1000}, size_t{4096}, size_t{1} << 20, size_t{64} << 20}) {
    for (int off : {0, 4}) {
      int z = 0; CK(cudaMemset(flag, 0, 4)); CK(cudaMemcpyToSymbol(gave_up, &z, 4)); CK(cudaDeviceSynchronize());
      spinner<0><<<132, 512, 0, a>>>(flag);
      CK(cudaMemsetAsync(reinterpret_cast<char*>(big) + off, 0xff, bytes - off, b));
      spinner<0><<<1, 512, 0, b>>>(flag, 1);
      CK(cudaDeviceSynchronize());
      unsigned long long t0, t1;
      CK(cudaMemcpyFromSymbol(&t0, t_a, 8)); CK(cudaMemcpyFromSymbol(&t1, t_x, 8));
      printf("  memset %zu bytes at offset %d: setter ran %.1f us after A\n", bytes - off, off, (double)(long long)(t1 - t0) / 1e3);
    }
  }
  return 0;
}
