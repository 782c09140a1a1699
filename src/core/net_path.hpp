// SPDX-License-Identifier: Apache-2.0
// A communicator's network path: the transport to ranks on other nodes, the request ring its
// kernels post into, and the proxy thread that serves it. Opened at init when some rank is on
// the network path and every rank has a device and the VMM heap; collective.
#pragma once

#include <memory>

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
  std::unique_ptr<proxy::RingMemory> ring;
  DeviceBuffer ring_dev;  // the ProxyRing kernels read (gicl_device_comm_t::net)
  std::unique_ptr<proxy::NetProxy> proxy;
  bool staged = false;
  int proxy_core = -1;  // the core the proxy thread is pinned to (near the GPU), -1: not pinned
};

/// Opens the network path where the communicator needs one (a rank on the network path, a device
/// and the VMM heap on every rank); collective. GICL_NET=AUTO leaves it closed, everywhere alike,
/// when libfabric does not open on some rank.
Status net_path_open(gicl_comm* comm);
/// The proxy's first error, if any (comm's async error).
bool net_path_error(const gicl_comm* comm, gicl_result_t* code, std::string* text);

}  // namespace gicl
