// SPDX-License-Identifier: Apache-2.0
#include <atomic>
#include <cstring>
#include <thread>

#include "common/cuda.hpp"
#include "common/kernel_families.hpp"
#include "gicl/device/primitives.cuh"
#include "proxy/copy_agent.hpp"
#include "proxy/word_update.cuh"

namespace gicl::proxy {
namespace {

using dev::detail::global_ns;
using dev::detail::load_acquire_sys;

/// `n` bytes with the whole block: 16-byte loads where both ends are 16-byte aligned, four in
/// flight per thread (host memory is a PCIe round trip away). Loads bypass L1, which a resident
/// kernel may still hold from an earlier task's read of the same slot.
__device__ void block_copy(char* dst, const char* src, size_t n) {
  constexpr uint32_t kThreads = CopyAgent::kThreads, kUnroll = 4;
  size_t head = 0;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0) {
    const size_t v = n / 16;
    const auto* s = reinterpret_cast<const int4*>(src);
    auto* d = reinterpret_cast<int4*>(dst);
    for (size_t base = 0; base < v; base += kUnroll * kThreads) {
      int4 r[kUnroll];
#pragma unroll
      for (uint32_t k = 0; k < kUnroll; ++k) {
        const size_t i = base + k * kThreads + threadIdx.x;
        if (i < v) r[k] = __ldcv(s + i);
      }
#pragma unroll
      for (uint32_t k = 0; k < kUnroll; ++k) {
        const size_t i = base + k * kThreads + threadIdx.x;
        if (i < v) d[i] = r[k];
      }
    }
    head = v * 16;
  }
  for (size_t i = head + threadIdx.x; i < n; i += kThreads)
    dst[i] = *reinterpret_cast<const volatile char*>(src + i);
}

/// Warp 0's wait for entry `next`: every lane below AgentEntry::kUsed polls its line until all of
/// them carry the task's sequence, then stores its 32 bits of the task in `w`. False once `quit`
/// is set or no task came for `linger_ns` (both looked at every 64 polls, by lane 0).
__device__ bool wait_for_task(const AgentEntry* entry, AgentShared* shared, uint32_t* w,
                              unsigned long long next, unsigned long long linger_ns,
                              unsigned long long* beats) {
  const uint32_t lane = threadIdx.x;
  const uint32_t want = static_cast<uint32_t>(next + 1);
  const uint64_t* line = entry->line + (lane < AgentEntry::kUsed ? lane : 0);
  const unsigned long long since = global_ns();
  for (uint32_t i = 1;; ++i) {
    const uint64_t v = lane < AgentEntry::kUsed ? load_acquire_sys(line) : 0;
    if (__all_sync(~0u, lane >= AgentEntry::kUsed || static_cast<uint32_t>(v >> 32) == want)) {
      if (lane < AgentEntry::kUsed) w[lane] = static_cast<uint32_t>(v);
      return true;
    }
    if (i % 64 == 0) {
      bool leave = false;
      if (lane == 0) {
        *reinterpret_cast<volatile unsigned long long*>(&shared->beat) = ++*beats;
        leave = *reinterpret_cast<const volatile uint32_t*>(&shared->quit) != 0 ||
                global_ns() - since >= linger_ns;
      }
      if (__shfl_sync(~0u, leave, 0)) return false;
    }
  }
}

/// Task word k (1 = a ... 6 = f) from the 32-bit pieces `w` of an entry.
__device__ uint64_t task_word(const uint32_t* w, uint32_t k) {
  return uint64_t{w[2 * k - 1]} | uint64_t{w[2 * k]} << 32;
}

/// The `n` updates of list `u` (host memory) applied to the heap at `base` in order, their old
/// values into `old` (host memory) where it is set; by warp 0. Each lane reads one entry of a
/// group of 32 into registers, all at once (one PCIe round trip a group, where one thread
/// reading the entries field by field took several per entry); lane 0 then applies them in
/// order, since two entries may update one word, each handed over by shuffles. No shared memory:
/// an agent block that needs more than the running kernels left on an SM may not start there.
__device__ void update_many(char* base, const WordUpdate* u, uint64_t n,
                            volatile unsigned long long* old) {
  constexpr uint32_t kWords = sizeof(WordUpdate) / 8;
  const uint32_t lane = threadIdx.x;
  if (lane == 0) __threadfence();  // after the copies of the tasks before it
  for (uint64_t first = 0; first < n; first += 32) {
    const uint64_t mine = first + lane;
    const auto* src = reinterpret_cast<const unsigned long long*>(u + (mine < n ? mine : 0));
    unsigned long long v[kWords];
#pragma unroll
    for (uint32_t f = 0; f < kWords; ++f) v[f] = mine < n ? __ldcv(src + f) : 0;
    for (uint32_t j = 0; j < 32 && first + j < n; ++j) {  // alike in every lane
      unsigned long long e[kWords];
#pragma unroll
      for (uint32_t f = 0; f < kWords; ++f) e[f] = __shfl_sync(~0u, v[f], j);
      if (lane == 0) {
        WordUpdate w;
        memcpy(&w, e, sizeof(w));
        const unsigned long long was =
            apply_width(base + w.word, static_cast<ProxyAtomic>(w.op), w.width, w.value, w.compare);
        if (old != nullptr) old[first + j] = was;
      }
    }
  }
}

/// Runs tasks from `next` on until none came for `linger_ns` or `quit` is set. A task's stores are
/// visible system-wide before its `done`; an update follows the copy of its own task and of every
/// task before it.
__global__ void __launch_bounds__(CopyAgent::kThreads)
    agent_kernel(const AgentEntry* tasks, AgentShared* shared, unsigned long long* dev_done,
                 unsigned long long next, unsigned long long linger_ns,
                 unsigned long long generation) {
  __shared__ uint32_t w[AgentEntry::kUsed];
  __shared__ bool go;
  unsigned long long beats = 0;  // lane 0's
  if (threadIdx.x == 0)
    *reinterpret_cast<volatile unsigned long long*>(&shared->started) = generation;
  for (;;) {
    if (threadIdx.x < 32) {
      const bool got =
          wait_for_task(tasks + next % CopyAgent::kTasks, shared, w, next, linger_ns, &beats);
      if (threadIdx.x == 0) go = got;
    }
    __syncthreads();  // the task's pieces in `w`, and `go`, for every thread
    if (!go) break;
    const uint32_t kind = w[0] & 0xff;
    const uint64_t a = task_word(w, 1), b = task_word(w, 2), c = task_word(w, 3);
    if (kind == AgentTask::kCopy || kind == AgentTask::kCopyUpdate) {
      if ((w[0] & AgentTask::kInline) != 0) {
        if (threadIdx.x < c)  // the bytes are b's, little-endian: w[3], then w[4]
          reinterpret_cast<char*>(a)[threadIdx.x] =
              reinterpret_cast<const char*>(&w[3])[threadIdx.x];
      } else {
        block_copy(reinterpret_cast<char*>(a), reinterpret_cast<const char*>(b), c);
      }
      __syncthreads();  // every thread's part of the copy before the update
    }
    if (kind == AgentTask::kUpdateMany) {
      if (threadIdx.x < 32)
        update_many(reinterpret_cast<char*>(task_word(w, 4)),
                    reinterpret_cast<const WordUpdate*>(task_word(w, 5)), task_word(w, 6),
                    reinterpret_cast<volatile unsigned long long*>(a));
    } else if (threadIdx.x == 0 && kind != AgentTask::kCopy) {
      __threadfence();
      const auto op = static_cast<ProxyAtomic>((w[0] >> 8) & 0xff);
      const uint32_t width = (w[0] >> 16) & 0xff;
      const unsigned long long was = apply_width(reinterpret_cast<void*>(task_word(w, 4)), op,
                                                 width, task_word(w, 5), task_word(w, 6));
      auto* old = reinterpret_cast<volatile unsigned long long*>(a);
      if (kind == AgentTask::kUpdate && old != nullptr) *old = was;
    }
    __syncthreads();  // every thread has read `w` and stored its part of the task
    ++next;
    if (threadIdx.x == 0) {
      __threadfence_system();  // every thread's stores of the task (ordered by the barrier)
      *reinterpret_cast<volatile unsigned long long*>(dev_done) = next;
      *reinterpret_cast<volatile unsigned long long*>(&shared->done) = next;
    }
  }
  if (threadIdx.x == 0) {
    __threadfence_system();
    *reinterpret_cast<volatile unsigned long long*>(&shared->stopped) = generation;
  }
}

// Loaded at communicator init: a lazy load at the first task would wait for the kernels that are
// waiting for that task's signal.
const KernelFamily kAgentKernels("network copy agent", [] { return load_kernels(agent_kernel); });

}  // namespace

