// SPDX-License-Identifier: Apache-2.0
// The copy agent of the staged network path: a one-block kernel that stays resident while the
// path is busy and runs the copier's small copies, signals and atomics from tasks the proxy
// thread writes into pinned host memory, so that none of them waits for a kernel launch or a
// copy-engine copy and its event.
//
// Tasks form a ring of kTasks entries (AgentEntry) of 8-byte lines. Each line holds 32 bits of the
// task and, above them, the 32-bit sequence of its task (index + 1), stored as one 64-bit word; 8
// aligned bytes are read whole (as NCCL's LL lines over host memory rely on), so no line can mix
// two tasks and their order does not matter. Warp 0 of the agent reads the whole next entry in one
// poll (one PCIe round trip) until every line carries the awaited sequence: the task arrives with
// the poll that finds it. Lines are stored with release and read with acquire: a payload the proxy
// wrote before posting is visible to the copy. The block runs the task, makes its stores visible
// system-wide and publishes `done` (tasks finished) twice: in device memory, where a stream can
// wait for it (cuStreamWaitValue64), and in host memory, where the proxy reads it. An entry is
// written again only once `done` has passed it. A staged put's payload and its signal travel as one
// task (kCopyUpdate), and a copy to the device of at most kInlineMax bytes carries its bytes in the
// task (kInline) instead of their address: no read of the staging buffer.
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
  uint64_t kind;  // kind | ProxyAtomic << 8 | width << 16 | kInline
  uint64_t a;     // copies: dst; kUpdate, kUpdateMany: where old values go (host memory), or 0
  uint64_t b;     // copies: src; with kInline the bytes themselves
  uint64_t c;     // copies: bytes
  uint64_t d;     // updates: the word; kUpdateMany: the heap's base
  uint64_t e;     // updates: value; kUpdateMany: the WordUpdate list (host memory)
  uint64_t f;     // kUpdate: compare; kUpdateMany: the list's length

  static constexpr uint32_t kCopy = 1, kUpdate = 2, kCopyUpdate = 3, kUpdateMany = 4;
  /// A copy's bytes are in `b`, not at it (at most kInlineMax of them).
  static constexpr uint32_t kInline = 1u << 24;
  static constexpr size_t kInlineMax = sizeof(uint64_t);
};

/// A task as the agent reads it: 32 bits of the task in each line's low half (kind, then a to f
/// low half first), the task's sequence in its high half.
struct AgentEntry {
  static constexpr uint32_t kUsed = 13;  // 32-bit pieces of an AgentTask: kind's low half, a to f
  uint64_t line[16];                     // padded to 128 bytes: one aligned read
};
static_assert(sizeof(AgentEntry) == 128 && AgentEntry::kUsed <= 16,
              "an entry is read whole by the agent's first warp");
static_assert(sizeof(AgentTask) == 7 * sizeof(uint64_t), "an AgentTask is kind and a to f");

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
  AgentEntry* tasks_ = nullptr;    // pinned host memory, kTasks
  AgentShared* shared_ = nullptr;  // pinned host memory
  unsigned long long* dev_done_ = nullptr;
  uint64_t posted_ = 0;
  uint64_t launched_ = 0;  // generations launched
  std::chrono::steady_clock::time_point launched_at_{};
  bool quit_ = false;
  bool abandoned_ = false;  // its memory stays: the kernel may still read and write it
};

}  // namespace gicl::proxy
