// Probe (not a test): free device memory over the first send/recv, public API, under ccl-run.
#include <ccl/ccl.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#define CK(x) do { if ((x) != 0) { std::fprintf(stderr, "%s failed\n", #x); std::exit(1); } } while (0)
static size_t freemem(ccl_comm_t c, cudaStream_t s) {
  CK(ccl_barrier(c, s)); CK(cudaStreamSynchronize(s));
  size_t f = 0, t = 0; CK(cudaMemGetInfo(&f, &t));
  CK(ccl_barrier(c, s)); CK(cudaStreamSynchronize(s));
  return f;
}
int main() {
  ccl_comm_t c; CK(ccl_comm_init_env(&c));
  int r, n; CK(ccl_comm_rank(c, &r)); CK(ccl_comm_size(c, &n));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t B = 1 << 20; char *sym, *plain;
  CK(ccl_mem_alloc(c, 2 * B, (void**)&sym)); CK(cudaMalloc(&plain, 2 * B));
  CK(cudaMemset(sym, 0, 2 * B)); CK(cudaMemset(plain, 0, 2 * B)); CK(cudaDeviceSynchronize());
  CK(ccl_allreduce(sym, sym, B / 4, ccl_float32, ccl_sum, c, s));
  CK(ccl_allreduce(sym, sym, 256, ccl_float32, ccl_sum, c, s));
  size_t f0 = freemem(c, s);
  for (size_t b : {size_t{8}, B}) for (char* p : {sym, plain}) {
    CK(ccl_group_start());
    CK(ccl_send(p, b, ccl_uint8, (r + 1) % n, c, s));
    CK(ccl_recv(p + B, b, ccl_uint8, (r + n - 1) % n, c, s));
    CK(ccl_group_end());
  }
  size_t f1 = freemem(c, s);
  size_t st = 0; CK(cudaDeviceGetLimit(&st, cudaLimitStackSize));
  std::printf("rank %d: free %zu -> %zu MiB (%lld MiB over the first send/recv), stack limit %zu\n",
              r, f0 >> 20, f1 >> 20, ((long long)f0 - (long long)f1) >> 20, st);
  CK(ccl_mem_free(c, sym)); CK(cudaFree(plain)); CK(ccl_comm_destroy(c));
  return 0;
}
