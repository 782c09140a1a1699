// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "common/cuda.hpp"
#include "common/kernel_families.hpp"
#include "proxy/cuda_copier.hpp"
#include "proxy/word_update.cuh"

namespace gicl::proxy {
namespace {

/// One update (a signal or an atomic) after the copies before it on the stream: those completed
/// before this kernel began, so a reader that sees the new value and then reads the payload
/// finds it. `old` (host memory, or null): where a fetching update's old value goes.
__global__ void apply_update(void* word, ProxyAtomic op, uint32_t width, unsigned long long value,
                             unsigned long long compare, unsigned long long* old) {
  __threadfence();
  const unsigned long long was = apply_width(word, op, width, value, compare);
  if (old != nullptr) {
    *reinterpret_cast<volatile unsigned long long*>(old) = was;
    __threadfence_system();  // in host memory before the stream's next event
  }
}

/// Several updates (a staged chunk of header-only operations) in order, read from host memory
/// through its unified address; one launch instead of one each.
__global__ void apply_many(char* base, const WordUpdate* u, uint32_t n, unsigned long long* old) {
  __threadfence();
  for (uint32_t i = 0; i < n; ++i) {
    const WordUpdate w = u[i];
    const unsigned long long was =
        apply_width(base + w.word, static_cast<ProxyAtomic>(w.op), w.width, w.value, w.compare);
    if (old != nullptr) reinterpret_cast<volatile unsigned long long*>(old)[i] = was;
  }
  if (old != nullptr) __threadfence_system();  // in host memory before the stream's next event
}

// Loaded at communicator init with every other kernel: a lazy load at the first signal would
// wait for the kernels that are waiting for that signal.
const KernelFamily kCopierKernels("network copier",
                                  [] { return load_kernels(apply_update, apply_many); });

}  // namespace

Status CudaCopier::create(int device, std::chrono::microseconds linger,
                          std::unique_ptr<CudaCopier>* out) {
  std::unique_ptr<CudaCopier> c(new CudaCopier(device));
  DeviceScope scope(device);
  GICL_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream_, cudaStreamNonBlocking));
  // Every event the markers use, made here: cudaEventCreate on the proxy thread waits while any
  // thread of the process copies into pageable memory behind a busy stream (measured on H200,
  // CUDA 13.0), and that stream's kernels may be waiting for this copier.
  c->free_events_.resize(kEvents);
  for (cudaEvent_t& e : c->free_events_)
    GICL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  GICL_CHECK(CopyAgent::create(device, linger, &c->agent_));
  *out = std::move(c);
  return GICL_SUCCESS;
}

