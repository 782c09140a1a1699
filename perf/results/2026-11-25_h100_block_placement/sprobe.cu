// When does each of k spinning grids (G blocks x T threads, different streams of one context)
// start its first and last block? (globaltimer, us after grid 0's first block)
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
__device__ unsigned long long gt() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ unsigned long long first_t[16], last_t[16];
__device__ int smid_of[16][1024];
__global__ void spin(volatile int* flag, int id, int* left) {
  if (threadIdx.x == 0) {
    const unsigned long long t = gt();
    atomicMin(&first_t[id], t); atomicMax(&last_t[id], t);
    unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); smid_of[id][blockIdx.x] = s;
  }
  long long t0 = clock64();
  while (*flag == 0) if (clock64() - t0 > 100000000LL) break;  // ~50 ms
}
int main(int argc, char** argv) {
  int* flag; CK(cudaMalloc(&flag, 4)); CK(cudaMemset(flag, 0, 4));
  std::vector<cudaStream_t> s(16);
  for (auto& x : s) CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
  spin<<<1, 32>>>(flag, 15, nullptr); CK(cudaDeviceSynchronize());
  struct C { int G, T, k; } cs[] = {{132, 512, 2}, {66, 512, 3}, {80, 512, 4}, {33, 512, 4}, {40, 512, 4}, {132, 128, 3}, {264, 256, 2}};
  for (C c : cs) {
    std::vector<unsigned long long> init(16, ~0ull), zero(16, 0);
    CK(cudaMemcpyToSymbol(first_t, init.data(), 128)); CK(cudaMemcpyToSymbol(last_t, zero.data(), 128));
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < c.k; ++i) spin<<<c.G, c.T, 0, s[i]>>>(flag, i, nullptr);
    CK(cudaDeviceSynchronize());
    unsigned long long f[16], l[16]; static int sm[16][1024];
    CK(cudaMemcpyFromSymbol(f, first_t, 128)); CK(cudaMemcpyFromSymbol(l, last_t, 128));
    CK(cudaMemcpyFromSymbol(sm, smid_of, sizeof(sm)));
    printf("G=%d T=%d k=%d:", c.G, c.T, c.k);
    for (int i = 0; i < c.k; ++i) {
      std::vector<int> per(200, 0); int shared = 0;
      for (int b = 0; b < c.G; ++b) per[sm[i][b]]++;
      // SMs this grid shares with grid 0
      if (i > 0) { std::vector<int> p0(200, 0); for (int b = 0; b < c.G; ++b) p0[sm[0][b]] = 1; for (int q = 0; q < 200; ++q) if (per[q] && p0[q]) ++shared; }
      int used = 0; for (int q = 0; q < 200; ++q) used += per[q] > 0;
      printf("  grid %d first %.1f last %.1f us, %d SMs, %d shared with grid 0;", i, (double)(long long)(f[i] - f[0]) / 1e3, (double)(long long)(l[i] - f[0]) / 1e3, used, shared);
    }
    printf("\n");
  }
  return 0;
}
