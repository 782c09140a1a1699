// SPDX-License-Identifier: Apache-2.0
#include "core/comm.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "bootstrap/root.hpp"
#include "common/cuda.hpp"
#include "common/kernel_families.hpp"
#include "common/log.hpp"
#include "common/settings.hpp"
#include "net/transport.hpp"
#include "proxy/cuda_copier.hpp"
#include "proxy/net_proxy.hpp"
#include "proxy/ring_memory.hpp"
#include "topology/machine.hpp"

namespace gicl {
namespace {

Status check_peers_agree(const std::vector<PeerInfo>& peers, int me) {
  for (size_t r = 0; r < peers.size(); ++r) {
    const PeerInfo& p = peers[r];
    if (p.version != kPeerInfoVersion || p.gicl_version != peers[me].gicl_version)
      return GICL_FAIL(GICL_REMOTE_ERROR,
                       "rank %zu runs gicl version %u (peer info %u), rank %d runs %u", r,
                       p.gicl_version, p.version, me, peers[me].gicl_version);
    if (p.rank != static_cast<int>(r))
      return GICL_FAIL(GICL_REMOTE_ERROR, "peer table slot %zu holds rank %d", r, p.rank);
    if (p.peer_timeout_ms != peers[me].peer_timeout_ms)
      return GICL_FAIL(
          GICL_INVALID_ARGUMENT,
          "GICL_PEER_TIMEOUT differs between ranks (rank %d: %u, rank %zu: %u); set it "
          "the same everywhere",
          me, peers[me].peer_timeout_ms, r, p.peer_timeout_ms);
    if (p.heap_mode != peers[0].heap_mode)
      return GICL_FAIL(GICL_INVALID_ARGUMENT,
                       "GICL_HEAP_HANDLE differs between ranks (rank 0: %d, rank %zu: %d); set it "
                       "the same everywhere",
                       peers[0].heap_mode, r, p.heap_mode);
  }
  return GICL_SUCCESS;
}

// The heap handle type every mapped rank can use, agreed from the one allgathered table so that
// no rank decides alone.
Status choose_heap_handle(const std::vector<PeerInfo>& peers, const std::vector<PeerPath>& paths,
                          HeapHandle* out) {
  uint32_t caps = kCapPosixFd | kCapLegacyIpc;
  for (size_t r = 0; r < peers.size(); ++r)
    if (paths[r] != PeerPath::kNetwork && peers[r].device >= 0) caps &= peers[r].heap_caps;
  const int mode = peers[0].heap_mode;  // 0 AUTO, 1 POSIX_FD, 2 LEGACY_IPC
  if (mode == 1 || (mode == 0 && (caps & kCapPosixFd))) {
    if (!(caps & kCapPosixFd))
      return GICL_FAIL(GICL_UNSUPPORTED,
                       "GICL_HEAP_HANDLE=POSIX_FD but not every local rank's device supports VMM "
                       "with POSIX file descriptors");
    *out = HeapHandle::kPosixFd;
    return GICL_SUCCESS;
  }
  if (!(caps & kCapLegacyIpc))
    return GICL_FAIL(GICL_UNSUPPORTED, "no heap handle type is supported by every local rank");
  *out = HeapHandle::kLegacyIpc;
  return GICL_SUCCESS;
}

void log_paths(const gicl_comm* c) {
  if (!log_enabled(LogLevel::kInfo, kSubsysTopo)) return;
  std::string line;
  for (int r = 0; r < c->nranks; ++r) {
    char item[64];
    std::snprintf(item, sizeof(item), " %d:%s%s%s%s", r, peer_path_name(c->paths[r]),
                  c->peers[r].device >= 0 ? "(" : "", c->peers[r].pci_bus_id,
                  c->peers[r].device >= 0 ? ")" : "");
    line.append(item);
  }
  GICL_INFO(kSubsysTopo, "rank %d/%d device %d paths:%s", c->rank, c->nranks, c->device,
            line.c_str());
}

/// GICL_PDL=1 on a device that has programmatic dependent launch (sm_90 and later): every kernel
/// the library enqueues (collectives, host stream operations) then starts while the previous
/// kernel of the stream drains, and waits for it in its prologue (common/kernel_launch.cuh).
/// Not where ranks share a GPU at once (under MPS, or in one process): a rank's next grid, launched
/// early, would hold multiprocessors that its partners' current grids need to start (measured: four
/// ranks on one H200 stalled at a 4 MiB reduce-scatter of 32 blocks each until GICL_WAIT_TIMEOUT).
Status pdl_choice(gicl_comm* c) {
  int64_t want = 0;
  GICL_CHECK(setting_int(Setting::kPdl, &want));
  int major = 0;
  if (want != 0 && c->device >= 0)
    GICL_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, c->device));
  const bool shared = ranks_share_a_gpu_at_once(c->peers);
  c->pdl = want != 0 && major >= 9 && !shared;
  if (c->device < 0) return GICL_SUCCESS;  // no device, no kernels
  GICL_INFO(kSubsysInit, "rank %d: kernels launched %s", c->rank,
            c->pdl      ? "with programmatic dependent launch"
            : want == 0 ? "plainly (GICL_PDL=0)"
            : major < 9 ? "plainly (no programmatic dependent launch before sm_90)"
                        : "plainly (ranks share a GPU at once: an early grid would hold "
                          "multiprocessors its partners need)");
  return GICL_SUCCESS;
}

