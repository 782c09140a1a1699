// SPDX-License-Identifier: Apache-2.0
// PreMulSum's multiply. gicl's kernels know the built-in reductions only, so a PreMulSum call
// first multiplies its input by the scalar with a kernel of the shim's own, on the call's stream,
// into a buffer that gicl's sum then reads: one more pass over the input than NCCL's fused
// kernels make, the same result (a product of two values of the type rounds once, either way).
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <vector>

#include "shim/nccl/custom_ops.hpp"

namespace gicl::nccl {

/// out[i] = in[i] * scalar for `count` elements of `op.type`, in the type's own arithmetic (as
/// NCCL's PreMulSum multiplies: integers wrap, floating types round once), on `stream`.
cudaError_t premul(const PreMulSum& op, const void* in, void* out, size_t count,
                   cudaStream_t stream);

/// The device buffers a communicator's PreMulSum calls write their products into: one per stream
/// outside a group (calls on one stream are ordered), one per call inside a group (its
/// collectives all run at the group's end, after every product is written). None is freed before
/// the communicator: a captured graph may still read one.
class PremulScratch {
 public:
  explicit PremulScratch(int device) : device_(device) {}
  ~PremulScratch();
  PremulScratch(const PremulScratch&) = delete;
  PremulScratch& operator=(const PremulScratch&) = delete;

  /// A buffer of at least `bytes` for a call on `stream`.
  cudaError_t get(cudaStream_t stream, size_t bytes, bool in_group, void** out);
  /// The outermost group ended: its buffers may be taken again.
  void group_ended() { used_in_group_.clear(); }

 private:
  struct Buf {
    void* p = nullptr;
    size_t bytes = 0;
  };
  int device_;
  std::map<cudaStream_t, std::vector<Buf>> bufs_;
  std::map<cudaStream_t, size_t> used_in_group_;
  std::vector<void*> outgrown_;
};

}  // namespace gicl::nccl
