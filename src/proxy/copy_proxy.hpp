// SPDX-License-Identifier: Apache-2.0
// The copy-engine proxy of a communicator: a host thread that issues the copies kernels post
// into its queue (copy_queue.h) with cudaMemcpyAsync on a stream of its own, each followed by a
// stream memory write of the request's number into device memory, which the kernel awaits.
// Kernels learn a peer's destination only at run time (a receiver's rendezvous offer), after
// the host has enqueued them, and cannot start a copy engine themselves: this thread does it
// for them, in graph replays too. NCCL's P2P transport has the same design behind
// NCCL_P2P_USE_CUDA_MEMCPY.
//
// The thread polls the ring busily for a while after each request and after each kick (a host
// enqueue that will post), then every kIdlePoll: a graph replayed after a long pause waits up to
// that long for its first copy to be issued.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include <cuda_runtime_api.h>

#include "common/cuda.hpp"
#include "common/status.hpp"
#include "proxy/copy_take.hpp"

namespace gicl {

class CopyProxy {
 public:
  static constexpr uint32_t kSlots = 64;
  static constexpr auto kBusyFor = std::chrono::milliseconds(5);
  static constexpr auto kIdlePoll = std::chrono::microseconds(50);

  /// Starts a proxy for kernels on `device` (the calling thread's current device is kept); `mps`:
  /// this process is an MPS client there. GICL_UNSUPPORTED where the driver has no stream memory
  /// operations, or this process has one hardware work queue (its copies would queue behind the
  /// kernel waiting for them: every such send timed out, one H100).
  static Status start(int device, bool mps, std::unique_ptr<CopyProxy>* out);
  /// Stops the thread and waits for the copies it issued.
  ~CopyProxy();
  CopyProxy(const CopyProxy&) = delete;
  CopyProxy& operator=(const CopyProxy&) = delete;

  const CopyQueue& queue() const { return queue_; }
  /// A launch that will post copies was enqueued: poll busily from now on for kBusyFor.
  void kick();
  /// Stops issuing copies and fails the kernels waiting for them, as a refused copy does
  /// (tests inject the failure with it).
  void fail(const char* why);
  /// Copies issued so far (tests and logs).
  uint64_t issued() const { return issued_.load(std::memory_order_relaxed); }

 private:
  CopyProxy(int device, const DriverApi* api) : device_(device), api_(api) {}
  Status init();
  void run();
  /// Issues request `seq`; false (logged, `failed` set for the kernels) when CUDA refused it.
  bool issue(const CopyRequest& r, uint64_t seq);
  void stop();
  /// Polls busily for kBusyFor from now.
  void stay_busy();
  /// Logs `what` and tells the kernels (the queue's failed word): they stop waiting and report.
  void mark_failed(const char* what);

  int device_;
  const DriverApi* api_;
  CopyQueue queue_{};
  void* host_ = nullptr;        // pinned: the ring, then the failed word
  uint32_t* failed_ = nullptr;  // the failed word, host view (queue_.failed is the device's)
  uint64_t* counts_ = nullptr;  // device: posted, done
  cudaStream_t stream_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> issued_{0};
  std::atomic<int64_t> busy_until_ns_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace gicl
