// SPDX-License-Identifier: Apache-2.0
#include "topology/peer_info.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>

#include "common/cuda.hpp"
#include "common/rank_list.hpp"
#include "common/settings.hpp"
#include "gicl/version.h"

namespace gicl {

const char* peer_path_name(PeerPath p) {
  switch (p) {
    case PeerPath::kSelf:
      return "self";
    case PeerPath::kP2P:
      return "P2P";
    case PeerPath::kNetwork:
      return "network";
  }
  return "?";
}

uint64_t host_hash() {
  std::string text;
  if (!setting_string(Setting::kHostId, &text).ok() || text.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    text = host;
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::string id;
    if (boot >> id) text += "|" + id;
  } else {
    text = "GICL_HOSTID=" + text;  // never equal to a host name's hash input
  }
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

namespace {
/// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of this process, rounded up (1..100; 100 unset). Under MPS
/// a client's multiprocessor count is already its share (this percentage or the daemon's, the
/// lower, in whole TPCs: 25 % of an H200 shows 32 of 132), so count x 100 / percent, rounded up,
/// is a lower bound of the GPU's own count (residency.cc).
uint8_t mps_active_percent() {
  const char* v = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  if (v == nullptr || *v == '\0') return 100;
  char* end = nullptr;
  const double p = std::strtod(v, &end);
  if (end == v || !(p > 0)) return 100;
  return p >= 100 ? 100 : static_cast<uint8_t>(std::ceil(p));
}

/// This process's token: drawn once, again in a forked child (which inherits the parent's).
uint64_t process_token() {
  static pid_t owner = -1;
  static uint64_t token = 0;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (owner != getpid()) {
    std::random_device rd;
    token = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
    owner = getpid();
  }
  return token;
}
}  // namespace

int cuda_work_queues(bool mps) {
  const char* v = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  if (v != nullptr && *v != '\0') {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end != v && n >= 1) return static_cast<int>(std::min(n, 32L));  // CUDA's range: 1..32
  }
  return mps ? 2 : 8;
}

namespace {

/// Where the queue count came from, for messages: "" when the variable is set.
const char* queues_source(const PeerInfo& me) {
  return std::getenv("CUDA_DEVICE_MAX_CONNECTIONS") != nullptr ? ""
         : me.mps                                              ? " unset: 2 under MPS"
                                                               : " unset: 8";
}

}  // namespace

Status check_work_queues(const std::vector<PeerInfo>& peers, int me, int queues) {
  const int k = ranks_of_process_on_gpu(peers, me);
  if (k <= queues) return GICL_SUCCESS;
  return GICL_FAIL(GICL_INVALID_USAGE,
                   "%d ranks of this process share GPU %s: their kernels wait for each other, "
                   "and CUDA runs this process's streams on %d hardware queues "
                   "(CUDA_DEVICE_MAX_CONNECTIONS%s), so a kernel queued behind a partner's would "
                   "wait until GICL_WAIT_TIMEOUT. Set CUDA_DEVICE_MAX_CONNECTIONS=%d (or more) "
                   "before this process starts CUDA, or run one process per rank",
                   k, peers[me].pci_bus_id, queues, queues_source(peers[me]), k);
}

Status check_net_queues(const std::vector<PeerInfo>& peers, int me, int queues, bool* agent,
                        std::string* why) {
  const int k = ranks_of_process_on_gpu(peers, me);
  const int with_agent = 3 * k, without = 2 * k;
  why->clear();
  if (!*agent ? without <= queues : with_agent <= queues) return GICL_SUCCESS;
  if (without <= queues) {
    *agent = false;
    char text[320];
    std::snprintf(
        text, sizeof(text),
        "no copy agent: %d rank(s) of this process on GPU %s need %d streams with it "
        "(their own, the copier's, the agent's) and CUDA gives this process %d hardware "
        "queues (CUDA_DEVICE_MAX_CONNECTIONS%s); set CUDA_DEVICE_MAX_CONNECTIONS=%d for it",
        k, peers[me].pci_bus_id, with_agent, queues, queues_source(peers[me]), with_agent);
    *why = text;
    return GICL_SUCCESS;
  }
  return GICL_FAIL(GICL_INVALID_USAGE,
                   "%d rank(s) of this process on GPU %s use the staged network path: with each "
                   "rank's own stream and the copier's, %d streams on %d hardware queues "
                   "(CUDA_DEVICE_MAX_CONNECTIONS%s), so a copy a peer waits for, queued behind a "
                   "kernel waiting for that peer, would wait until GICL_WAIT_TIMEOUT. Set "
                   "CUDA_DEVICE_MAX_CONNECTIONS=%d (%d with the copy agent) before this process "
                   "starts CUDA, or run one process per rank",
                   k, peers[me].pci_bus_id, without, queues, queues_source(peers[me]), without,
                   with_agent);
}

Status check_shared_gpu_threads(const std::vector<PeerInfo>& peers, int me, bool allowed) {
  const std::vector<int> with = process_ranks_on_gpu(peers, me);
  if (allowed || with.size() <= 1) return GICL_SUCCESS;
  return GICL_FAIL(GICL_INVALID_USAGE,
                   "ranks %s are threads of this process on GPU %s: their kernels wait for each "
                   "other's, and CUDA does not promise that a launched kernel starts while other "
                   "kernels of the context run, so they can hang until GICL_WAIT_TIMEOUT. Run one "
                   "process per rank (under MPS to run at once), or set GICL_SHARED_GPU_THREADS=1 "
                   "to allow them anyway",
                   rank_list(with).c_str(), peers[me].pci_bus_id);
}

Status local_peer_info(int rank, int device, int heap_mode, PeerInfo* info) {
  std::memset(info, 0, sizeof(*info));
  info->version = kPeerInfoVersion;
  info->gicl_version = GICL_VERSION_CODE;
  info->rank = rank;
  info->pid = getpid();
  info->uid = getuid();
  info->device = device;
  info->host_hash = host_hash();
  info->heap_mode = heap_mode;
  info->mps_percent = mps_active_percent();
  info->process = process_token();
  if (device < 0) return GICL_SUCCESS;
  GICL_CUDA_CHECK(cudaDeviceGetPCIBusId(info->pci_bus_id, sizeof(info->pci_bus_id), device));
  cudaDeviceProp prop{};
  GICL_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::memcpy(info->uuid, &prop.uuid, sizeof(info->uuid));
  info->sm_count = prop.multiProcessorCount;
  int mps = 0;
  GICL_CUDA_CHECK(cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, device));
  info->mps = mps != 0;
  const DriverApi* api = nullptr;
  GICL_CHECK(driver_api(&api));
  int vmm = 0, fd = 0, ipc = 0;
  GICL_CU_CHECK(api->cuDeviceGetAttribute(
      &vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device));
  GICL_CU_CHECK(api->cuDeviceGetAttribute(
      &fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, device));
  GICL_CUDA_CHECK(cudaDeviceGetAttribute(&ipc, cudaDevAttrIpcEventSupport, device));
  if (vmm && fd) info->heap_caps |= kCapPosixFd;
  // Legacy IPC works on every Linux device that supports unified addressing.
  info->heap_caps |= kCapLegacyIpc;
  (void)ipc;
  return GICL_SUCCESS;
}

}  // namespace gicl
