// SPDX-License-Identifier: Apache-2.0
#include "topology/machine.hpp"

#include <signal.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/settings.hpp"

#ifdef GICL_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace gicl {

bool have_hwloc() {
#ifdef GICL_HAVE_HWLOC
  return true;
#else
  return false;
#endif
}

namespace {

constexpr uint16_t kVendorNvidia = 0x10de;

#ifdef GICL_HAVE_HWLOC
bool is_gpu(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& a) {
  return a.vendor_id == kVendorNvidia && (a.class_id >> 8) == 0x03;  // display controller
}
bool is_nic(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& a) {
  return (a.class_id >> 8) == 0x02;  // network controller (Ethernet 0x0200, InfiniBand 0x0207)
}

PciDevice to_device(hwloc_topology_t topo, hwloc_obj_t obj) {
  const auto& a = obj->attr->pcidev;
  PciDevice d;
  char bus[32];
  std::snprintf(bus, sizeof(bus), "%04x:%02x:%02x.%01x", a.domain, a.bus, a.dev, a.func);
  d.bus_id = bus;
  d.vendor = a.vendor_id;
  d.device = a.device_id;
  d.class_id = a.class_id;
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, obj);
  if (anc != nullptr && anc->cpuset != nullptr) {
    char* s = nullptr;
    hwloc_bitmap_asprintf(&s, anc->cpuset);
    if (s) d.cpuset = s;
    free(s);
    if (anc->nodeset != nullptr && hwloc_bitmap_weight(anc->nodeset) == 1)
      d.numa_node = hwloc_bitmap_first(anc->nodeset);
  }
  for (hwloc_obj_t c = obj->io_first_child; c != nullptr; c = c->next_sibling)
    if (c->type == HWLOC_OBJ_OS_DEVICE && c->name) d.os_names.push_back(c->name);
  for (hwloc_obj_t p = obj->parent; p != nullptr && p->type == HWLOC_OBJ_BRIDGE; p = p->parent)
    d.pci_path.insert(d.pci_path.begin(), p->gp_index);
  return d;
}
#endif

#ifdef GICL_HAVE_HWLOC
/// Loads `path` in a child process first: hwloc 2.9 dereferences NULL on some malformed XML (an
/// object without a complete_cpuset, found by tests/fuzz), which must not take the caller down.
Status probe_xml(const std::string& path) {
  const pid_t pid = fork();
  GICL_SYSCHECK(pid, "fork (to check the hwloc XML topology)");
  if (pid == 0) {
    // The process's crash handlers (a sanitizer's, a framework's) are not for this child: a
    // crash here is an answer, reported by the parent.
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) signal(sig, SIG_DFL);
    hwloc_topology_t t;
    int ok = hwloc_topology_init(&t) == 0;
    ok = ok && hwloc_topology_set_xml(t, path.c_str()) == 0 && hwloc_topology_load(t) == 0;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) GICL_SYSCHECK(-1, "waitpid");
  if (WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0))
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "'%s' is not a valid hwloc XML topology (hwloc %s reading it%s%s)",
                     path.c_str(), WIFSIGNALED(status) ? "crashed" : "refused",
                     WIFSIGNALED(status) ? " with signal " : "",
                     WIFSIGNALED(status) ? std::to_string(WTERMSIG(status)).c_str() : "");
  return GICL_SUCCESS;
}
#endif

}  // namespace

Status load_machine_topology(const std::string& xml_path, MachineTopology* out) {
  *out = MachineTopology{};
  std::string path = xml_path;
  if (path.empty()) GICL_CHECK(setting_string(Setting::kTopoFile, &path));
#ifdef GICL_HAVE_HWLOC
  if (!path.empty()) GICL_CHECK(probe_xml(path));
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0)
    return GICL_FAIL(GICL_SYSTEM_ERROR, "hwloc_topology_init failed");
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (!path.empty() && hwloc_topology_set_xml(topo, path.c_str()) != 0) {
    hwloc_topology_destroy(topo);
    return GICL_FAIL(GICL_INVALID_ARGUMENT, "cannot read the hwloc XML topology '%s'",
                     path.c_str());
  }
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    return GICL_FAIL(GICL_SYSTEM_ERROR, "hwloc could not load the topology%s%s",
                     path.empty() ? "" : " from ", path.c_str());
  }
  out->source = path.empty() ? "this machine (hwloc)" : path;
  out->packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  out->numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  out->cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  out->pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, nullptr); o != nullptr;
       o = hwloc_get_next_pcidev(topo, o)) {
    if (is_gpu(o->attr->pcidev))
      out->gpus.push_back(to_device(topo, o));
    else if (is_nic(o->attr->pcidev))
      out->nics.push_back(to_device(topo, o));
  }
  hwloc_topology_destroy(topo);
