// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "topology/machine.hpp"
#include "topology/nic_affinity.hpp"
#include "topology/peer_info.hpp"

namespace gicl {
namespace {

std::string data_file(const char* name) {
  const char* src = std::getenv("GICL_TEST_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/data/" + name;
}

TEST(Topology, ReadsSyntheticEightGpuMachine) {
  if (!have_hwloc()) GTEST_SKIP() << "built without hwloc";
  MachineTopology t;
  ASSERT_TRUE(load_machine_topology(data_file("dgx_h200_8gpu_4nic.xml"), &t).ok()) << last_error();
  EXPECT_EQ(t.packages, 2);
  EXPECT_EQ(t.numa_nodes, 2);
  EXPECT_EQ(t.cores, 8);
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 4u);
  EXPECT_EQ(t.gpus[0].bus_id, "0000:10:00.0");
  EXPECT_EQ(t.gpus[0].vendor, 0x10de);
  EXPECT_EQ(t.gpus[0].numa_node, 0);
  EXPECT_EQ(t.gpus[7].numa_node, 1);
  EXPECT_EQ(t.nics[0].class_id, 0x0207);
  ASSERT_FALSE(t.nics[0].os_names.empty());
  EXPECT_EQ(t.nics[0].os_names[0], "mlx5_0");
  // NIC affinity: a GPU on package 1 is served by the two NICs of package 1.
  auto near = nics_near(t, t.gpus[5].bus_id);
  ASSERT_EQ(near.size(), 2u);
  EXPECT_EQ(near[0]->os_names[0], "mlx5_2");
  EXPECT_EQ(near[1]->os_names[0], "mlx5_3");
  const std::string text = describe(t);
  EXPECT_NE(text.find("GPUs: 8"), std::string::npos);
  EXPECT_NE(text.find("NICs: 4"), std::string::npos);
}

TEST(Topology, MachinesWithoutNicsOrGpus) {
  if (!have_hwloc()) GTEST_SKIP() << "built without hwloc";
  MachineTopology t;
  ASSERT_TRUE(load_machine_topology(data_file("two_gpu_no_nic.xml"), &t).ok());
  EXPECT_EQ(t.gpus.size(), 2u);
  EXPECT_TRUE(t.nics.empty());
  EXPECT_TRUE(nics_near(t, t.gpus[0].bus_id).empty());
  ASSERT_TRUE(load_machine_topology(data_file("cpu_only_eth.xml"), &t).ok());
  EXPECT_TRUE(t.gpus.empty());
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].class_id, 0x0200);
}

// NIC affinity on synthetic 8-GPU machines: each GPU takes the NICs closest to it by PCIe
// distance, shared evenly among the GPUs equally close, up to GICL_NET_RAILS.
std::vector<std::vector<std::string>> nic_names(const MachineTopology& t, int rails,
                                                PciDistance* distance = nullptr) {
  std::vector<std::vector<std::string>> out;
  for (const NicChoice& c : assign_nics(t, rails)) {
    out.emplace_back();
    for (int n : c.nics) out.back().push_back(t.nics[n].os_names.at(0));
    if (distance != nullptr) *distance = c.distance;
  }
  return out;
}

MachineTopology load(const char* file) {
  MachineTopology t;
  EXPECT_TRUE(load_machine_topology(data_file(file), &t).ok()) << last_error();
  return t;
}

// A file on which hwloc 2.9 itself crashes (a Core without complete_cpuset; found by
// tests/fuzz/fuzz_topology_xml) is refused with a message; this process survives it. A file
// that is not there, or not XML, likewise.
TEST(Topology, AFileThatCrashesHwlocIsRefusedNotFatal) {
  if (!have_hwloc()) GTEST_SKIP() << "built without hwloc";
  MachineTopology t;
  Status s = load_machine_topology(data_file("hwloc_crash_missing_cpuset.xml"), &t);
  EXPECT_EQ(s.code(), GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error()).find("not a valid hwloc XML topology"), std::string::npos)
      << last_error();
  s = load_machine_topology(data_file("no_such_topology.xml"), &t);
  EXPECT_FALSE(s.ok());
  s = load_machine_topology(data_file("make_topologies.py"), &t);
  EXPECT_EQ(s.code(), GICL_INVALID_ARGUMENT) << last_error();
}

