// SPDX-License-Identifier: Apache-2.0
// Which NICs each GPU uses: the closest by PCIe distance, shared out among the GPUs that are
// equally close to them, up to GICL_NET_RAILS each (several NICs per GPU serve as rails).
#pragma once

#include <string>
#include <vector>

#include "topology/machine.hpp"

namespace gicl {

/// PCIe distance between two devices, nearest first (NCCL's PIX / PXB / PHB / NODE / SYS).
enum class PciDistance : int {
  kSwitch = 0,      // behind one PCIe switch
  kSwitches = 1,    // behind several switches, below one host bridge
  kHostBridge = 2,  // through the host bridge (the CPU's root complex)
  kNumaNode = 3,    // other host bridges of the same NUMA node
  kSystem = 4,      // across NUMA nodes (the inter-socket link), or locality unknown
};
const char* pci_distance_name(PciDistance d);

PciDistance pci_distance(const PciDevice& a, const PciDevice& b);

struct NicChoice {
  std::vector<int> nics;  // indexes into MachineTopology::nics, the first is the primary
  PciDistance distance = PciDistance::kSystem;
};

/// The NICs of every GPU of `t` (in t.gpus order). A GPU's candidates are the NICs at its
/// smallest distance; GPUs with the same candidates share them out evenly (each takes
/// max(1, candidates / sharers), starting at its turn among the sharers), at most `max_rails`
/// (0: no cap). Empty lists when the machine has no NIC.
std::vector<NicChoice> assign_nics(const MachineTopology& t, int max_rails);

/// The choice for the GPU at `gpu_bus_id` (case-insensitive), or an empty choice.
NicChoice nics_for_gpu(const MachineTopology& t, const std::string& gpu_bus_id, int max_rails);

/// One line per GPU: "cuda0 0000:11:00.0 -> mlx5_0 (switch)" (gicl-info, GICL_DEBUG=INFO).
std::string describe_nic_choice(const MachineTopology& t, int max_rails);

}  // namespace gicl
