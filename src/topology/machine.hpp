// SPDX-License-Identifier: Apache-2.0
// The machine as hwloc sees it: packages, NUMA nodes, cores, GPUs and NICs with their PCI
// addresses and NUMA locality. Loaded from the running machine or from an hwloc XML file
// (GICL_TOPO_FILE, and the synthetic machines in tests/data/).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.hpp"

namespace gicl {

struct PciDevice {
  std::string bus_id;  // "0000:1b:00.0"
  uint16_t vendor = 0;
  uint16_t device = 0;
  uint16_t class_id = 0;
  int numa_node = -1;                 // closest NUMA node, -1 if unknown
  std::string cpuset;                 // hwloc cpuset string of the closest CPUs
  std::vector<std::string> os_names;  // "cuda0", "mlx5_0", "eth0"...
  // The PCI bridges above the device, host bridge first (hwloc gp_index): two devices behind the
  // same switch share all but their last hops.
  std::vector<uint64_t> pci_path;
};

struct MachineTopology {
  std::string source;  // "this machine", or the XML path
  int packages = 0;
  int numa_nodes = 0;
  int cores = 0;
  int pus = 0;
  std::vector<PciDevice> gpus;
  std::vector<PciDevice> nics;
};

/// Loads the topology; xml_path empty: GICL_TOPO_FILE if set, else the running machine.
/// Without hwloc in the build it reports CPUs from the OS and no PCI devices.
Status load_machine_topology(const std::string& xml_path, MachineTopology* out);

/// The NICs closest to the GPU at `gpu_bus_id`: those on its NUMA node (all NICs when the
/// locality is unknown). The proxy and IBGDA transports pick their NIC from this list.
std::vector<const PciDevice*> nics_near(const MachineTopology& t, const std::string& gpu_bus_id);

/// The PUs of an hwloc cpuset string ("0x000000f0", or 32-bit words "0x1,0xffffffff" with the
/// most significant first), ascending. Empty for an empty or malformed string.
std::vector<int> cpuset_pus(const std::string& cpuset);

/// A core for the network proxy of the GPU at `gpu_bus_id`: a PU close to the GPU (its NUMA
/// node's), the last one for the first GPU of that node, the one before for the second, and so
/// on, among the PUs in `allowed` (the process's affinity; empty: any). `sharer` is the rank's
/// index among the ranks on that GPU: the second sharer of each GPU goes on once every GPU of
/// the node has one, so no two busy-polling proxies take turns on one core while the node has
/// others. -1 when the GPU or its locality is unknown.
int proxy_core(const MachineTopology& t, const std::string& gpu_bus_id,
               const std::vector<int>& allowed, int sharer = 0);

/// Multi-line human-readable summary (gicl-info, GICL_DEBUG=INFO).
std::string describe(const MachineTopology& t);

/// True when the build has hwloc.
bool have_hwloc();

}  // namespace gicl