/// Milliseconds per init step, for the INFO line that ends init (where a slow init spends it).
class InitTimer {
 public:
  void mark(const char* step) {
    const auto now = std::chrono::steady_clock::now();
    char part[64];
    std::snprintf(part, sizeof(part), "%s%s %.1f", text_.empty() ? "" : ", ", step,
                  std::chrono::duration<double, std::milli>(now - last_).count());
    text_ += part;
    last_ = now;
  }
  std::string summary() const {
    char total[48];
    std::snprintf(total, sizeof(total), "; total %.1f",
                  std::chrono::duration<double, std::milli>(last_ - start_).count());
    return text_ + total;
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
  std::string text_;
};

/// "rank 2 (pid 4242)", "rank 0 (pid 8136) and rank 3 (pid 8139)"; without the pids while the
/// peer exchange has not published them (a loss during init).
std::string name_ranks(gicl_comm* c, const std::vector<int>& ranks) {
  std::lock_guard<std::mutex> lock(c->error_mutex);
  std::string who;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    who += i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ";
    who += "rank " + std::to_string(r);
    if (r >= 0 && r < static_cast<int>(c->peer_pids.size()))
      who += " (pid " + std::to_string(c->peer_pids[r]) + ")";
  }
  return who;
}

/// Peers lost (core/peer_watch): the communicator's error names each and how it went (silent
/// ranks first: a survivor that left because of them closes its connections, which is no news),
/// device waits stop, host calls fail with it.
void peer_lost(gicl_comm* c, const std::vector<std::pair<int, PeerLoss>>& lost,
               const std::string& error, int64_t timeout_ms) {
  std::vector<int> ranks;
  std::string msg;
  for (PeerLoss how : {PeerLoss::kSilent, PeerLoss::kFailed, PeerLoss::kClosed}) {
    std::vector<int> group;
    for (const auto& [r, w] : lost)
      if (w == how) group.push_back(r);
    if (group.empty()) continue;
    ranks.insert(ranks.end(), group.begin(), group.end());
    const bool one = group.size() == 1;
    msg += (msg.empty() ? "" : "; ") + name_ranks(c, group) + ": ";
    switch (how) {
      case PeerLoss::kSilent:
        msg += "no heartbeat for " + std::to_string(timeout_ms) + " ms (GICL_PEER_TIMEOUT): ";
        msg += one ? "its node is unreachable or its process is stopped"
                   : "their nodes are unreachable or their processes are stopped";
        break;
      case PeerLoss::kFailed:
        msg += (one ? "its connection failed: " : "their connections failed: ") + error;
        break;
      case PeerLoss::kClosed:
        msg += one ? "its connection closed" : "their connections closed";
        msg += " (a process ended, was killed or aborted the communicator)";
        break;
    }
  }
  if (lost.empty()) msg = "the peer watch failed: " + error;
  std::sort(ranks.begin(), ranks.end());
  GICL_WARN(kSubsysInit, "rank %d: %s", c->rank, msg.c_str());
  // The ranks go in before the error: a caller that has seen the error may shrink at once
  // (GICL_SHRINK_LOST), and must find them.
  {
    std::lock_guard<std::mutex> lock(c->error_mutex);
    c->lost_ranks.insert(c->lost_ranks.end(), ranks.begin(), ranks.end());
  }
  comm_set_error(c, GICL_REMOTE_ERROR, msg);
  c->peer_lost.store(true, std::memory_order_release);
  if (c->initializing.load(std::memory_order_acquire)) {
    // Init's host waits on the lost rank stop (no kernel of this communicator runs yet, and its
    // device state may be under construction on the initializing thread).
    c->cancel.store(true);
  } else {
    device_resources_signal_abort(c);  // every device wait stops now
  }
}