TEST(NicAffinity, TwoGpusShareTheNicOfTheirSwitch) {
  if (!have_hwloc()) GTEST_SKIP() << "built without hwloc";
  const MachineTopology t = load("hgx_8gpu_4nic_switches.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 4u);
  EXPECT_EQ(pci_distance(t.gpus[0], t.nics[0]), PciDistance::kSwitch);
  EXPECT_EQ(pci_distance(t.gpus[0], t.nics[1]), PciDistance::kHostBridge);
  EXPECT_EQ(pci_distance(t.gpus[0], t.nics[2]), PciDistance::kSystem);
  PciDistance d{};
  const auto names = nic_names(t, 0, &d);
  for (int g = 0; g < 8; ++g)
    EXPECT_EQ(names[g], std::vector<std::string>{"mlx5_" + std::to_string(g / 2)}) << "GPU " << g;
  EXPECT_EQ(d, PciDistance::kSwitch);
}

TEST(NicAffinity, OneNicPerGpuBehindItsSwitch) {
  if (!have_hwloc()) GTEST_SKIP() << "built without hwloc";
  const MachineTopology t = load("hgx_8gpu_8nic_switches.xml");
  const auto names = nic_names(t, 0);
  for (int g = 0; g < 8; ++g)
    EXPECT_EQ(names[g], std::vector<std::string>{"mlx5_" + std::to_string(g)}) << "GPU " << g;
}

TEST(NicAffinity, FourNicsPerGpuAreRailsCappedByTheSetting) {
  if (!have_hwloc()) GTEST_SKIP() << "built without hwloc";
  const MachineTopology t = load("hgx_8gpu_32nic_switches.xml");
  ASSERT_EQ(t.nics.size(), 32u);
  for (int rails : {0, 4, 8, 2, 1}) {
    const auto names = nic_names(t, rails);
    const int want = rails == 0 || rails > 4 ? 4 : rails;
    for (int g = 0; g < 8; ++g) {
      ASSERT_EQ(names[g].size(), static_cast<size_t>(want)) << "GPU " << g << " rails " << rails;
      for (int i = 0; i < want; ++i)
        EXPECT_EQ(names[g][i], "mlx5_" + std::to_string(4 * g + i)) << "GPU " << g;
    }
  }
}

TEST(NicAffinity, GpusOnAHostBridgeAlternateItsNicsAndAFarSocketSharesTheOnlyOnes) {
  if (!have_hwloc()) GTEST_SKIP() << "built without hwloc";
  const MachineTopology dgx = load("dgx_h200_8gpu_4nic.xml");
  const auto names = nic_names(dgx, 0);
  const char* want[] = {"mlx5_0", "mlx5_1", "mlx5_0", "mlx5_1",
                        "mlx5_2", "mlx5_3", "mlx5_2", "mlx5_3"};
  for (int g = 0; g < 8; ++g) EXPECT_EQ(names[g], std::vector<std::string>{want[g]}) << "GPU " << g;
  EXPECT_EQ(assign_nics(dgx, 0)[0].distance, PciDistance::kHostBridge);
  const MachineTopology one = load("hgx_8gpu_2nic_one_socket.xml");
  const auto choice = assign_nics(one, 0);
  EXPECT_EQ(choice[1].distance, PciDistance::kHostBridge);
  EXPECT_EQ(choice[5].distance, PciDistance::kSystem);
  const auto far = nic_names(one, 0);
  for (int g = 0; g < 8; ++g)
    EXPECT_EQ(far[g], std::vector<std::string>{g % 2 ? "mlx5_1" : "mlx5_0"}) << "GPU " << g;
  EXPECT_NE(describe_nic_choice(one, 0).find("cuda5 0000:"), std::string::npos);
  EXPECT_NE(describe_nic_choice(one, 0).find("mlx5_1 (system)"), std::string::npos);
}

TEST(NicAffinity, NoNicMeansNoChoice) {
  if (!have_hwloc()) GTEST_SKIP() << "built without hwloc";
  const MachineTopology t = load("two_gpu_no_nic.xml");
  for (const NicChoice& c : assign_nics(t, 0)) EXPECT_TRUE(c.nics.empty());
  EXPECT_TRUE(nics_for_gpu(t, t.gpus[0].bus_id, 0).nics.empty());
  EXPECT_NE(describe_nic_choice(t, 0).find("no NIC"), std::string::npos);
}

TEST(NicAffinity, DistanceFollowsTheSharedBridges) {
  PciDevice gpu, nic;
  gpu.pci_path = {1, 2, 3};  // host bridge 1, switch 2, switch 3
  nic.pci_path = {1, 2, 4};
  EXPECT_EQ(pci_distance(gpu, nic), PciDistance::kSwitches);
  nic.pci_path = {1, 2, 3};
  EXPECT_EQ(pci_distance(gpu, nic), PciDistance::kSwitch);
  nic.pci_path = {1, 5};
  EXPECT_EQ(pci_distance(gpu, nic), PciDistance::kHostBridge);
  nic.pci_path = {6};
  gpu.numa_node = nic.numa_node = 1;
  EXPECT_EQ(pci_distance(gpu, nic), PciDistance::kNumaNode);
  nic.numa_node = 0;
  EXPECT_EQ(pci_distance(gpu, nic), PciDistance::kSystem);
  EXPECT_EQ(nics_for_gpu(MachineTopology{}, "0000:00:00.0", 0).nics.size(), 0u);
}

TEST(ProxyCore, CpusetStringsParse) {
  EXPECT_EQ(cpuset_pus("0x000000f0"), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(cpuset_pus("0x00000001,0x80000000"), (std::vector<int>{31, 32}));
  EXPECT_TRUE(cpuset_pus("").empty());
  EXPECT_TRUE(cpuset_pus("0xzz").empty());
  EXPECT_TRUE(cpuset_pus("ff").empty());
}

// Each GPU's proxy on a core of its own NUMA node, GPUs of one node on different cores, within
// the process's affinity.
TEST(ProxyCore, NearTheGpuAndDistinctPerGpuOfANode) {
  if (!have_hwloc()) GTEST_SKIP() << "built without hwloc";
  const MachineTopology t = load("dgx_h200_8gpu_4nic.xml");  // 2 nodes x 4 cores, 4 GPUs each
  std::vector<int> cores;
  for (const auto& g : t.gpus) cores.push_back(proxy_core(t, g.bus_id, {}));
  EXPECT_EQ(cores, (std::vector<int>{3, 2, 1, 0, 7, 6, 5, 4}));
  EXPECT_EQ(proxy_core(t, t.gpus[0].bus_id, {0, 1, 6}), 1);  // the node's last allowed PU
  EXPECT_EQ(proxy_core(t, t.gpus[0].bus_id, {6, 7}), -1);    // none of the node's allowed
  EXPECT_EQ(proxy_core(t, "0000:ff:00.0", {}), -1);          // not a GPU of this machine
}

// Ranks sharing a GPU (MPS, threads of one process) get cores of their own while the node has
// some: the second sharer of each GPU after every GPU's first.
TEST(ProxyCore, RanksSharingAGpuGetCoresOfTheirOwn) {
  if (!have_hwloc()) GTEST_SKIP() << "built without hwloc";
  const MachineTopology t = load("two_gpu_no_nic.xml");  // 1 node, 4 cores, 2 GPUs
  ASSERT_EQ(t.gpus.size(), 2u);
  const std::string& a = t.gpus[0].bus_id;
  const std::string& b = t.gpus[1].bus_id;
  EXPECT_EQ((std::vector<int>{proxy_core(t, a, {}, 0), proxy_core(t, b, {}, 0),
                              proxy_core(t, a, {}, 1), proxy_core(t, b, {}, 1)}),
            (std::vector<int>{3, 2, 1, 0}));
  EXPECT_EQ(proxy_core(t, a, {}, 2), 3);      // more proxies than cores: they wrap around
  EXPECT_EQ(proxy_core(t, a, {1, 2}, 1), 2);  // within the affinity
}

TEST(Topology, BadXmlIsAnErrorNamingTheFile) {
  if (!have_hwloc()) GTEST_SKIP() << "built without hwloc";
  MachineTopology t;
  Status s = load_machine_topology("/nonexistent/topo.xml", &t);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(last_error()).find("/nonexistent/topo.xml"), std::string::npos);
}

TEST(Topology, TopoFileSettingIsUsed) {
  if (!have_hwloc()) GTEST_SKIP() << "built without hwloc";
  setenv("GICL_TOPO_FILE", data_file("two_gpu_no_nic.xml").c_str(), 1);
  MachineTopology t;
  ASSERT_TRUE(load_machine_topology("", &t).ok());
  unsetenv("GICL_TOPO_FILE");
  EXPECT_EQ(t.gpus.size(), 2u);
}

PeerInfo peer(int rank, uint64_t host, int device) {
  PeerInfo p{};
  p.rank = rank;
  p.host_hash = host;
  p.device = device;
  return p;
}

TEST(PeerPaths, SelfP2PAndNetwork) {
  // Ranks 0-2 on host A (rank 2 has no GPU), rank 3 on host B.
  std::vector<PeerInfo> peers = {peer(0, 1, 0), peer(1, 1, 1), peer(2, 1, -1), peer(3, 2, 0)};
  int asked = 0;
  auto paths = compute_paths(peers, 0, [&](const PeerInfo& p) {
    ++asked;
    return p.rank == 1;
  });
  EXPECT_EQ(paths[0], PeerPath::kSelf);
  EXPECT_EQ(paths[1], PeerPath::kP2P);
  EXPECT_EQ(paths[2], PeerPath::kNetwork);  // no device
  EXPECT_EQ(paths[3], PeerPath::kNetwork);  // other host: never asked
  EXPECT_EQ(asked, 1);
  auto denied = compute_paths(peers, 0, [](const PeerInfo&) { return false; });
  EXPECT_EQ(denied[1], PeerPath::kNetwork);
  // GICL_P2P_DISABLE=1 here: every other rank over the network, without asking.
  asked = 0;
  auto yes = [&](const PeerInfo&) {
    ++asked;
    return true;
  };
  peers[0].p2p_disabled = 1;
  auto disabled = compute_paths(peers, 0, yes);
  EXPECT_EQ(disabled, (std::vector<PeerPath>{PeerPath::kSelf, PeerPath::kNetwork,
                                             PeerPath::kNetwork, PeerPath::kNetwork}));
  EXPECT_EQ(asked, 0);
  // GICL_P2P_DISABLE=1 at rank 1 only: rank 0 reaches it over the network too, as it reaches 0.
  peers[0].p2p_disabled = 0;
  peers[1].p2p_disabled = 1;
  EXPECT_EQ(compute_paths(peers, 0, yes)[1], PeerPath::kNetwork);
  EXPECT_EQ(compute_paths(peers, 1, yes)[0], PeerPath::kNetwork);
  EXPECT_EQ(asked, 0);
  EXPECT_STREQ(peer_path_name(PeerPath::kP2P), "P2P");
}

TEST(PeerPaths, EveryGpuPairSkipsSharedGpusAndRanksWithoutOne) {
  std::vector<PeerInfo> peers = {peer(0, 1, 0), peer(1, 1, 1), peer(2, 1, 0), peer(3, 1, -1)};
  peers[0].uuid[0] = 10;
  peers[1].uuid[0] = 11;
  peers[2].uuid[0] = 10;  // rank 2 shares rank 0's GPU
  std::vector<std::pair<int, int>> asked;
  auto record = [&](const PeerInfo& a, const PeerInfo& b) {
    asked.push_back({a.rank, b.rank});
    return true;
  };
  EXPECT_TRUE(every_gpu_pair(peers, record));
  // (0,1) and (1,2) are two GPUs; (0,2) is one GPU; rank 3 has none.
  EXPECT_EQ(asked, (std::vector<std::pair<int, int>>{{0, 1}, {1, 2}}));
  EXPECT_FALSE(every_gpu_pair(
      peers, [](const PeerInfo& a, const PeerInfo& b) { return !(a.rank == 1 && b.rank == 2); }));
  EXPECT_TRUE(every_gpu_pair({peer(0, 1, 0)}, [](const PeerInfo&, const PeerInfo&) {
    return false;  // one rank: no pair to ask about
  }));
}

TEST(PeerPaths, HostHashIsStable) {
  EXPECT_EQ(host_hash(), host_hash());
}

// Node emulation: processes with different GICL_HOSTID are different nodes, the same value is
// one node, and neither equals the real host's identity.
TEST(PeerPaths, HostIdNamesTheNode) {
  const uint64_t real = host_hash();
  setenv("GICL_HOSTID", "node-a", 1);
  const uint64_t a = host_hash();
  EXPECT_EQ(a, host_hash());
  setenv("GICL_HOSTID", "node-b", 1);
  const uint64_t b = host_hash();
  unsetenv("GICL_HOSTID");
  EXPECT_NE(a, b);
  EXPECT_NE(a, real);
  EXPECT_EQ(host_hash(), real);
  PeerInfo me{};
  ASSERT_TRUE(local_peer_info(0, -1, 0, &me).ok()) << last_error();
  EXPECT_EQ(me.host_hash, real);
}

}  // namespace
}  // namespace gicl