#else
  if (!path.empty())
    return GICL_FAIL(GICL_UNSUPPORTED, "GICL_TOPO_FILE needs a build with hwloc (GICL_WITH_HWLOC)");
  out->source = "this machine (OS, no hwloc)";
  out->pus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
#endif
  return GICL_SUCCESS;
}

std::vector<const PciDevice*> nics_near(const MachineTopology& t, const std::string& gpu_bus_id) {
  int numa = -1;
  for (const auto& g : t.gpus)
    if (strcasecmp(g.bus_id.c_str(), gpu_bus_id.c_str()) == 0) numa = g.numa_node;
  std::vector<const PciDevice*> out;
  for (const auto& n : t.nics)
    if (numa < 0 || n.numa_node < 0 || n.numa_node == numa) out.push_back(&n);
  return out;
}

std::vector<int> cpuset_pus(const std::string& cpuset) {
  std::vector<int> pus;
  std::vector<uint32_t> words;  // most significant first
  size_t at = 0;
  while (at < cpuset.size()) {
    const size_t comma = cpuset.find(',', at);
    const std::string w =
        cpuset.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (w.size() < 3 || w.compare(0, 2, "0x") != 0 || w.size() > 10) return {};
    char* end = nullptr;
    const unsigned long v = std::strtoul(w.c_str() + 2, &end, 16);
    if (end == nullptr || *end != '\0') return {};
    words.push_back(static_cast<uint32_t>(v));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  for (size_t k = 0; k < words.size(); ++k) {
    const uint32_t w = words[words.size() - 1 - k];
    for (int b = 0; b < 32; ++b)
      if ((w >> b) & 1u) pus.push_back(static_cast<int>(32 * k) + b);
  }
  return pus;
}

int proxy_core(const MachineTopology& t, const std::string& gpu_bus_id,
               const std::vector<int>& allowed, int sharer) {
  const PciDevice* gpu = nullptr;
  for (const auto& g : t.gpus) {
    if (strcasecmp(g.bus_id.c_str(), gpu_bus_id.c_str()) == 0) {
      gpu = &g;
      break;
    }
  }
  if (gpu == nullptr) return -1;
  size_t before = 0;  // GPUs before this one with the same locality
  size_t alike = 0;   // GPUs with this one's locality, this one included
  bool seen = false;
  for (const auto& g : t.gpus) {
    if (&g == gpu) seen = true;
    if (g.cpuset != gpu->cpuset) continue;
    ++alike;
    if (!seen) ++before;
  }
  std::vector<int> pus;
  for (int p : cpuset_pus(gpu->cpuset))
    if (allowed.empty() || std::find(allowed.begin(), allowed.end(), p) != allowed.end())
      pus.push_back(p);
  if (pus.empty()) return -1;
  const size_t turn = before + static_cast<size_t>(std::max(sharer, 0)) * alike;
  return pus[pus.size() - 1 - turn % pus.size()];
}

std::string describe(const MachineTopology& t) {
  char line[256];
  std::string s;
  std::snprintf(line, sizeof(line),
                "topology from %s: %d package(s), %d NUMA node(s), %d core(s), %d PU(s)\n",
                t.source.c_str(), t.packages, t.numa_nodes, t.cores, t.pus);
  s += line;
  auto list = [&](const char* what, const std::vector<PciDevice>& v) {
    std::snprintf(line, sizeof(line), "  %s: %zu\n", what, v.size());
    s += line;
    for (const auto& d : v) {
      std::string names;
      for (const auto& n : d.os_names) names += (names.empty() ? "" : ",") + n;
      std::snprintf(line, sizeof(line), "    %s [%04x:%04x] class %04x numa %d %s\n",
                    d.bus_id.c_str(), d.vendor, d.device, d.class_id, d.numa_node, names.c_str());
      s += line;
    }
  };
  list("GPUs", t.gpus);
  list("NICs", t.nics);
  return s;
}

}  // namespace gicl