/// Opens this rank's heartbeat socket (GICL_PEER_TIMEOUT > 0) and records it in its peer info,
/// which the peer exchange then carries to everyone.
Status heartbeat_prepare(gicl_comm* c) {
  int64_t timeout = 0;
  GICL_CHECK(setting_int(Setting::kPeerTimeout, &timeout));
  PeerInfo& me = c->peers[c->rank];
  me.peer_timeout_ms = static_cast<uint32_t>(timeout);
  if (timeout == 0 || c->nranks == 1) return GICL_SUCCESS;
  int port = 0;
  GICL_CHECK(heartbeat_open(c->bootstrap->address(c->rank), c->nranks, &c->heartbeat_fd, &port));
  me.heartbeat_port = static_cast<uint16_t>(port);
  return GICL_SUCCESS;
}

/// Starts the peer watch over the bootstrap connections, as soon as they are open: a rank lost
/// during the rest of init is named as after it.
Status watch_start(gicl_comm* c) {
  return PeerWatch::start(
      c->bootstrap->connections(),
      [c](const std::vector<std::pair<int, PeerLoss>>& lost, const std::string& error,
          int64_t timeout_ms) { peer_lost(c, lost, error, timeout_ms); },
      &c->watch);
}

/// Hands the watch its heartbeats, once every rank's port is known: to each rank's bootstrap
/// host at the port it announced.
Status heartbeats_start(gicl_comm* c) {
  HeartbeatPlan plan;
  plan.rank = c->rank;
  plan.nranks = c->nranks;
  plan.timeout_ms = c->peers[c->rank].peer_timeout_ms;
  if (c->heartbeat_fd < 0) return GICL_SUCCESS;
  GICL_CHECK(heartbeat_key(c->bootstrap->secret(), bootstrap::kSecretBytes, c->bootstrap->job(),
                           bootstrap::kJobBytes, plan.key));
  plan.to.resize(c->nranks);
  for (int r = 0; r < c->nranks; ++r) {
    plan.to[r] = c->bootstrap->address(r);
    plan.to[r].set_port(c->peers[r].heartbeat_port);
  }
  plan.fd = c->heartbeat_fd;  // the watch's from here on
  c->heartbeat_fd = -1;
  c->watch->beat(std::move(plan));
  return GICL_SUCCESS;
}

