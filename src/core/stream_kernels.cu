// SPDX-License-Identifier: Apache-2.0
// The kernels behind gicl_signal_on_stream, gicl_wait_signal_on_stream, gicl_barrier_on_stream and
// gicl_quiet_on_stream: one thread each, built from the public device API. Launched like the
// collectives (common/kernel_launch.cuh): with PDL they are scheduled while the kernel before
// them drains, and their prologue waits for it, so a signal still follows the writes before it.
#include "common/kernel_families.hpp"
#include "common/kernel_launch.cuh"
#include "core/stream_kernels.cuh"
#include "gicl/device.cuh"

namespace gicl {
namespace {

__global__ void signal_kernel(uint64_t* remote_sig, uint64_t value, int op) {
  pdl_prologue();
  dev::detail::signal_remote(remote_sig, value, static_cast<dev::SignalOp>(op));
}

__global__ void wait_signal_kernel(gicl_device_comm_t c, const uint64_t* sig, int cmp,
                                   uint64_t value) {
  pdl_prologue();
  dev::signal_wait_until(c, sig, static_cast<dev::Cmp>(cmp), value);
}

__global__ void barrier_kernel(gicl_device_comm_t c) {
  pdl_prologue();
  dev::barrier(c);
}

__global__ void quiet_kernel() {
  pdl_prologue();
  dev::detail::fence_system();
}

const KernelFamily kStreamKernels("stream operation", [] {
  return load_kernels(signal_kernel, wait_signal_kernel, barrier_kernel, quiet_kernel);
});

}  // namespace

cudaError_t launch_signal(uint64_t* remote_sig, uint64_t value, int op, const Launch& l) {
  return launch_kernel(signal_kernel, 1, 1, l, remote_sig, value, op);
}
cudaError_t launch_wait_signal(gicl_device_comm_t c, const uint64_t* sig, int cmp, uint64_t value,
                               const Launch& l) {
  return launch_kernel(wait_signal_kernel, 1, 1, l, c, sig, cmp, value);
}
cudaError_t launch_barrier(gicl_device_comm_t c, const Launch& l) {
  return launch_kernel(barrier_kernel, 1, 1, l, c);
}
cudaError_t launch_quiet(const Launch& l) {
  return launch_kernel(quiet_kernel, 1, 1, l);
}

}  // namespace gicl