Status CopyAgent::create(int device, std::chrono::microseconds linger,
                         std::unique_ptr<CopyAgent>* out) {
  out->reset();
  if (linger.count() <= 0) return GICL_SUCCESS;
  const DriverApi* api = nullptr;
  GICL_CHECK(driver_api(&api));
  int mem_ops = 0;
  if (api->cuStreamWaitValue64 != nullptr)
    GICL_CU_CHECK(api->cuDeviceGetAttribute(
        &mem_ops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, device));
  if (mem_ops == 0) {
    GICL_INFO(kSubsysNet, "network copy agent: off, the driver has no 64-bit stream wait");
    return GICL_SUCCESS;
  }
  std::unique_ptr<CopyAgent> a(new CopyAgent(device, linger));
  DeviceScope scope(device);
  int least = 0, greatest = 0;
  GICL_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  GICL_CUDA_CHECK(cudaStreamCreateWithPriority(&a->stream_, cudaStreamNonBlocking, greatest));
  GICL_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&a->tasks_), kTasks * sizeof(AgentEntry),
                                cudaHostAllocMapped));
  // Sequence 0 in every line: no task's (they start at 1).
  std::memset(a->tasks_, 0, kTasks * sizeof(AgentEntry));
  GICL_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&a->shared_), sizeof(AgentShared),
                                cudaHostAllocMapped));
  std::memset(a->shared_, 0, sizeof(AgentShared));
  GICL_CUDA_CHECK(cudaMalloc(&a->dev_done_, sizeof(*a->dev_done_)));
  GICL_CHECK(zero_device(a->dev_done_, sizeof(*a->dev_done_)));
  *out = std::move(a);
  return GICL_SUCCESS;
}

