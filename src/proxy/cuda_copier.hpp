// SPDX-License-Identifier: Apache-2.0
// The staged network path's copier on a GPU: copies, signals and atomics in issue order, on two
// lanes. The copy agent (proxy/copy_agent.hpp), where it runs, takes every signal and atomic and
// every copy of up to CopyAgent::kCopyMax bytes while the stream has nothing outstanding; a copy
// and the update right after it (a staged put and its signal) go as one task. The stream
// (non-blocking, the copier's own) takes the rest: larger copies on the copy engines, and updates
// as one-thread kernels while the stream still works (there they keep their order with no wait
// on the host). Updates are device atomics, so they compose with the GPU's own atomics on the
// word; a fetching one stores its old value into pinned host memory through its unified address.
//
// Order across the lanes: the agent takes work only when the stream has none outstanding, and
// stream work issued while agent tasks are outstanding first waits on the stream for the agent's
// count (cuStreamWaitValue64). A marker belongs to the lane of the operation before it (an
// event, or the agent's count), so markers complete in issue order. The stream's markers share
// kEvents events made with the copier: while all are in use, markers wait for one (and then share
// it, which completes them no earlier than their own would). No call of the copier creates a CUDA
// object after create(). Used by the proxy thread only.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/copier.hpp"
#include "proxy/copy_agent.hpp"

namespace gicl::proxy {

class CudaCopier : public Copier {
 public:
  /// A copier for heap memory on `device`; the calling thread's current device is kept. `linger`:
  /// how long an idle copy agent stays resident (0: no agent, every operation on the stream).
  static Status create(int device, std::chrono::microseconds linger,
                       std::unique_ptr<CudaCopier>* out);
  ~CudaCopier() override;
  CudaCopier(const CudaCopier&) = delete;
  CudaCopier& operator=(const CudaCopier&) = delete;

  Status to_host(void* dst, const void* src, size_t bytes) override;
  Status to_device(void* dst, const void* src, size_t bytes) override;
  Status update(void* word, ProxyAtomic op, uint32_t width, uint64_t value) override;
  Status fetch_update(void* word, ProxyAtomic op, uint32_t width, uint64_t value, uint64_t compare,
                      uint64_t* old) override;
  Status update_many(char* base, const WordUpdate* u, uint32_t n, uint64_t* old) override;
  Status mark(uint64_t token) override;
  Status poll(std::vector<uint64_t>* done) override;
  /// "copy agent: T tasks posted, D done, generation G of L running (or none); stream: M
  /// markers pending".
  std::string state() const override;

  /// The copy agent, or null where there is none.
  const CopyAgent* agent() const { return agent_.get(); }

 private:
  explicit CudaCopier(int device) : device_(device) {}

  /// True when the agent takes the next operation (of `bytes` for a copy; 0 for an update).
  bool to_agent(size_t bytes) const;
  /// A copy for the agent, held so that an update right after it joins its task; `from_host`:
  /// `src` is staging memory the proxy may read now (a copy to the device).
  Status agent_copy(void* dst, const void* src, size_t bytes, bool from_host);
  Status agent_update(void* word, ProxyAtomic op, uint32_t width, uint64_t value, uint64_t compare,
                      uint64_t* old);
  /// Posts a held copy as a task of its own.
  Status flush_held();
  /// Before stream work: the stream waits for the agent's outstanding tasks.
  Status after_agent();
  /// Records one event for the stream's markers waiting for one, where an event is free.
  Status record_marks();

  /// Events for the stream's markers.
  static constexpr size_t kEvents = 64;

  struct Pending {
    cudaEvent_t event;   // null: the agent's marker
    bool last_on_event;  // the last marker sharing `event`: it frees the event
    uint64_t agent_at;   // the agent's count that completes it
    uint64_t token;
  };
  int device_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CopyAgent> agent_;
  std::optional<AgentTask> held_;  // a copy that the next update may join
  bool last_on_agent_ = false;     // the lane of the last operation: its marker's
  bool stream_unmarked_ = false;   // stream work issued after the stream's last marker
  uint64_t stream_waited_ = 0;     // the agent's count the stream has waited for
  std::deque<Pending> pending_;
  std::vector<uint64_t> unrecorded_;      // the stream's markers waiting for a free event, in order
  std::vector<cudaEvent_t> free_events_;  // all kEvents: no stream marker outstanding
};

}  // namespace gicl::proxy
