// The one-process hang without ccl: N threads of one process on GPU 0 each run, per round, a
// fresh stream, a 64 MiB pageable copy and a chain of kernels whose blocks meet the other threads'
// blocks at a counter (as collective kernels meet their peers), without a sync between them.
// A kernel that does not meet its peers within 2 s records a timeout. Rounds alternate 4 and 2
// threads, as the reproducer does. Prints, per round, the kernels that timed out.
#include <atomic>
#include <mutex>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
__device__ unsigned long long now() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
// Every block adds one to the counter and waits until all blocks of all ranks' k-th kernel did.
__global__ void meet(unsigned long long* counter, unsigned long long target, int* timeouts) {
  __shared__ int late;
  if (threadIdx.x == 0) {
    atomicAdd(counter, 1ull);
    const unsigned long long t0 = now();
    late = 0;
    while (atomicAdd(counter, 0ull) < target)
      if (now() - t0 > 2000000000ull) { late = 1; break; }
    if (late) atomicAdd(timeouts, 1);
  }
  __syncthreads();
}
struct Sync {  // a reusable host barrier, as the bootstrap's
  std::atomic<int> n{0}, gen{0};
  void wait(int total) { int g = gen.load(); if (n.fetch_add(1) + 1 == total) { n = 0; gen++; } else while (gen.load() == g) std::this_thread::yield(); }
};
int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 12, blocks = argc > 2 ? atoi(argv[2]) : 8;
  const int calls = 66;  // an alltoall, an allgather, 64 allreduces
  const bool warm = getenv("WARM") != nullptr, pinned = getenv("PINNED") != nullptr,
             vmm = getenv("VMM") != nullptr, nocopy = getenv("NOCOPY") != nullptr,
             nod2h = getenv("NOD2H") != nullptr, stagger_create = getenv("STAGGER_CREATE") != nullptr,
             stagger_launch = getenv("STAGGER_LAUNCH") != nullptr, prime = getenv("PRIME") != nullptr;
  std::mutex create_lock;
  CK(cudaSetDevice(0));
  unsigned long long* counter; int* timeouts;
  CK(cudaMalloc(&counter, sizeof(*counter))); CK(cudaMalloc(&timeouts, sizeof(int)));
  unsigned long long* spare; CK(cudaMalloc(&spare, sizeof(*spare)));  // kernels outside the rounds count here
  const size_t bytes = size_t{64} << 20;
  int failed_rounds = 0;
  if (warm) {  // every first use before the rounds: the kernel, a pageable copy each way
    std::vector<char> h(bytes);
    void* d; CK(cudaMalloc(&d, bytes));
    meet<<<1, 64>>>(spare, 0, timeouts);
    CK(cudaMemcpy(d, h.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(h.data(), d, 64, cudaMemcpyDeviceToHost));
    CK(cudaDeviceSynchronize()); CK(cudaFree(d));
  }
  for (int round = 0; round < rounds; ++round) {
    const int n = round % 2 == 0 ? 4 : 2;
    CK(cudaMemset(counter, 0, sizeof(*counter))); CK(cudaMemset(timeouts, 0, sizeof(int))); CK(cudaDeviceSynchronize());
    Sync sync;
    std::vector<std::thread> t;
    std::vector<double> secs(n);
    for (int r = 0; r < n; ++r)
      t.emplace_back([&, r] {
        CK(cudaSetDevice(0));
        cudaStream_t s;
        if (stagger_create) {  // one thread at a time, a millisecond apart
          std::lock_guard<std::mutex> g(create_lock);
          CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        } else {
          CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        }
        if (prime) { meet<<<1, 64, 0, s>>>(spare, 0, timeouts); CK(cudaStreamSynchronize(s)); }
        void* dev = nullptr;
        CUmemGenericAllocationHandle mh{}; CUdeviceptr va = 0;
        if (vmm) {  // as the symmetric heap grows: create, reserve, map, set access
          CUmemAllocationProp prop{}; prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
          prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE; prop.location.id = 0;
          prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
          if (cuMemCreate(&mh, bytes, &prop, 0) || cuMemAddressReserve(&va, bytes, 0, 0, 0) ||
              cuMemMap(va, bytes, 0, mh, 0)) { printf("vmm failed\n"); exit(1); }
          CUmemAccessDesc acc{}; acc.location = prop.location; acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
          if (cuMemSetAccess(va, bytes, &acc, 1)) { printf("access failed\n"); exit(1); }
          dev = reinterpret_cast<void*>(va);
        } else {
          CK(cudaMalloc(&dev, bytes));
        }
        std::vector<char> host(bytes, static_cast<char>(r)), back(64);
        char* hp = host.data(); char* bp = back.data();
        if (pinned) { CK(cudaMallocHost(&hp, bytes)); CK(cudaMallocHost(&bp, 64)); }
        sync.wait(n);
        if (stagger_launch) std::this_thread::sleep_for(std::chrono::milliseconds(3 * r));
        const auto t0 = std::chrono::steady_clock::now();
        if (!nocopy) CK(cudaMemcpyAsync(dev, hp, bytes, cudaMemcpyHostToDevice, s));
        for (int k = 1; k <= calls; ++k) {
          meet<<<blocks, 64, 0, s>>>(counter, static_cast<unsigned long long>(k) * n * blocks, timeouts);
          CK(cudaGetLastError());
          if (k == 2 && !nod2h) CK(cudaMemcpyAsync(bp, dev, 64, cudaMemcpyDeviceToHost, s));
        }
        CK(cudaStreamSynchronize(s));
        secs[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (vmm) {
          if (cuMemUnmap(va, bytes) || cuMemAddressFree(va, bytes) || cuMemRelease(mh)) { printf("vmm free failed\n"); exit(1); }
        } else {
          CK(cudaFree(dev));
        }
        if (pinned) { CK(cudaFreeHost(hp)); CK(cudaFreeHost(bp)); }
        CK(cudaStreamDestroy(s));
      });
    for (auto& th : t) th.join();
    int h = 0; CK(cudaMemcpy(&h, timeouts, sizeof(int), cudaMemcpyDeviceToHost));
    double most = 0; for (double x : secs) most = x > most ? x : most;
    printf("round %2d: %d threads, %d block waits timed out, slowest thread %.3f s\n", round, n, h, most);
    failed_rounds += h != 0;
  }
  printf("failed rounds: %d of %d\n", failed_rounds, rounds);
  return failed_rounds != 0;
}
