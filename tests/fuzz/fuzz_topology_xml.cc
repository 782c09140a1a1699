// SPDX-License-Identifier: Apache-2.0
// The machine-topology loader on arbitrary hwloc XML (GICL_TOPO_FILE): the input is written to a
// file and loaded; it loads or is refused with a message, and what loads is consistent (every
// GPU and NIC a PCI device with a bus id).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_common.hpp"
#include "topology/machine.hpp"

namespace {
std::string g_path;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz_quiet_logs();
  // A memory file: no disk traffic per input, and a path hwloc can open.
  const int fd = memfd_create("gicl-fuzz-topology", 0);
  if (fd < 0) __builtin_trap();
  g_path = "/proc/self/fd/" + std::to_string(fd);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = std::stoi(g_path.substr(g_path.rfind('/') + 1));
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))
    __builtin_trap();
  gicl::MachineTopology t;
  if (!gicl::load_machine_topology(g_path, &t).ok()) return 0;
  for (const auto* list : {&t.gpus, &t.nics})
    for (const gicl::PciDevice& d : *list)
      if (d.bus_id.empty()) __builtin_trap();
  return 0;
}
