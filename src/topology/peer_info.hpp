// SPDX-License-Identifier: Apache-2.0
// What each rank tells every other rank at init (one bootstrap allgather), and the path to each
// peer derived from it. Shared between processes, so the layout is fixed and versioned.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/status.hpp"

namespace gicl {

inline constexpr uint32_t kPeerInfoVersion = 5;

/// Handle types a rank can use for the symmetric heap (bit mask).
enum HeapHandleCaps : uint32_t { kCapPosixFd = 1u << 0, kCapLegacyIpc = 1u << 1 };

struct PeerInfo {
  uint32_t version;       // kPeerInfoVersion
  uint32_t gicl_version;  // GICL_VERSION_CODE of the sender
  int32_t rank;
  int32_t pid;
  uint32_t uid;
  int32_t device;        // CUDA ordinal in the sender's process, -1 if none
  uint64_t host_hash;    // host name and boot id
  uint32_t heap_caps;    // HeapHandleCaps the sender's device supports
  int32_t heap_mode;     // the sender's GICL_HEAP_HANDLE choice (index in its enum)
  char pci_bus_id[16];   // "0000:1b:00.0", empty without a device
  uint8_t uuid[16];      // CUDA device UUID
  int32_t sm_count;      // multiprocessors the sender's context may use (under MPS its share)
  uint8_t mps;           // contexts on the device are shared through MPS (cudaDevAttrMpsEnabled)
  uint8_t mps_percent;   // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of the sender, rounded up (1..100;
                         // 100 unset)
  uint8_t p2p_disabled;  // the sender's GICL_P2P_DISABLE: no P2P path to or from it
  uint8_t net_host_arrivals;  // the sender's GICL_NET_HOST_ARRIVALS (used where all say 1)
  uint64_t process;  // random per process (pids repeat across containers): ranks of one process
  uint16_t heartbeat_port;  // UDP port of the sender's heartbeats (core/heartbeat); 0: none
  uint16_t pad2;
  uint32_t peer_timeout_ms;  // the sender's GICL_PEER_TIMEOUT
  uint8_t reserved[32];
};
static_assert(sizeof(PeerInfo) == 128, "PeerInfo crosses processes: keep its size fixed");

/// How this rank reaches a peer's memory.
enum class PeerPath : uint8_t {
  kSelf,     // this rank
  kP2P,      // load/store through NVLink or PCIe peer mappings (same node)
  kNetwork,  // not load/store reachable: through the network proxy (core/net_path)
};

const char* peer_path_name(PeerPath p);

/// Fills the local rank's info (device may be -1).
Status local_peer_info(int rank, int device, int heap_mode, PeerInfo* info);

/// Paths from `me` to every rank. `can_access(peer)` answers whether this process's device
/// can map the peer's device memory; it is only asked for same-host peers with a device. A rank
/// whose info says p2p_disabled (GICL_P2P_DISABLE=1) reaches every other rank over the network,
/// and every rank reaches it so: both ends of a pair take the same path, which the network
/// path's barrier arrivals rely on (each side waits where the other counts).
template <typename CanAccess>
std::vector<PeerPath> compute_paths(const std::vector<PeerInfo>& peers, int me,
                                    CanAccess&& can_access) {
  std::vector<PeerPath> paths(peers.size(), PeerPath::kNetwork);
  for (size_t r = 0; r < peers.size(); ++r) {
    if (static_cast<int>(r) == me) {
      paths[r] = PeerPath::kSelf;
      continue;
    }
    const PeerInfo& p = peers[r];
    if (p.p2p_disabled != 0 || peers[me].p2p_disabled != 0) continue;
    if (p.host_hash != peers[me].host_hash || p.device < 0 || peers[me].device < 0) continue;
    if (can_access(p)) paths[r] = PeerPath::kP2P;
  }
  return paths;
}

/// Whether two ranks use the same GPU (by UUID).
inline bool same_gpu(const PeerInfo& a, const PeerInfo& b) {
  return std::memcmp(a.uuid, b.uuid, sizeof(a.uuid)) == 0;
}

/// Whether two ranks are threads of one process (the token, not the pid: pids repeat across
/// containers; the host too, for tokens that collide across hosts).
inline bool same_process(const PeerInfo& a, const PeerInfo& b) {
  return a.process == b.process && a.host_hash == b.host_hash;
}

/// Whether the kernels of ranks a and b run at once on their one GPU rather than time-sliced:
/// under MPS, or in one process (one context, whose streams run concurrently; gicl_comm_init_all
/// with a device twice, the harness's -g beyond the GPU count).
inline bool run_at_once(const PeerInfo& a, const PeerInfo& b) {
  return a.device >= 0 && b.device >= 0 && same_gpu(a, b) &&
         ((a.mps && b.mps) || same_process(a, b));
}

/// Whether two or more ranks run their kernels at once on one GPU: every kernel that meets its
/// partners' must then have its grid resident beside theirs (collectives/host/residency.hpp,
/// and no early launch: core/comm.cc).
inline bool ranks_share_a_gpu_at_once(const std::vector<PeerInfo>& peers) {
  for (size_t a = 0; a < peers.size(); ++a)
    for (size_t b = a + 1; b < peers.size(); ++b)
      if (run_at_once(peers[a], peers[b])) return true;
  return false;
}

/// The ranks that take turns with `me` on its GPU: other processes there, not under MPS.
inline std::vector<int> ranks_time_sliced_with(const std::vector<PeerInfo>& peers, int me) {
  std::vector<int> ranks;
  for (size_t r = 0; r < peers.size(); ++r)
    if (static_cast<int>(r) != me && peers[me].device >= 0 && peers[r].device >= 0 &&
        same_gpu(peers[me], peers[r]) && !run_at_once(peers[me], peers[r]))
      ranks.push_back(static_cast<int>(r));
  return ranks;
}

/// Whether two or more ranks take turns on one GPU (time-sliced: other processes, no MPS): a
/// kernel waiting for a partner's answer there waits for the partner's next time slice.
inline bool ranks_time_slice_a_gpu(const std::vector<PeerInfo>& peers) {
  for (size_t a = 0; a < peers.size(); ++a)
    if (!ranks_time_sliced_with(peers, static_cast<int>(a)).empty()) return true;
  return false;
}

/// The ranks of `me`'s process on its GPU, `me` included (none without a device).
inline std::vector<int> process_ranks_on_gpu(const std::vector<PeerInfo>& peers, int me) {
  const PeerInfo& m = peers[me];
  std::vector<int> ranks;
  for (size_t r = 0; r < peers.size(); ++r)
    if (m.device >= 0 && peers[r].device >= 0 && same_gpu(m, peers[r]) && same_process(m, peers[r]))
      ranks.push_back(static_cast<int>(r));
  return ranks;
}

/// How many: process_ranks_on_gpu's count.
inline int ranks_of_process_on_gpu(const std::vector<PeerInfo>& peers, int me) {
  return static_cast<int>(process_ranks_on_gpu(peers, me).size());
}

/// Hardware work queues CUDA gives this process's streams on a GPU: CUDA_DEVICE_MAX_CONNECTIONS
/// when set, else 8, or 2 under MPS (measured on an H200, driver 580: 3 ranks of one MPS client
/// stalled, 2 ran; 8 ran without MPS, 12 stalled).
int cuda_work_queues(bool mps);

/// Ranks of one process on one GPU run their kernels at once, each waiting for the others';
/// CUDA maps the process's streams onto `queues` hardware queues, and a kernel queued behind a
/// partner's would wait until GICL_WAIT_TIMEOUT. More such ranks than queues: GICL_INVALID_USAGE
/// naming CUDA_DEVICE_MAX_CONNECTIONS, at init.
Status check_work_queues(const std::vector<PeerInfo>& peers, int me, int queues);

/// The staged network path gives each rank two streams beside its own: the copier's, and the
/// copy agent's while `*agent` (docs/transports.md). A copy or signal that a peer's kernel waits
/// for, queued behind a kernel of this process that waits for that peer, would wait until
/// GICL_WAIT_TIMEOUT, so the process's ranks on `me`'s GPU need a hardware queue per stream:
/// success when ranks x 3 fit `queues`; when only ranks x 2 do, `*agent` becomes false and
/// `*why` says why; else GICL_INVALID_USAGE naming CUDA_DEVICE_MAX_CONNECTIONS and the count.
Status check_net_queues(const std::vector<PeerInfo>& peers, int me, int queues, bool* agent,
                        std::string* why);

/// Ranks of `me`'s process on its GPU beside it: refused (GICL_INVALID_USAGE, naming them and
/// GICL_SHARED_GPU_THREADS) unless `allowed`. Their kernels wait for kernels of other streams of
/// the same context, whose start CUDA does not promise.
Status check_shared_gpu_threads(const std::vector<PeerInfo>& peers, int me, bool allowed);

/// Whether `pred(a, b)` holds for every pair of distinct GPUs among `peers` (ranks on one GPU,
/// by UUID, are one GPU; ranks without a device are skipped). Every rank that passes the same
/// table and predicate gets the same answer, so a protocol gated on it is chosen alike
/// everywhere without another exchange.
template <typename Pred>
bool every_gpu_pair(const std::vector<PeerInfo>& peers, Pred&& pred) {
  for (size_t a = 0; a < peers.size(); ++a)
    for (size_t b = a + 1; b < peers.size(); ++b) {
      const PeerInfo &x = peers[a], &y = peers[b];
      if (x.device < 0 || y.device < 0) continue;
      if (!same_gpu(x, y) && !pred(x, y)) return false;
    }
  return true;
}

/// Hash of the host name and the kernel boot id: equal exactly for processes of one OS; of
/// GICL_HOSTID instead where it is set (node emulation).
uint64_t host_hash();

}  // namespace gicl
