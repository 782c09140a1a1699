// Host time of a kernel launch into a busy GPU against an idle one (probe, not part of ccl).
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
__global__ void empty() {}
__global__ void spin(long long ns) { long long t0 = clock64(); while (clock64() - t0 < ns) {} }
using C = std::chrono::steady_clock;
static double us(C::time_point a, C::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }
static void busy_wait_us(double d) { auto t0 = C::now(); while (us(t0, C::now()) < d) {} }
int main() {
  cudaSetDevice(0);
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  empty<<<1, 1, 0, s>>>(); cudaStreamSynchronize(s);
  auto run = [&](const char* name, double gap_us, bool busy_before, int reps) {
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      if (busy_before) spin<<<1, 1, 0, s>>>(2000000);  // ~1 ms of GPU work ahead of the launch
      else cudaStreamSynchronize(s);
      busy_wait_us(gap_us);
      auto a = C::now();
      empty<<<1, 1, 0, s>>>();
      auto b = C::now();
      t.push_back(us(a, b));
    }
    cudaStreamSynchronize(s);
    std::sort(t.begin(), t.end());
    printf("%-44s median %6.2f us  p10 %6.2f  p90 %6.2f\n", name, t[t.size() / 2], t[t.size() / 10], t[t.size() * 9 / 10]);
  };
  run("launch, stream busy (behind 1 ms of work)", 0, true, 200);
  run("launch, stream idle, 0 us after sync", 0, false, 200);
  run("launch, stream idle, 5 us after sync", 5, false, 200);
  run("launch, stream idle, 20 us after sync", 20, false, 200);
  run("launch, stream idle, 100 us after sync", 100, false, 200);
  // Back to back, no sync: the GPU is busy with the previous empty kernels part of the time.
  std::vector<double> t;
  for (int i = 0; i < 200; ++i) { auto a = C::now(); empty<<<1, 1, 0, s>>>(); t.push_back(us(a, C::now())); }
  cudaStreamSynchronize(s);
  std::sort(t.begin(), t.end());
  printf("%-44s median %6.2f us  p10 %6.2f  p90 %6.2f\n", "launch, back to back", t[100], t[20], t[180]);
  // Back to back with a 15 us host gap (the copy-engine call's host work between launches).
  t.clear();
  for (int i = 0; i < 200; ++i) { busy_wait_us(15); auto a = C::now(); empty<<<1, 1, 0, s>>>(); t.push_back(us(a, C::now())); }
  cudaStreamSynchronize(s);
  std::sort(t.begin(), t.end());
  printf("%-44s median %6.2f us  p10 %6.2f  p90 %6.2f\n", "launch, 15 us host gap, no sync", t[100], t[20], t[180]);
  return 0;
}
