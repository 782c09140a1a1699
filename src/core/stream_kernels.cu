// The kernels behind ccl_signal_on_stream, ccl_wait_signal_on_stream, ccl_barrier_on_stream and
// ccl_quiet_on_stream: one thread each, built from the public device API.
#include "ccl/device.cuh"
#include "core/stream_kernels.cuh"

namespace ccl {
namespace {

__global__ void signal_kernel(uint64_t* remote_sig, uint64_t value, int op) {
  dev::detail::signal_remote(remote_sig, value, static_cast<dev::SignalOp>(op));
}

__global__ void wait_signal_kernel(ccl_device_comm_t c, const uint64_t* sig, int cmp,
                                   uint64_t value) {
  dev::signal_wait_until(c, sig, static_cast<dev::Cmp>(cmp), value);
}

__global__ void barrier_kernel(ccl_device_comm_t c) {
  dev::barrier(c);
}

__global__ void quiet_kernel() {
  dev::detail::fence_system();
}

}  // namespace

cudaError_t launch_signal(uint64_t* remote_sig, uint64_t value, int op, cudaStream_t s) {
  signal_kernel<<<1, 1, 0, s>>>(remote_sig, value, op);
  return cudaGetLastError();
}
cudaError_t launch_wait_signal(ccl_device_comm_t c, const uint64_t* sig, int cmp, uint64_t value,
                               cudaStream_t s) {
  wait_signal_kernel<<<1, 1, 0, s>>>(c, sig, cmp, value);
  return cudaGetLastError();
}
cudaError_t launch_barrier(ccl_device_comm_t c, cudaStream_t s) {
  barrier_kernel<<<1, 1, 0, s>>>(c);
  return cudaGetLastError();
}
cudaError_t launch_quiet(cudaStream_t s) {
  quiet_kernel<<<1, 1, 0, s>>>();
  return cudaGetLastError();
}

}  // namespace ccl