Status init_steps(gicl_comm* c, const bootstrap::UniqueIdData& id) {
  GICL_CHECK(setting_int(Setting::kBootstrapTimeout, &c->timeout_ms));
  int64_t heap_mode = 0, max_bytes = 0, chunk = 0;
  GICL_CHECK(setting_int(Setting::kHeapHandle, &heap_mode));
  GICL_CHECK(setting_int(Setting::kSymmetricSize, &max_bytes));
  GICL_CHECK(setting_int(Setting::kHeapChunkSize, &chunk));
  if (cuda_device_count() > 0) GICL_CUDA_CHECK(cudaGetDevice(&c->device));
  log_set_device(c->device);
  InitTimer timer;

  GICL_CHECK(bootstrap::Bootstrap::create(id, c->rank, c->nranks, &c->cancel, c->timeout_ms,
                                          &c->bootstrap));
  timer.mark("bootstrap");
  GICL_CHECK(watch_start(c));
  c->peers.resize(c->nranks);
  GICL_CHECK(local_peer_info(c->rank, c->device, static_cast<int>(heap_mode), &c->peers[c->rank]));
  GICL_CHECK(heartbeat_prepare(c));
  int64_t p2p_disable = 0;
  GICL_CHECK(setting_int(Setting::kP2pDisable, &p2p_disable));
  c->peers[c->rank].p2p_disabled = p2p_disable != 0 ? 1 : 0;
  int64_t host_arrivals = 0;
  GICL_CHECK(setting_int(Setting::kNetHostArrivals, &host_arrivals));
  c->peers[c->rank].net_host_arrivals = host_arrivals != 0 ? 1 : 0;
  GICL_CHECK(c->bootstrap->allgather(c->peers.data(), sizeof(PeerInfo)));
  GICL_CHECK(check_peers_agree(c->peers, c->rank));
  {
    std::lock_guard<std::mutex> lock(c->error_mutex);  // the watch's thread reads them
    for (const PeerInfo& p : c->peers) c->peer_pids.push_back(p.pid);
  }
  GICL_CHECK(heartbeats_start(c));
  int64_t shared_threads = 0;
  GICL_CHECK(setting_int(Setting::kSharedGpuThreads, &shared_threads));
  GICL_CHECK(check_shared_gpu_threads(c->peers, c->rank, shared_threads != 0));
  GICL_CHECK(check_work_queues(c->peers, c->rank, cuda_work_queues(c->peers[c->rank].mps)));
  GICL_CHECK(pdl_choice(c));
  timer.mark("peer exchange");

  const PeerInfo& me = c->peers[c->rank];
  c->paths = compute_paths(c->peers, c->rank, [&](const PeerInfo& p) {
    if (same_gpu(p, me)) return true;
    int local = -1, ok = 0;
    if (cudaDeviceGetByPCIBusId(&local, p.pci_bus_id) != cudaSuccess) {
      cudaGetLastError();
      return false;  // not visible to this process
    }
    return cudaDeviceCanAccessPeer(&ok, c->device, local) == cudaSuccess && ok != 0;
  });
  log_paths(c);
  static std::once_flag machine_logged;
  if (log_enabled(LogLevel::kInfo, kSubsysTopo))
    std::call_once(machine_logged, [] {
      MachineTopology machine;
      if (load_machine_topology("", &machine).ok())
        GICL_INFO(kSubsysTopo, "%s", describe(machine).c_str());
    });

  std::vector<int> all(c->nranks), node;
  for (int r = 0; r < c->nranks; ++r) {
    all[r] = r;
    if (c->paths[r] != PeerPath::kNetwork) node.push_back(r);
  }
  c->world.assign(c, c->nranks, c->rank, all, true);
  c->node.assign(c, c->nranks, c->rank, node, true);

  // The heap exists when every rank has a device; a CPU-only rank anywhere makes it unavailable
  // everywhere (decided from the shared table, identically on all ranks).
  const bool all_devices = std::all_of(c->peers.begin(), c->peers.end(),
                                       [](const PeerInfo& p) { return p.device >= 0; });
  if (all_devices) {
    HeapConfig cfg;
    GICL_CHECK(choose_heap_handle(c->peers, c->paths, &cfg.handle));
    cfg.max_bytes = static_cast<uint64_t>(max_bytes);
    cfg.chunk_bytes = static_cast<uint64_t>(chunk);
    cfg.device = c->device;
    cfg.timeout_ms = c->timeout_ms;
    GICL_CHECK(
        SymmetricHeap::create(cfg, c->bootstrap.get(), c->peers, c->paths, &c->cancel, &c->heap));
    if (cfg.handle == HeapHandle::kPosixFd) GICL_CHECK(device_resources_create(c));
  }
  timer.mark("paths and heap");
  GICL_CHECK(net_path_open(c));
  timer.mark("network path");
  // Before the last barrier: no rank's kernels run until every rank's are loaded.
  GICL_CHECK(load_kernel_families(c->device));
  timer.mark("kernel preload");
  GICL_CHECK(c->bootstrap->barrier());
  timer.mark("last barrier");
  GICL_INFO(kSubsysInit, "rank %d/%d ready (device %d, heap %s); init ms: %s", c->rank, c->nranks,
            c->device, c->heap ? heap_handle_name(c->heap->handle()) : "none",
            timer.summary().c_str());
  return GICL_SUCCESS;
}

}  // namespace

