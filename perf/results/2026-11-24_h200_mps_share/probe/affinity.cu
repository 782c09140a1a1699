// Probe: what a client sees of its MPS share.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
__global__ void spin(unsigned long long* out) {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  atomicMax(out, (unsigned long long)smid);
}
int main() {
  cudaSetDevice(0);
  cudaFree(0);
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  int mps = 0;
  cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, 0);
  int attr = 0;
  cudaDeviceGetAttribute(&attr, cudaDevAttrMultiProcessorCount, 0);
  CUexecAffinityParam a{};
  CUresult r = cuCtxGetExecAffinity(&a, CU_EXEC_AFFINITY_TYPE_SM_COUNT);
  int sup = 0;
  CUresult r2 = cuDeviceGetExecAffinitySupport(&sup, CU_EXEC_AFFINITY_TYPE_SM_COUNT, 0);
  int occ = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, spin, 1024, 0);
  unsigned long long* d;
  cudaMalloc(&d, 8);
  cudaMemset(d, 0, 8);
  spin<<<1024, 1024>>>(d);
  unsigned long long h = 0;
  cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost);
  printf(
      "env=%s mps=%d prop.sms=%d attr.sms=%d affinity rc=%d sms=%u support rc=%d %d maxsmid=%llu\n",
      getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") ? getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
                                                  : "-",
      mps, p.multiProcessorCount, attr, (int)r, a.param.smCount.val, (int)r2, sup, h);
  return 0;
}
