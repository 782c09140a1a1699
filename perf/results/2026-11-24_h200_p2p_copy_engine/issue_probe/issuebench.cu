// Host cost of issuing one copy (and the proxy's other calls) on a stream: which API is cheapest.
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x)                                        \
  do {                                               \
    cudaError_t e = (x);                             \
    if (e) {                                         \
      printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      exit(1);                                       \
    }                                                \
  } while (0)
#define CU(x)                         \
  do {                                \
    CUresult e = (x);                 \
    if (e) {                          \
      printf("%s: %d\n", #x, (int)e); \
      exit(1);                        \
    }                                 \
  } while (0)
double now() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
__global__ void nop() {}
int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? strtoull(argv[1], 0, 0) : (256 << 10);
  CK(cudaSetDevice(0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void *src, *dst;
  CK(cudaMalloc(&src, 4 << 20));
  CK(cudaMalloc(&dst, 4 << 20));
  // VMM allocation mapped at two addresses (the second like a peer's import).
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  size_t sz = ((4 << 20) + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle h;
  CU(cuMemCreate(&h, sz, &prop, 0));
  CUdeviceptr va[2];
  for (int i = 0; i < 2; ++i) {
    CU(cuMemAddressReserve(&va[i], sz, 0, 0, 0));
    CU(cuMemMap(va[i], sz, 0, h, 0));
    CUmemAccessDesc ad{};
    ad.location = prop.location;
    ad.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU(cuMemSetAccess(va[i], sz, &ad, 1));
  }
  int fd = -1;
  CU(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemGenericAllocationHandle h2;
  CU(cuMemImportFromShareableHandle(&h2, (void*)(uintptr_t)fd,
                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  CUdeviceptr imp;
  CU(cuMemAddressReserve(&imp, sz, 0, 0, 0));
  CU(cuMemMap(imp, sz, 0, h2, 0));
  {
    CUmemAccessDesc ad{};
    ad.location = prop.location;
    ad.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU(cuMemSetAccess(imp, sz, &ad, 1));
  }
  CUdeviceptr flag;
  CU(cuMemAlloc(&flag, 8));
  struct Dst {
    const char* name;
    void* p;
  } dsts[] = {{"cudaMalloc", dst}, {"vmm", (void*)va[1]}, {"vmm_imported", (void*)imp}};
  const int N = 2000;
  auto bench = [&](const char* what, auto fn) {
    for (int i = 0; i < 50; ++i) fn(i);
    CK(cudaStreamSynchronize(s));
    double t = 0;
    for (int i = 0; i < N; ++i) {
      double t0 = now();
      fn(i);
      t += now() - t0;
      if (i % 64 == 63) CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamSynchronize(s));
    printf("%-44s %7.2f us/issue\n", what, t / N);
  };
  char name[128];
  for (auto& d : dsts) {
    snprintf(name, sizeof name, "cudaMemcpyAsync Default -> %s", d.name);
    bench(name, [&](int) { CK(cudaMemcpyAsync(d.p, src, bytes, cudaMemcpyDefault, s)); });
    snprintf(name, sizeof name, "cudaMemcpyAsync DtoD -> %s", d.name);
    bench(name, [&](int) { CK(cudaMemcpyAsync(d.p, src, bytes, cudaMemcpyDeviceToDevice, s)); });
    snprintf(name, sizeof name, "cuMemcpyDtoDAsync -> %s", d.name);
    bench(name, [&](int) { CU(cuMemcpyDtoDAsync((CUdeviceptr)d.p, (CUdeviceptr)src, bytes, s)); });
    snprintf(name, sizeof name, "cuMemcpyAsync -> %s", d.name);
    bench(name, [&](int) { CU(cuMemcpyAsync((CUdeviceptr)d.p, (CUdeviceptr)src, bytes, s)); });
    snprintf(name, sizeof name, "cudaMemcpyBatchAsync(1) -> %s", d.name);
    bench(name, [&](int) {
      cudaMemcpyAttributes a{};
      a.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
      a.srcLocHint.type = cudaMemLocationTypeDevice;
      a.srcLocHint.id = 0;
      a.dstLocHint.type = cudaMemLocationTypeDevice;
      a.dstLocHint.id = 0;
      void* ds[1] = {d.p};
      const void* ss[1] = {src};
      size_t szs[1] = {bytes};
      size_t idx = 0;
      CK(cudaMemcpyBatchAsync(ds, ss, szs, 1, &a, &idx, 1, s));
    });
  }
  bench("cuStreamWriteValue64", [&](int i) { CU(cuStreamWriteValue64(s, flag, i, 0)); });
  bench("nop kernel launch", [&](int) { nop<<<1, 1, 0, s>>>(); });
  return 0;
}