CopyAgent::~CopyAgent() {
  DeviceScope scope(device_);
  stop();
  // Teardown: nothing to report a failure to.
  if (!abandoned_) {
    if (dev_done_ != nullptr) (void)cudaFree(dev_done_);
    if (shared_ != nullptr) (void)cudaFreeHost(shared_);
    if (tasks_ != nullptr) (void)cudaFreeHost(tasks_);
  }
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

void CopyAgent::stop() {
  if (quit_ || stream_ == nullptr) return;
  quit_ = true;
  std::atomic_ref<uint32_t>(shared_->quit).store(1, std::memory_order_release);
  // A running agent leaves within 64 polls of the flag; a bounded wait, since one that holds no
  // SM, or whose context is not being scheduled, may not run for as long as that lasts.
  const auto until = std::chrono::steady_clock::now() + kStopWait;
  cudaError_t rc = cudaSuccess;
  while ((rc = cudaStreamQuery(stream_)) == cudaErrorNotReady &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  if (rc == cudaErrorNotReady) {
    abandoned_ = true;
    GICL_WARN(kSubsysNet,
              "network copy agent: generation %llu (%s) did not leave within %lld ms of its stop; "
              "its task ring stays allocated",
              static_cast<unsigned long long>(launched_),
              started() == launched_ ? "resident" : "never started",
              static_cast<long long>(kStopWait.count()));
  }
  // Every stream wait was for at most posted_: this releases them all, on a stream of its own
  // where the agent's may still hold a generation.
  const unsigned long long all = posted_;
  cudaStream_t s = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return;
  // From pageable memory: `all` is staged before the call returns. Bounded like the wait above.
  if (cudaMemcpyAsync(dev_done_, &all, sizeof(all), cudaMemcpyHostToDevice, s) == cudaSuccess) {
    const auto release_until = std::chrono::steady_clock::now() + kStopWait;
    while (cudaStreamQuery(s) == cudaErrorNotReady &&
           std::chrono::steady_clock::now() < release_until)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  (void)cudaStreamDestroy(s);
}

uint64_t CopyAgent::done() const {
  return std::atomic_ref<uint64_t>(shared_->done).load(std::memory_order_acquire);
}

uint64_t CopyAgent::stopped() const {
  return std::atomic_ref<uint64_t>(shared_->stopped).load(std::memory_order_acquire);
}

uint64_t CopyAgent::started() const {
  return std::atomic_ref<uint64_t>(shared_->started).load(std::memory_order_acquire);
}

uint64_t CopyAgent::beat() const {
  return std::atomic_ref<uint64_t>(shared_->beat).load(std::memory_order_acquire);
}

Status CopyAgent::post(const AgentTask& t) {
  if (free_entries() == 0)
    return GICL_FAIL(GICL_INTERNAL_ERROR, "network copy agent: a task posted to a full ring of %u",
                     kTasks);
  if ((t.kind & AgentTask::kInline) != 0 && t.c > AgentTask::kInlineMax)
    return GICL_FAIL(GICL_INTERNAL_ERROR,
                     "network copy agent: an inline copy of %llu bytes (at most %zu)",
                     static_cast<unsigned long long>(t.c), AgentTask::kInlineMax);
  uint32_t piece[AgentEntry::kUsed];
  piece[0] = static_cast<uint32_t>(t.kind);
  const uint64_t words[6] = {t.a, t.b, t.c, t.d, t.e, t.f};
  for (int k = 0; k < 6; ++k) {
    piece[2 * k + 1] = static_cast<uint32_t>(words[k]);
    piece[2 * k + 2] = static_cast<uint32_t>(words[k] >> 32);
  }
  ++posted_;
  const uint64_t seq = uint64_t{static_cast<uint32_t>(posted_)} << 32;
  AgentEntry& e = tasks_[(posted_ - 1) % kTasks];
  // Release: what the proxy wrote before (a staged payload) is visible to the agent's copy.
  for (uint32_t i = 0; i < AgentEntry::kUsed; ++i)
    std::atomic_ref<uint64_t>(e.line[i]).store(seq | piece[i], std::memory_order_release);
  return keep_running();
}

Status CopyAgent::keep_running() {
  const uint64_t finished = done();
  if (finished == posted_) return GICL_SUCCESS;
  if (stopped() != launched_) return GICL_SUCCESS;  // the latest generation runs: it sees the task
  ++launched_;
  launched_at_ = std::chrono::steady_clock::now();
  agent_kernel<<<1, kThreads, 0, stream_>>>(tasks_, shared_, dev_done_, finished,
                                            static_cast<unsigned long long>(linger_.count()) * 1000,
                                            launched_);
  GICL_CUDA_CHECK(cudaGetLastError());
  return GICL_SUCCESS;
}

}  // namespace gicl::proxy
