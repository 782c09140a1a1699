// SPDX-License-Identifier: Apache-2.0
// A communicator's network path: the transport to ranks on other nodes, the request ring its
// kernels post into, and the proxy thread that serves it. Opened at init when some rank is on
// the network path and every rank has a device and the VMM heap; collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.hpp"
#include "gicl/device/detail/proxy_ring.h"

struct gicl_comm;

namespace gicl {
namespace net {
class Transport;
class Region;
}  // namespace net
namespace proxy {
class CudaCopier;
class RingMemory;
class NetProxy;
}  // namespace proxy

/// The staged path's host FIFOs as kernels see them (proxy/staged_delivery.hpp): pinned host
/// memory mapped into the GPU. Slots are [peer][lane][depth] of `slot_bytes`; counters
/// [peer][lane][depth] (arrived) and [peer][lane] (credits), written by the proxy alone.
struct HostFifos {
  static constexpr uint32_t kLanes = 16;  // the pipe collectives' channels
  static constexpr uint32_t kDepth = 4;   // their slots per channel
  char* out = nullptr;                    // this rank's outgoing slots
  const char* in = nullptr;               // incoming slots, by source rank
  const uint64_t* arrived = nullptr;      // messages that arrived per incoming slot
  const uint64_t* credits = nullptr;      // messages each peer consumed per lane
  size_t slot_bytes = 0;
};

struct NetPath {
  NetPath();
  ~NetPath();  // the proxy first, the transport last
  NetPath(const NetPath&) = delete;
  NetPath& operator=(const NetPath&) = delete;

  struct Pinned {
    void* p = nullptr;
    ~Pinned();
  };
  struct DeviceBuffer {
    void* p = nullptr;
    ~DeviceBuffer();
  };

  Pinned staging;  // the staged delivery's slots
  std::unique_ptr<net::Transport> transport;
  std::unique_ptr<net::Region> region;  // the staging area's (staged) or the heap's (direct)
  std::unique_ptr<proxy::CudaCopier> copier;
  std::vector<std::unique_ptr<proxy::RingMemory>> rings;  // ProxyRingSet's order
  DeviceBuffer ring_dev;  // the ProxyRingSet kernels read (gicl_device_comm_t::net)
  std::unique_ptr<proxy::NetProxy> proxy;
  bool staged = false;
  HostFifos fifos;      // staged path only (no slots otherwise)
  int proxy_core = -1;  // the core the proxy thread is pinned to (near the GPU), -1: not pinned
};

/// Opens the network path where the communicator needs one (a rank on the network path, a device
/// and the VMM heap on every rank); collective. GICL_NET=AUTO leaves it closed, everywhere alike,
/// when libfabric does not open on some rank.
Status net_path_open(gicl_comm* comm);
/// The proxy's first error, if any (comm's async error).
bool net_path_error(const gicl_comm* comm, gicl_result_t* code, std::string* text);

/// A launch whose kernel will post to the network proxy was enqueued on `comm`: the proxy, if
/// it sleeps after a pause, wakes now rather than up to its longest sleep after the first post
/// (NetProxy::kick). Nothing where the communicator has no network path.
void net_path_kick(const gicl_comm* comm);

/// What GICL_NET opens on this machine for a communicator with ranks on other nodes (its backend,
/// provider and device, and what the provider offers), or why it opens none; for gicl-info. The
/// transport is opened as one rank alone and closed again.
std::string net_backend_summary();

}  // namespace gicl
