// Does loading kernels (lazy module loading: a cudaFuncGetAttributes loads one) go faster from
// several threads? 256 kernels of a few hundred instructions each, loaded in one thread or split
// over T threads, in a fresh process each time.
//   nvcc -O3 -arch=sm_90 -std=c++20 load_probe.cu -o load_probe && ./load_probe T
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

template <int I>
__global__ void kern(float* p, int n) {
  float a = p[threadIdx.x];
#pragma unroll 16
  for (int i = 0; i < 64; ++i) a = a * (1.0f + I * 1e-3f) + p[(threadIdx.x + i * I) % n];
  p[threadIdx.x] = a;
}

using Fn = void (*)(float*, int);
template <int... I>
std::vector<Fn> table(std::integer_sequence<int, I...>) {
  return {kern<I>...};
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const auto c0 = std::chrono::steady_clock::now();
  if (cudaFree(nullptr) != cudaSuccess) return 1;  // the context (with EAGER: every kernel)
  const double ctx_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
  const std::vector<Fn> fns = table(std::make_integer_sequence<int, 256>{});
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      cudaSetDevice(0);
      for (size_t i = t; i < fns.size(); i += threads) {
        cudaFuncAttributes a;
        if (cudaFuncGetAttributes(&a, fns[i]) != cudaSuccess) std::exit(2);
      }
    });
  for (auto& th : pool) th.join();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("threads %d: context %.1f ms, then %zu kernels loaded in %.1f ms\n", threads, ctx_ms,
              fns.size(), ms);
  return 0;
}
