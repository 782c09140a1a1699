// SPDX-License-Identifier: Apache-2.0
// The copy agent of the staged network path: a one-block kernel that stays resident while the
// path is busy and runs the copier's small copies, signals and atomics from tasks the proxy
// thread writes into pinned host memory, so that none of them waits for a kernel launch or a
// copy-engine copy and its event.
//
// Tasks form a ring of kTasks 64-byte entries. The proxy writes a task's words, then its `seq`
// (its index + 1, release). Thread 0 of the agent polls the next entry's seq (acquire, one PCIe
// read per poll); once it matches, eight threads read the entry's words at once (one more
// round trip), the block runs the task, makes its stores visible system-wide and publishes
// `done` (tasks finished) twice: in device memory, where a stream can wait for it
// (cuStreamWaitValue64), and in host memory, where the proxy reads it. An entry is written again
// only once `done` has passed it. A staged put's payload and its signal travel as one task
// (kCopyUpdate): one poll and one read of the entry for both.
//
// The agent leaves after `linger` without a task (an idle communicator holds no SM, and a
// cudaDeviceSynchronize returns), recording its generation in `stopped`; the next task launches
// a new one on a stream of the highest priority. A task posted while the agent is leaving is
// seen by the next keep_running() (the proxy calls it while tasks are outstanding), which
// launches a new generation starting at `done`. Every wait of the kernel is bounded by `linger`
// or by stop(). Each generation records itself in `started` when its block begins and counts its
// polls in `beat`, so that a report can tell an agent that never got the GPU from one that
// polls without seeing its task.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/status.hpp"
#include "proxy/copier.hpp"

namespace gicl::proxy {

/// One task: a copy (a, b, c), an update (d, e, f), or a copy then an update.
struct AgentTask {
  uint64_t seq;   // index + 1, stored last
  uint64_t kind;  // kind | ProxyAtomic << 8 | width << 16
  uint64_t a;     // copies: dst; kUpdate, kUpdateMany: where old values go (host memory), or 0
  uint64_t b;     // copies: src
  uint64_t c;     // copies: bytes
  uint64_t d;     // updates: the word; kUpdateMany: the heap's base
  uint64_t e;     // updates: value; kUpdateMany: the WordUpdate list (host memory)
  uint64_t f;     // kUpdate: compare; kUpdateMany: the list's length

  static constexpr uint32_t kCopy = 1, kUpdate = 2, kCopyUpdate = 3, kUpdateMany = 4;
};
static_assert(sizeof(AgentTask) == 64, "a task is one 64-byte entry of eight words");

/// What the agent and the proxy share in pinned host memory.
struct AgentShared {
  uint64_t done;     // tasks finished, written by the agent
  uint64_t stopped;  // the generation that last left, written by the agent
  uint64_t started;  // the generation that last began running on the GPU, written by the agent
  uint64_t beat;  // counts the agent's waits for a task in 64-poll rounds: it moves while one polls
  uint32_t quit;  // set by stop(): leave now
  uint32_t reserved;
};

class CopyAgent {
 public:
  static constexpr uint32_t kTasks = 256;
  static constexpr uint32_t kThreads = 256;
  /// Copies up to this many bytes run in the agent; larger ones on the copy engines.
  static constexpr size_t kCopyMax = 16 << 10;

  /// An agent on `device` (the current device is kept); `*out` stays null for a `linger` of 0 and
  /// where the driver lacks 64-bit stream memory operations.
  static Status create(int device, std::chrono::microseconds linger,
                       std::unique_ptr<CopyAgent>* out);
  ~CopyAgent();
  CopyAgent(const CopyAgent&) = delete;
  CopyAgent& operator=(const CopyAgent&) = delete;

  /// Entries the proxy may write now.
  uint64_t free_entries() const { return kTasks - (posted_ - done()); }
  /// Queues a task (the caller checked free_entries()) and makes sure an agent runs.
  Status post(const AgentTask& t);

  uint64_t posted() const { return posted_; }
  uint64_t done() const;
  /// Agents launched so far (one per busy period).
  uint64_t launched() const { return launched_; }
  /// The generation (1 = the first launched) that last left; launched() while none runs.
  uint64_t stopped() const;
  /// The generation that last began running on the GPU: below launched() while the latest one
  /// waits for an SM or for its context's time slice.
  uint64_t started() const;
  /// The running agent's heartbeat (AgentShared::beat).
  uint64_t beat() const;
  /// When the latest generation was launched.
  std::chrono::steady_clock::time_point launched_at() const { return launched_at_; }
  /// The device word that reaches posted() once every task posted so far has finished.
  CUdeviceptr done_word() const { return reinterpret_cast<CUdeviceptr>(dev_done_); }
  /// Launches an agent where tasks wait and the last one left.
  Status keep_running();
  /// Makes the agent leave and releases any stream waiting on done_word(); tasks not yet run
  /// are dropped. Teardown only. An agent that has not left within kStopWait (one that never got
  /// an SM, or whose context waits for its time slice) is left behind with its memory, warned of.
  void stop();
  static constexpr std::chrono::milliseconds kStopWait{2000};

 private:
  CopyAgent(int device, std::chrono::microseconds linger) : device_(device), linger_(linger) {}

  int device_;
  std::chrono::microseconds linger_;
  cudaStream_t stream_ = nullptr;
  AgentTask* tasks_ = nullptr;     // pinned host memory, kTasks
  AgentShared* shared_ = nullptr;  // pinned host memory
  unsigned long long* dev_done_ = nullptr;
  uint64_t posted_ = 0;
  uint64_t launched_ = 0;  // generations launched
  std::chrono::steady_clock::time_point launched_at_{};
  bool quit_ = false;
  bool abandoned_ = false;  // its memory stays: the kernel may still read and write it
};

}  // namespace gicl::proxy