CudaCopier::~CudaCopier() {
  DeviceScope scope(device_);
  // Teardown: the agent leaves and releases the stream's waits on it; then wait for what was
  // issued, and free. Nothing to report a failure to.
  if (agent_ != nullptr) agent_->stop();
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  for (const Pending& p : pending_)
    if (p.event != nullptr && p.last_on_event) (void)cudaEventDestroy(p.event);
  for (cudaEvent_t e : free_events_) (void)cudaEventDestroy(e);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

bool CudaCopier::to_agent(size_t bytes) const {
  // A held copy takes an entry of its own unless the next operation joins it.
  return agent_ != nullptr && bytes <= CopyAgent::kCopyMax && !stream_unmarked_ &&
         free_events_.size() == kEvents && agent_->free_entries() > (held_ ? 1u : 0u);
}

Status CudaCopier::agent_copy(void* dst, const void* src, size_t bytes, bool from_host) {
  GICL_CHECK(flush_held());
  held_ = AgentTask{.kind = AgentTask::kCopy,
                    .a = reinterpret_cast<uint64_t>(dst),
                    .b = reinterpret_cast<uint64_t>(src),
                    .c = bytes};
  if (from_host && bytes <= AgentTask::kInlineMax) {
    // The staged bytes are in place when the copy is issued: the task carries them, and the
    // agent finds them in the entry it polled instead of reading the staging slot over PCIe.
    held_->kind |= AgentTask::kInline;
    held_->b = 0;
    std::memcpy(&held_->b, src, bytes);
  }
  last_on_agent_ = true;
  return GICL_SUCCESS;
}

Status CudaCopier::agent_update(void* word, ProxyAtomic op, uint32_t width, uint64_t value,
                                uint64_t compare, uint64_t* old) {
  const uint64_t how = static_cast<uint64_t>(op) << 8 | uint64_t{width} << 16;
  last_on_agent_ = true;
  if (held_ && old == nullptr) {  // the copy before it and the update: one task
    AgentTask t = *held_;
    held_.reset();
    t.kind = (t.kind & AgentTask::kInline) | AgentTask::kCopyUpdate | how;
    t.d = reinterpret_cast<uint64_t>(word);
    t.e = value;
    t.f = compare;
    return agent_->post(t);
  }
  GICL_CHECK(flush_held());
  return agent_->post(AgentTask{.kind = AgentTask::kUpdate | how,
                                .a = reinterpret_cast<uint64_t>(old),
                                .d = reinterpret_cast<uint64_t>(word),
                                .e = value,
                                .f = compare});
}

Status CudaCopier::flush_held() {
  if (!held_) return GICL_SUCCESS;
  const AgentTask t = *held_;
  held_.reset();
  return agent_->post(t);
}

Status CudaCopier::after_agent() {
  GICL_CHECK(flush_held());
  last_on_agent_ = false;
  stream_unmarked_ = true;
  if (agent_ == nullptr || agent_->posted() == stream_waited_) return GICL_SUCCESS;
  stream_waited_ = agent_->posted();
  if (agent_->done() == stream_waited_) return GICL_SUCCESS;  // finished and visible already
  const DriverApi* api = nullptr;
  GICL_CHECK(driver_api(&api));
  GICL_CU_CHECK(api->cuStreamWaitValue64(stream_, agent_->done_word(), stream_waited_,
                                         CU_STREAM_WAIT_VALUE_GEQ));
  return GICL_SUCCESS;
}

Status CudaCopier::to_host(void* dst, const void* src, size_t bytes) {
  if (to_agent(bytes)) return agent_copy(dst, src, bytes, false);
  GICL_CHECK(after_agent());
  GICL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  return GICL_SUCCESS;
}

Status CudaCopier::to_device(void* dst, const void* src, size_t bytes) {
  if (to_agent(bytes)) return agent_copy(dst, src, bytes, true);
  GICL_CHECK(after_agent());
  GICL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  return GICL_SUCCESS;
}

Status CudaCopier::update(void* word, ProxyAtomic op, uint32_t width, uint64_t value) {
  return fetch_update(word, op, width, value, 0, nullptr);
}

Status CudaCopier::fetch_update(void* word, ProxyAtomic op, uint32_t width, uint64_t value,
                                uint64_t compare, uint64_t* old) {
  if (to_agent(0)) return agent_update(word, op, width, value, compare, old);
  GICL_CHECK(after_agent());
  apply_update<<<1, 1, 0, stream_>>>(word, op, width, value, compare,
                                     reinterpret_cast<unsigned long long*>(old));
  GICL_CUDA_CHECK(cudaGetLastError());
  return GICL_SUCCESS;
}

Status CudaCopier::update_many(char* base, const WordUpdate* u, uint32_t n, uint64_t* old) {
  if (to_agent(0)) {
    GICL_CHECK(flush_held());
    last_on_agent_ = true;
    return agent_->post(AgentTask{.kind = AgentTask::kUpdateMany,
                                  .a = reinterpret_cast<uint64_t>(old),
                                  .d = reinterpret_cast<uint64_t>(base),
                                  .e = reinterpret_cast<uint64_t>(u),
                                  .f = n});
  }
  GICL_CHECK(after_agent());
  apply_many<<<1, 1, 0, stream_>>>(base, u, n, reinterpret_cast<unsigned long long*>(old));
  GICL_CUDA_CHECK(cudaGetLastError());
  return GICL_SUCCESS;
}

Status CudaCopier::mark(uint64_t token) {
  if (last_on_agent_) {
    GICL_CHECK(flush_held());
    pending_.push_back(Pending{nullptr, false, agent_->posted(), token});
    return GICL_SUCCESS;
  }
  unrecorded_.push_back(token);
  return record_marks();
}

Status CudaCopier::record_marks() {
  if (unrecorded_.empty() || free_events_.empty()) return GICL_SUCCESS;
  const cudaEvent_t e = free_events_.back();
  GICL_CUDA_CHECK(cudaEventRecord(e, stream_));
  free_events_.pop_back();
  // The event follows every stream operation issued so far: those of each waiting marker too.
  for (size_t i = 0; i < unrecorded_.size(); ++i)
    pending_.push_back(Pending{e, i + 1 == unrecorded_.size(), 0, unrecorded_[i]});
  unrecorded_.clear();
  stream_unmarked_ = false;
  return GICL_SUCCESS;
}

Status CudaCopier::poll(std::vector<uint64_t>* done) {
  if (agent_ != nullptr) {
    GICL_CHECK(flush_held());
    GICL_CHECK(agent_->keep_running());
  }
  while (!pending_.empty()) {
    const Pending& p = pending_.front();
    if (p.event == nullptr) {
      if (agent_->done() < p.agent_at) break;
    } else {
      const cudaError_t rc = cudaEventQuery(p.event);
      if (rc == cudaErrorNotReady) break;
      GICL_CUDA_CHECK(rc);
      if (p.last_on_event) free_events_.push_back(p.event);
    }
    done->push_back(p.token);
    pending_.pop_front();
  }
  return record_marks();
}

std::string CudaCopier::state() const {
  size_t on_stream = unrecorded_.size();  // those still waiting for a free event too
  for (const Pending& p : pending_) on_stream += p.event != nullptr;
  char buf[320];
  if (agent_ == nullptr) {
    std::snprintf(buf, sizeof(buf), "no copy agent; stream: %zu markers pending", on_stream);
    return buf;
  }
  const uint64_t launched = agent_->launched();
  char agent[160];
  if (agent_->stopped() == launched) {
    std::snprintf(agent, sizeof(agent), "none running, the last left was generation %llu",
                  static_cast<unsigned long long>(launched));
  } else if (agent_->started() != launched) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - agent_->launched_at());
    std::snprintf(
        agent, sizeof(agent), "generation %llu launched %lld ms ago and not yet started on the GPU",
        static_cast<unsigned long long>(launched), static_cast<long long>(waited.count()));
  } else {
    // A running agent's heartbeat moves every 64 polls (about 100 us): 2 ms tell one that polls
    // from one whose block is resident but not scheduled.
    const uint64_t beat = agent_->beat();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::snprintf(agent, sizeof(agent), "generation %llu running, %s",
                  static_cast<unsigned long long>(launched),
                  agent_->beat() != beat ? "polling for its next task"
                                         : "not polling (no heartbeat in 2 ms)");
  }
  std::snprintf(buf, sizeof(buf),
                "copy agent: %llu tasks posted, %llu done, %s; stream: %zu markers pending",
                static_cast<unsigned long long>(agent_->posted()),
                static_cast<unsigned long long>(agent_->done()), agent, on_stream);
  return buf;
}

}  // namespace gicl::proxy