Status comm_init(const bootstrap::UniqueIdData& id, int nranks, int rank, gicl_comm** out) {
  auto* c = new gicl_comm();
  c->rank = rank;
  c->nranks = nranks;
  c->initializing.store(true);
  Status s = init_steps(c, id);
  c->initializing.store(false);
  // A loss reported while init ended cancelled its waits: init fails with it (below).
  if (s.ok() && c->cancel.load()) s = Status(GICL_REMOTE_ERROR);
  bootstrap::reap_roots(false);
  if (!s.ok() && c->watch && (s.code() == GICL_REMOTE_ERROR || s.code() == GICL_ABORTED)) {
    // A peer's loss stops init wherever it waits, as a closed connection or a cancelled wait,
    // naming whichever rank it waited on: a survivor that left because of the loss may be the
    // one. The watch names every rank gone within its window, the lost one included: its word
    // is taken when it comes.
    if (await_peer_report(c)) {
      std::lock_guard<std::mutex> lock(c->error_mutex);
      s = relay(GICL_REMOTE_ERROR, c->async_message.c_str());
    }
  }
  if (!s.ok()) {
    comm_free(c, 1000);
    return s;
  }
  *out = c;
  return GICL_SUCCESS;
}

namespace {
// True when every kernel on `device` finished within `ms`. The wait runs on its own thread so
// that a kernel that never ends cannot hold the caller (abort must return within a second).
bool device_idle_within(int device, int ms) {
  if (device < 0) return true;
  struct Waiter {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
  };
  auto w = std::make_shared<Waiter>();
  std::thread t([w, device] {
    cudaSetDevice(device);
    cudaDeviceSynchronize();
    cudaGetLastError();
    std::lock_guard<std::mutex> lock(w->m);
    w->done = true;
    w->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(w->m);
  const bool idle = w->cv.wait_for(lock, std::chrono::milliseconds(ms), [&] { return w->done; });
  lock.unlock();
  if (idle)
    t.join();
  else
    t.detach();  // it ends when the device does; the waiter state is shared, not on our stack
  return idle;
}
}  // namespace

void comm_free(gicl_comm* c, int idle_wait_ms) {
  c->watch.reset();            // before anything it reports into goes
  close_fd(&c->heartbeat_fd);  // init failed before the watch took it
  const bool idle = !c->dev || device_idle_within(c->device, idle_wait_ms);
  if (!idle) new std::shared_ptr<void>(std::move(c->collectives));  // in use by kernels: leak
  c->collectives.reset();
  // The proxy stops before the heap and the ring it serves go; kernels still running may post
  // into the ring: then it stays (leaked), as the heap does.
  if (!idle && c->net) c->net->proxy.reset();
  if (!idle) (void)c->net.release();
  c->net.reset();
  device_resources_free(c, idle);
  // The registered buffers' and the heap's mappings next; then the bootstrap.
  if (!idle) {
    // Kernels may still touch them: leak rather than unmap under them.
    (void)c->registry.release();
    (void)c->heap.release();
  }
  c->registry.reset();
  c->heap.reset();
  c->bootstrap.reset();
  delete c;
}

bool await_peer_report(gicl_comm* c) {
  if (!c->watch) return c->peer_lost.load(std::memory_order_acquire);
  const auto until = Clock::now() + 3 * PeerWatch::kGather;
  while (!c->peer_lost.load(std::memory_order_acquire) && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return c->peer_lost.load(std::memory_order_acquire);
}

void comm_set_error(gicl_comm* c, gicl_result_t code, const std::string& message) {
  int expected = GICL_SUCCESS;
  std::lock_guard<std::mutex> lock(c->error_mutex);
  if (c->async_error.compare_exchange_strong(expected, code)) c->async_message = message;
}

}  // namespace gicl
