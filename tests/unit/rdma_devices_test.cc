// SPDX-License-Identifier: Apache-2.0
// RDMA device listing through the run-time loaded rdma-core table: a mock table stands in for a
// machine with two devices (the machines here have none), the real table lists what the kernel
// has (none here: the "no device" path, real), and libgicl.so itself does not link rdma-core or
// libfabric, so it loads where they are absent.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/verbs_api.hpp"
#include "topology/rdma_devices.hpp"

namespace gicl {
namespace {

// A fake machine: two devices, one of which fails to open (its port count stays 0).
ibv_device g_devs[2];
ibv_device* g_list[3] = {&g_devs[0], &g_devs[1], nullptr};
ibv_context g_ctx;
int g_open = 0, g_freed = 0;

VerbsApi mock() {
  VerbsApi a{};
  a.get_device_list = [](int* n) {
    *n = 2;
    return g_list;
  };
  a.free_device_list = [](ibv_device**) { ++g_freed; };
  a.get_device_name = [](ibv_device* d) { return d == &g_devs[0] ? "mlx5_0" : "mlx5_1"; };
  a.get_device_guid = [](ibv_device* d) {
    return static_cast<__be64>(d == &g_devs[0] ? 0xab : 0xcd);
  };
  a.open_device = [](ibv_device* d) -> ibv_context* {
    if (d != &g_devs[0]) return nullptr;
    ++g_open;
    return &g_ctx;
  };
  a.close_device = [](ibv_context*) {
    --g_open;
    return 0;
  };
  a.query_device = [](ibv_context*, ibv_device_attr* attr) {
    attr->phys_port_cnt = 2;
    return 0;
  };
  return a;
}

TEST(RdmaDevices, ListsWhatTheTableReportsAndClosesWhatItOpens) {
  if (!have_verbs()) GTEST_SKIP() << "built without rdma-core headers";
  const VerbsApi table = mock();
  set_verbs_api_for_testing(&table);
  std::vector<RdmaDevice> devs;
  const Status s = list_rdma_devices(&devs);
  set_verbs_api_for_testing(nullptr);
  ASSERT_TRUE(s.ok()) << last_error();
  ASSERT_EQ(devs.size(), 2u);
  EXPECT_EQ(devs[0].name, "mlx5_0");
  EXPECT_EQ(devs[0].guid, "00000000000000ab");
  EXPECT_EQ(devs[0].ports, 2);
  EXPECT_EQ(devs[1].name, "mlx5_1");
  EXPECT_EQ(devs[1].ports, 0);  // could not be opened
  EXPECT_EQ(g_open, 0) << "a device left open";
  EXPECT_EQ(g_freed, 1);
}

TEST(RdmaDevices, TheRealTableListsThisMachinesDevices) {
  if (!have_verbs()) GTEST_SKIP() << "built without rdma-core headers";
  std::vector<RdmaDevice> devs;
  ASSERT_TRUE(list_rdma_devices(&devs).ok()) << last_error();
  // Whatever the kernel has; every entry is named.
  for (const auto& d : devs) EXPECT_FALSE(d.name.empty());
  const VerbsApi* v = nullptr;
  if (verbs_api(&v).ok()) {
    EXPECT_NE(v->get_device_list, nullptr);
    EXPECT_NE(v->modify_qp, nullptr);
  } else {
    EXPECT_NE(std::string(last_error()).find("libibverbs.so.1"), std::string::npos);
  }
}

/// The DT_NEEDED entries of an ELF64 shared library.
std::vector<std::string> needed_libraries(const std::string& bytes) {
  std::vector<std::string> out;
  if (bytes.size() < sizeof(Elf64_Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
    return out;
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof(eh));
  auto section = [&](int i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, bytes.data() + eh.e_shoff + static_cast<size_t>(i) * eh.e_shentsize,
                sizeof(sh));
    return sh;
  };
  for (int i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr dyn = section(i);
    if (dyn.sh_type != SHT_DYNAMIC) continue;
    const Elf64_Shdr str = section(static_cast<int>(dyn.sh_link));
    for (size_t off = 0; off + sizeof(Elf64_Dyn) <= dyn.sh_size; off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      std::memcpy(&d, bytes.data() + dyn.sh_offset + off, sizeof(d));
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_NEEDED) out.emplace_back(bytes.data() + str.sh_offset + d.d_un.d_val);
    }
  }
  return out;
}

// The shared library's dynamic section names no network library: both load at run time.
TEST(RdmaDevices, LibgiclDoesNotLinkRdmaCoreOrLibfabric) {
  const char* dir = std::getenv("GICL_TEST_BINARY_DIR");
  if (dir == nullptr) GTEST_SKIP() << "GICL_TEST_BINARY_DIR is not set";
  const std::string lib = std::string(dir) + "/src/libgicl.so";
  std::ifstream f(lib, std::ios::binary);
  if (!f) GTEST_SKIP() << lib << " is not built";
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::vector<std::string> needed = needed_libraries(bytes);
  ASSERT_FALSE(needed.empty()) << lib << ": no DT_NEEDED entry read (not an ELF64 library?)";
  bool libc = false;
  for (const std::string& n : needed) {
    libc = libc || n.rfind("libc.so", 0) == 0;
    EXPECT_EQ(n.find("ibverbs"), std::string::npos) << lib << " links " << n;
    EXPECT_EQ(n.find("fabric"), std::string::npos) << lib << " links " << n;
    EXPECT_EQ(n.find("mlx5"), std::string::npos) << lib << " links " << n;
  }
  EXPECT_TRUE(libc) << "the reader found no libc among the needed libraries";
}

}  // namespace
}  // namespace gicl
