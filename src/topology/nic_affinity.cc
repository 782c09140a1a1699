// SPDX-License-Identifier: Apache-2.0
#include "topology/nic_affinity.hpp"

#include <strings.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace gicl {

const char* pci_distance_name(PciDistance d) {
  switch (d) {
    case PciDistance::kSwitch:
      return "switch";
    case PciDistance::kSwitches:
      return "switches";
    case PciDistance::kHostBridge:
      return "host bridge";
    case PciDistance::kNumaNode:
      return "NUMA node";
    default:
      return "system";
  }
}

PciDistance pci_distance(const PciDevice& a, const PciDevice& b) {
  const auto& pa = a.pci_path;
  const auto& pb = b.pci_path;
  size_t common = 0;
  while (common < pa.size() && common < pb.size() && pa[common] == pb[common]) ++common;
  if (common > 0) {
    // Hops from the deepest shared bridge: one below it on each side is "behind one switch"
    // when that bridge is a switch (not the host bridge, which is the path's first entry).
    const size_t hops = std::max(pa.size(), pb.size()) - common;
    if (common >= 2 && hops == 0) return PciDistance::kSwitch;
    if (common >= 2) return PciDistance::kSwitches;
    return PciDistance::kHostBridge;
  }
  if (a.numa_node >= 0 && a.numa_node == b.numa_node) return PciDistance::kNumaNode;
  return PciDistance::kSystem;
}

std::vector<NicChoice> assign_nics(const MachineTopology& t, int max_rails) {
  std::vector<NicChoice> out(t.gpus.size());
  if (t.nics.empty()) return out;
  // Each GPU's candidates: the NICs at its smallest distance, in NIC order.
  std::vector<std::vector<int>> cand(t.gpus.size());
  for (size_t g = 0; g < t.gpus.size(); ++g) {
    PciDistance best = PciDistance::kSystem;
    for (const PciDevice& n : t.nics) best = std::min(best, pci_distance(t.gpus[g], n));
    for (size_t n = 0; n < t.nics.size(); ++n)
      if (pci_distance(t.gpus[g], t.nics[n]) == best) cand[g].push_back(static_cast<int>(n));
    out[g].distance = best;
  }
  // GPUs with the same candidate list share it: the k-th of m sharers takes `each` NICs from
  // position k * each (wrapping), so that 4 GPUs over 2 NICs alternate and 1 GPU over 4 NICs
  // takes all 4.
  std::map<std::vector<int>, int> sharers, turn;
  for (const auto& c : cand) ++sharers[c];
  for (size_t g = 0; g < t.gpus.size(); ++g) {
    const auto& c = cand[g];
    const int m = sharers[c], size = static_cast<int>(c.size());
    int each = std::max(1, size / m);
    if (max_rails > 0) each = std::min(each, max_rails);
    const int k = turn[c]++;
    for (int i = 0; i < each; ++i) out[g].nics.push_back(c[(k * each + i) % size]);
  }
  return out;
}

NicChoice nics_for_gpu(const MachineTopology& t, const std::string& gpu_bus_id, int max_rails) {
  const auto all = assign_nics(t, max_rails);
  for (size_t g = 0; g < t.gpus.size(); ++g)
    if (strcasecmp(t.gpus[g].bus_id.c_str(), gpu_bus_id.c_str()) == 0) return all[g];
  return {};
}

std::string describe_nic_choice(const MachineTopology& t, int max_rails) {
  const auto all = assign_nics(t, max_rails);
  std::string s;
  for (size_t g = 0; g < t.gpus.size(); ++g) {
    const PciDevice& gpu = t.gpus[g];
    std::string line = "  " + (gpu.os_names.empty() ? std::string("gpu") : gpu.os_names[0]) + " " +
                       gpu.bus_id + " ->";
    if (all[g].nics.empty()) line += " no NIC";
    for (int n : all[g].nics) {
      const PciDevice& nic = t.nics[n];
      line += " " + (nic.os_names.empty() ? nic.bus_id : nic.os_names[0]);
    }
    if (!all[g].nics.empty()) line += std::string(" (") + pci_distance_name(all[g].distance) + ")";
    s += line + "\n";
  }
  return s;
}

}  // namespace gicl
