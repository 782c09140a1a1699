#include "collectives/host/coll_state.hpp"

#include <memory>

#include "common/cuda.hpp"
#include "common/settings.hpp"
#include "core/comm.hpp"

namespace ccl::coll {

CollState::~CollState() {
  // The staging lives in the heap and goes with it; the epoch counter is ours.
  if (local) cudaFree(local);
  cudaGetLastError();
}

Status coll_state(ccl_comm* c, cudaStream_t stream, CollState** out) {
  if (c->coll_state) {
    *out = static_cast<CollState*>(c->coll_state.get());
    return CCL_SUCCESS;
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CCL_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone)
    return CCL_FAIL(CCL_INVALID_USAGE,
                    "the first collective on a communicator allocates its scratch and cannot be "
                    "captured in a CUDA graph: run one collective before capturing");
  ccl_device_comm_t dc;
  CCL_CHECK(device_comm_handle(c, &dc));
  int64_t stage = 0;
  CCL_CHECK(setting_int(Setting::kCollScratchSize, &stage));
  stage = (stage + 511) & ~int64_t{511};
  const size_t flags = static_cast<size_t>(kMaxBlocks) * c->nranks * sizeof(uint64_t);
  auto st = std::make_shared<CollState>();
  CCL_CHECK(c->heap->alloc(2 * static_cast<uint64_t>(stage) + 2 * flags, &st->heap_block));
  device_resources_note_heap(c);
  char* base = static_cast<char*>(st->heap_block);
  CollScratch& s = st->scratch;
  s.stage[0] = base;
  s.stage[1] = base + stage;
  s.stage_bytes = static_cast<size_t>(stage);
  s.ready = reinterpret_cast<uint64_t*>(base + 2 * stage);
  s.done = reinterpret_cast<uint64_t*>(base + 2 * stage + flags);
  CCL_CUDA_CHECK(cudaMemset(s.ready, 0, 2 * flags));
  CCL_CUDA_CHECK(cudaMalloc(&st->local, 16));
  CCL_CUDA_CHECK(cudaMemset(st->local, 0, 16));
  CCL_CUDA_CHECK(cudaDeviceSynchronize());
  s.epoch = static_cast<uint64_t*>(st->local);
  s.finished = reinterpret_cast<uint32_t*>(static_cast<char*>(st->local) + 8);
  // No rank may signal into a peer's flags before that peer has zeroed them.
  CCL_CHECK(c->bootstrap->barrier());
  c->coll_state = st;
  *out = st.get();
  return CCL_SUCCESS;
}

}  // namespace ccl::coll
