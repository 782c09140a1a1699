// One-rank copy: cudaMemcpyAsync vs a 16-byte copy kernel, eager and graph, per call (us).
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
template <int U>
__global__ void __launch_bounds__(512) copy16(const uint4* __restrict__ s, uint4* __restrict__ d, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x, st = (size_t)gridDim.x * blockDim.x;
  for (; i + (U - 1) * st < n; i += U * st) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = s[i + u * st];
#pragma unroll
    for (int u = 0; u < U; ++u) d[i + u * st] = v[u];
  }
  for (; i < n; i += st) d[i] = s[i];
}
int sms;
void run(int mode, int k, void* dst, const void* src, size_t bytes, cudaStream_t s) {
  if (mode == 0) { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s)); return; }
  size_t n = bytes / 16; int thr = 512;
  size_t want = (n + thr - 1) / thr; int cap = sms * k;
  int g = (int)std::min<size_t>(want, cap); if (g < 1) g = 1;
  if (mode == 1) copy16<1><<<g, thr, 0, s>>>((const uint4*)src, (uint4*)dst, n);
  else copy16<4><<<g, thr, 0, s>>>((const uint4*)src, (uint4*)dst, n);
  CK(cudaGetLastError());
}
int main() {
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  size_t maxb = size_t(1) << 30; void *a, *b; CK(cudaMalloc(&a, maxb)); CK(cudaMalloc(&b, maxb));
  CK(cudaMemset(a, 1, maxb));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  struct V { int mode, k; const char* name; } vs[] = {{0,0,"memcpy"},{1,2,"k1x2"},{1,4,"k1x4"},{1,8,"k1x8"},{2,2,"k4x2"},{2,4,"k4x4"},{2,8,"k4x8"}};
  printf("SMs %d\n%10s", sms, "bytes");
  for (auto& v : vs) printf(" %9s %9s", v.name, "g");
  printf("\n");
  for (size_t bytes = 16; bytes <= maxb; bytes *= 4) {
    printf("%10zu", bytes);
    for (auto& v : vs) {
      int iters = bytes >= (64 << 20) ? 5 : 20;
      for (int g = 0; g < 2; ++g) {
        std::vector<float> t;
        cudaGraphExec_t ge = nullptr;
        if (g) {
          cudaGraph_t gr; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
          for (int i = 0; i < iters; ++i) run(v.mode, v.k, b, a, bytes, s);
          CK(cudaStreamEndCapture(s, &gr)); CK(cudaGraphInstantiate(&ge, gr, 0)); CK(cudaGraphDestroy(gr));
        }
        for (int r = 0; r < 12; ++r) {
          CK(cudaEventRecord(e0, s));
          if (g) CK(cudaGraphLaunch(ge, s)); else for (int i = 0; i < iters; ++i) run(v.mode, v.k, b, a, bytes, s);
          CK(cudaEventRecord(e1, s)); CK(cudaEventSynchronize(e1));
          float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); if (r >= 2) t.push_back(ms * 1000 / iters);
        }
        std::sort(t.begin(), t.end());
        printf(" %9.2f", t[t.size() / 2]);
        if (ge) CK(cudaGraphExecDestroy(ge));
      }
    }
    printf("\n");
  }
  return 0;
}
