// SPDX-License-Identifier: Apache-2.0
// The verbs backend against an emulated RC fabric (unit/verbs_mock.hpp; no RDMA NIC exists on
// the project's machines): device and port choice and the "no device" path, the queue pairs'
// RESET -> INIT -> RTR -> RTS walk with InfiniBand and RoCE addressing, writes, reads and
// immediates (more than the receives kept posted), flushes after what preceded them, atomics with
// both reply byte orders and swap built of compare-swap, GPU memory registered as a DMA-BUF, bad
// arguments named, and a dead or silent peer failing the operations to it by name.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fcntl.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <vector>

#include "common/verbs_api.hpp"
#include "net/transport.hpp"
#include "net/verbs/verbs_memory.hpp"
#include "unit/verbs_mock.hpp"

namespace gicl::net {
namespace {

using test::MockConfig;

/// Installs the emulated fabric for a test and takes it away after.
class NetVerbs : public ::testing::Test {
 protected:
  void install(const MockConfig& cfg = {}) {
    table_ = test::mock_verbs(cfg);
    set_verbs_api_for_testing(&table_);
  }
  void TearDown() override {
    for (auto& r : regions_) r.reset();
    for (auto& t : t_) t.reset();
    set_verbs_api_for_testing(nullptr);
    set_dmabuf_export_for_testing(nullptr);
    unsetenv("GICL_VERBS_DEVICE");
    unsetenv("GICL_VERBS_GID_INDEX");
  }

  /// Two ranks of one job in this process, connected through the bootstrap's byte layout.
  Status open_pair(int64_t timeout_ms = 5000) {
    std::vector<uint8_t> all;
    for (int r = 0; r < 2; ++r) {
      OpenArgs a;
      a.rank = r;
      a.nranks = 2;
      a.max_inflight = 256;
      a.timeout_ms = timeout_ms;
      GICL_CHECK(open_transport(Backend::kVerbs, a, &t_[r]));
    }
    const size_t stride = t_[0]->address_bytes();
    all.resize(stride * 2);
    for (int r = 0; r < 2; ++r) GICL_CHECK(t_[r]->local_address(all.data() + r * stride));
    for (int r = 0; r < 2; ++r) GICL_CHECK(t_[r]->connect(all.data(), stride));
    return GICL_SUCCESS;
  }
  /// A registered host region of `bytes` on rank r, and every rank's key of it.
  void region(int r, size_t bytes) {
    mem_[r].assign(bytes, 0);
    ASSERT_TRUE(t_[r]->register_memory(mem_[r].data(), bytes, MemKind::kHost, &regions_[r]).ok())
        << last_error();
    keys_[r] = regions_[r]->remote_key();
  }
  /// Polls both ranks (manual progress: targets too) until `done` or 5 s.
  bool pump(const std::function<bool()>& done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done()) {
      for (int r = 0; r < 2; ++r) {
        Event ev[64];
        int n = 0;
        if (!t_[r]->poll(ev, 64, &n).ok()) return false;
        events_[r].insert(events_[r].end(), ev, ev + n);
      }
      if (std::chrono::steady_clock::now() > end) return false;
    }
    return true;
  }
  int count(int r, EventKind k) const {
    return static_cast<int>(std::count_if(events_[r].begin(), events_[r].end(),
                                          [&](const Event& e) { return e.kind == k; }));
  }

  VerbsApi table_{};
  std::unique_ptr<Transport> t_[2];
  std::unique_ptr<Region> regions_[2];
  std::vector<uint8_t> mem_[2];
  RemoteKey keys_[2]{};
  std::vector<Event> events_[2];
};

TEST_F(NetVerbs, WithoutADeviceOpeningFailsAndSaysWhy) {
  OpenArgs a;
  std::unique_ptr<Transport> t;
  // This machine as it is: rdma-core absent, or present with no RDMA device.
  Status s = open_transport(Backend::kVerbs, a, &t);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), GICL_UNSUPPORTED);
  EXPECT_TRUE(std::strstr(last_error(), "RDMA device") != nullptr ||
              std::strstr(last_error(), "rdma-core") != nullptr)
      << last_error();
  install(MockConfig{.devices = 0});
  s = open_transport(Backend::kVerbs, a, &t);
  EXPECT_EQ(s.code(), GICL_UNSUPPORTED);
  EXPECT_NE(std::strstr(last_error(), "no RDMA device"), nullptr) << last_error();
  install(MockConfig{.port_active = false});
  s = open_transport(Backend::kVerbs, a, &t);
  EXPECT_EQ(s.code(), GICL_UNSUPPORTED);
  EXPECT_NE(std::strstr(last_error(), "mock_0:1 is not active"), nullptr) << last_error();
  install(MockConfig{.devices = 2});
  setenv("GICL_VERBS_DEVICE", "mlx5_9", 1);
  s = open_transport(Backend::kVerbs, a, &t);
  EXPECT_EQ(s.code(), GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(last_error(), "GICL_VERBS_DEVICE='mlx5_9'"), nullptr) << last_error();
  EXPECT_NE(std::strstr(last_error(), "mock_0, mock_1"), nullptr) << last_error();
  setenv("GICL_VERBS_DEVICE", "mock_1:x", 1);
  EXPECT_EQ(open_transport(Backend::kVerbs, a, &t).code(), GICL_INVALID_ARGUMENT);
  setenv("GICL_VERBS_DEVICE", "mock_1:1", 1);
  ASSERT_TRUE(open_transport(Backend::kVerbs, a, &t).ok()) << last_error();
  EXPECT_NE(t->describe().find("mock_1:1 (InfiniBand, LID 7)"), std::string::npos) << t->describe();
  t.reset();
  EXPECT_EQ(test::mock_live_qps(), 0);
  EXPECT_EQ(test::mock_live_mrs(), 0);
  // The GPU's closest NICs (NIC affinity) choose the device unless GICL_VERBS_DEVICE does; names
  // rdma-core does not know (a network interface's) are passed over.
  unsetenv("GICL_VERBS_DEVICE");
  a.nics = {"ib3", "mock_1", "mock_0"};
  ASSERT_TRUE(open_transport(Backend::kVerbs, a, &t).ok()) << last_error();
  EXPECT_NE(t->describe().find("mock_1:1"), std::string::npos) << t->describe();
  t.reset();
  setenv("GICL_VERBS_DEVICE", "mock_0", 1);
  ASSERT_TRUE(open_transport(Backend::kVerbs, a, &t).ok()) << last_error();
  EXPECT_NE(t->describe().find("mock_0:1"), std::string::npos) << t->describe();
  t.reset();
  unsetenv("GICL_VERBS_DEVICE");
  a.nics = {"eth0"};
  ASSERT_TRUE(open_transport(Backend::kVerbs, a, &t).ok()) << last_error();
  EXPECT_NE(t->describe().find("mock_0:1"), std::string::npos) << t->describe();
}

TEST_F(NetVerbs, QueuePairsWalkFromResetToReadyToSendTowardEachPeer) {
  for (bool ethernet : {false, true}) {
    SCOPED_TRACE(ethernet ? "RoCE" : "InfiniBand");
    install(MockConfig{.ethernet = ethernet});
    ASSERT_TRUE(open_pair().ok()) << last_error();
    const auto& log = test::mock_transitions();
    // Two ranks, a queue pair per peer each (one loops back): 4 x (INIT, RTR, RTS).
    ASSERT_EQ(log.size(), 12u);
    std::set<uint32_t> qpns;
    for (const auto& m : log) {
      EXPECT_EQ(m.rc, 0) << "qp " << m.qpn << " " << m.from << " -> " << m.to;
      qpns.insert(m.qpn);
      if (m.to == IBV_QPS_RTR) {
        EXPECT_EQ(m.attr.path_mtu, IBV_MTU_4096);
        EXPECT_EQ(m.attr.ah_attr.is_global, ethernet ? 1 : 0);
        if (ethernet) {
          EXPECT_EQ(m.attr.ah_attr.grh.sgid_index, 1);  // the IPv4-mapped GID
          EXPECT_EQ(m.attr.ah_attr.grh.dgid.raw[12], 10);
        } else {
          EXPECT_EQ(m.attr.ah_attr.dlid, 7);
        }
      }
    }
    ASSERT_EQ(qpns.size(), 4u);
    for (uint32_t q : qpns) EXPECT_EQ(test::mock_qp_state(q), IBV_QPS_RTS);
    // Each rank's queue pair to the other points at the other's queue pair to it, and its own
    // loops back to itself.
    int self = 0;
    for (const auto& m : log)
      if (m.to == IBV_QPS_RTR && m.attr.dest_qp_num == m.qpn) ++self;
    EXPECT_EQ(self, 2);
    t_[0].reset();
    t_[1].reset();
    EXPECT_EQ(test::mock_live_qps(), 0);
  }
}

TEST_F(NetVerbs, WritesReadsAndImmediatesLandAndAFlushFollowsThem) {
  install();
  ASSERT_TRUE(open_pair().ok()) << last_error();
  region(0, 1 << 16);
  region(1, 1 << 16);
  for (size_t i = 0; i < mem_[0].size(); ++i) mem_[0][i] = static_cast<uint8_t>(i * 7 + 1);
  for (size_t i = 0; i < mem_[1].size(); ++i) mem_[1][i] = static_cast<uint8_t>(i * 13 + 5);
  const std::vector<uint8_t> theirs = mem_[1];
  // Odd sizes and offsets; then 200 immediates, more than the 64 receives kept posted.
  const size_t sizes[] = {1, 3, 4096, 777};
  size_t at = 0;
  for (uint64_t i = 0; i < 4; ++i, at += 8192)
    ASSERT_TRUE(
        t_[0]->write(1, *regions_[0], mem_[0].data() + 1 + at, keys_[1], at + 3, sizes[i], i).ok())
        << last_error();
  for (uint64_t i = 0; i < 200; ++i)
    ASSERT_TRUE(t_[0]
                    ->write_imm(1, *regions_[0], mem_[0].data(), keys_[1], 40000 + i * 8, 8,
                                0xabc00000u + i, 100 + i, Completion::kDelivered)
                    .ok())
        << last_error();
  ASSERT_TRUE(t_[0]->flush(1, 999).ok());
  ASSERT_TRUE(pump([&] {
    return count(0, EventKind::kDone) == 205 && count(1, EventKind::kImmediate) == 200;
  })) << last_error();
  EXPECT_EQ(events_[0].back().cookie, 999u);  // the flush fires after everything before it
  std::set<uint64_t> imms;
  for (const Event& e : events_[1])
    if (e.kind == EventKind::kImmediate) imms.insert(e.value);
  ASSERT_EQ(imms.size(), 200u);
  EXPECT_EQ(*imms.begin(), 0xabc00000u);
  at = 0;
  for (size_t i = 0; i < 4; ++i, at += 8192)
    EXPECT_EQ(std::memcmp(mem_[1].data() + at + 3, mem_[0].data() + 1 + at, sizes[i]), 0) << i;
  // A read returns the peer's bytes; a write to this rank itself loops back.
  ASSERT_TRUE(t_[0]->read(1, *regions_[0], mem_[0].data() + 100, keys_[1], 60000, 500, 7).ok());
  ASSERT_TRUE(t_[0]->write(0, *regions_[0], mem_[0].data(), keys_[0], 30000, 64, 8).ok());
  ASSERT_TRUE(pump([&] { return count(0, EventKind::kDone) == 207; }));
  EXPECT_EQ(std::memcmp(mem_[0].data() + 100, theirs.data() + 60000, 500), 0);
  EXPECT_EQ(std::memcmp(mem_[0].data() + 30000, mem_[0].data(), 64), 0);
  for (const Event& e : events_[0]) EXPECT_EQ(e.status, GICL_SUCCESS) << e.cookie;
  EXPECT_FALSE(test::mock_cq_overflowed());
  EXPECT_EQ(t_[0]->inflight(), 0);
}

class NetVerbsAtomics : public NetVerbs, public ::testing::WithParamInterface<uint32_t> {};

TEST_P(NetVerbsAtomics, AreExactWhateverByteOrderTheAdapterReplies) {
  install(MockConfig{.vendor_id = GetParam()});
  ASSERT_TRUE(open_pair().ok()) << last_error();
  region(0, 4096);
  region(1, 4096);
  // Tickets from both ranks, one word at rank 1: each handed out once.
  for (int i = 0; i < 100; ++i)
    for (int r = 0; r < 2; ++r)
      ASSERT_TRUE(t_[r]->atomic(1, AtomicOp::kFetchAdd, keys_[1], 64, 1, 0, i).ok())
          << last_error();
  ASSERT_TRUE(pump([&] { return count(0, EventKind::kDone) + count(1, EventKind::kDone) == 200; }));
  std::set<uint64_t> tickets;
  for (int r = 0; r < 2; ++r)
    for (const Event& e : events_[r]) tickets.insert(e.value);
  EXPECT_EQ(tickets.size(), 200u);
  EXPECT_EQ(*tickets.rbegin(), 199u);
  uint64_t word = 0;
  std::memcpy(&word, mem_[1].data() + 64, 8);
  EXPECT_EQ(word, 200u);
  // Swap on a word that is not 0: the first compare-swap misses, the retry lands.
  events_[0].clear();
  ASSERT_TRUE(t_[0]->atomic(1, AtomicOp::kSwap, keys_[1], 64, 0x1234567890ull, 0, 1).ok());
  ASSERT_TRUE(pump([&] { return count(0, EventKind::kDone) == 1; }));
  EXPECT_EQ(events_[0][0].value, 200u);
  std::memcpy(&word, mem_[1].data() + 64, 8);
  EXPECT_EQ(word, 0x1234567890ull);
  // Compare-swap that matches, then one that does not.
  ASSERT_TRUE(t_[0]->atomic(1, AtomicOp::kCompareSwap, keys_[1], 64, 11, 0x1234567890ull, 2).ok());
  ASSERT_TRUE(pump([&] { return count(0, EventKind::kDone) == 2; }));
  ASSERT_TRUE(t_[0]->atomic(1, AtomicOp::kCompareSwap, keys_[1], 64, 99, 5, 3).ok());
  ASSERT_TRUE(t_[0]->atomic(1, AtomicOp::kAdd, keys_[1], 72, 5, 0, 4).ok());
  ASSERT_TRUE(pump([&] { return count(0, EventKind::kDone) == 4; }));
  EXPECT_EQ(events_[0][1].value, 0x1234567890ull);
  EXPECT_EQ(events_[0][2].value, 11u);
  std::memcpy(&word, mem_[1].data() + 64, 8);
  EXPECT_EQ(word, 11u);
  std::memcpy(&word, mem_[1].data() + 72, 8);
  EXPECT_EQ(word, 5u);
}

// Mellanox (big-endian replies on this host) and another vendor (host order).
INSTANTIATE_TEST_SUITE_P(Vendors, NetVerbsAtomics, ::testing::Values(0x02c9u, 0x8086u));

int g_exported_fd = -1;

Status fake_export(void* base, size_t, int* fd, uint64_t* offset) {
  *fd = memfd_create("gicl_test_dmabuf", 0);
  if (*fd < 0) return GICL_FAIL(GICL_SYSTEM_ERROR, "memfd_create: %s", std::strerror(errno));
  g_exported_fd = *fd;
  *offset = reinterpret_cast<uintptr_t>(base) % 4096;
  return GICL_SUCCESS;
}

TEST_F(NetVerbs, GpuMemoryRegistersAsADmabufAtItsVirtualAddress) {
  install();
  set_dmabuf_export_for_testing(fake_export);
  ASSERT_TRUE(open_pair().ok()) << last_error();
  EXPECT_TRUE(t_[0]->caps().cuda_memory);
  region(0, 4096);
  // Host memory stands in for the GPU's: the emulated NIC reaches it at the registered iova.
  std::vector<uint8_t> gpu(10000, 0);
  std::unique_ptr<Region> g;
  ASSERT_TRUE(t_[1]->register_memory(gpu.data() + 16, 9000, MemKind::kCuda, &g).ok())
      << last_error();
  ASSERT_EQ(test::mock_dmabufs().size(), 1u);
  const test::MockDmabuf& d = test::mock_dmabufs()[0];
  EXPECT_EQ(d.iova, reinterpret_cast<uint64_t>(gpu.data() + 16));
  EXPECT_EQ(d.length, 9000u);
  EXPECT_EQ(d.offset, reinterpret_cast<uint64_t>(gpu.data() + 16) % 4096);
  EXPECT_EQ(fcntl(g_exported_fd, F_GETFD), -1);  // closed: the registration holds the buffer
  EXPECT_EQ(g->remote_key().addr, reinterpret_cast<uint64_t>(gpu.data() + 16));
  std::memset(mem_[0].data(), 0x5a, 100);
  ASSERT_TRUE(t_[0]->write(1, *regions_[0], mem_[0].data(), g->remote_key(), 500, 100, 1).ok());
  ASSERT_TRUE(pump([&] { return count(0, EventKind::kDone) == 1; }));
  EXPECT_EQ(gpu[16 + 500], 0x5a);
  EXPECT_EQ(gpu[16 + 599], 0x5a);
  g.reset();
  // rdma-core without ibv_reg_dmabuf_mr: GPU memory is refused, named.
  regions_[0].reset();
  t_[0].reset();
  t_[1].reset();
  install(MockConfig{.dmabuf = false});
  ASSERT_TRUE(open_pair().ok()) << last_error();
  EXPECT_FALSE(t_[0]->caps().cuda_memory);
  EXPECT_EQ(t_[0]->register_memory(gpu.data(), 4096, MemKind::kCuda, &g).code(), GICL_UNSUPPORTED);
  EXPECT_NE(std::strstr(last_error(), "GPU memory"), nullptr) << last_error();
}

TEST_F(NetVerbs, BadArgumentsAreNamedAndNothingIsPosted) {
  install();
  {
    // Before connecting: operations are refused; another backend's address, and a peer whose
    // port has the other link layer, are named, and no queue pair leaves INIT.
    std::unique_ptr<Transport> t[2];
    for (int r = 0; r < 2; ++r) {
      OpenArgs a;
      a.rank = r;
      a.nranks = 2;
      ASSERT_TRUE(open_transport(Backend::kVerbs, a, &t[r]).ok()) << last_error();
    }
    std::vector<uint8_t> m(64);
    std::unique_ptr<Region> r;
    ASSERT_TRUE(t[0]->register_memory(m.data(), m.size(), MemKind::kHost, &r).ok());
    EXPECT_EQ(t[0]->write(1, *r, m.data(), r->remote_key(), 0, 8, 0).code(), GICL_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(last_error(), "not connected"), nullptr) << last_error();
    const size_t stride = t[0]->address_bytes();
    std::vector<uint8_t> all(stride * 2);
    ASSERT_TRUE(t[0]->local_address(all.data()).ok());
    ASSERT_TRUE(t[1]->local_address(all.data() + stride).ok());
    std::vector<uint8_t> bad = all;
    bad[stride] ^= 0xff;
    EXPECT_EQ(t[0]->connect(bad.data(), stride).code(), GICL_REMOTE_ERROR);
    EXPECT_NE(std::strstr(last_error(), "rank 1's address is not a verbs address"), nullptr)
        << last_error();
    bad = all;
    bad[stride + 6] = 1;  // VerbsAddressHeader::ethernet
    EXPECT_EQ(t[0]->connect(bad.data(), stride).code(), GICL_REMOTE_ERROR);
    EXPECT_NE(std::strstr(last_error(), "rank 1's port is Ethernet (RoCE)"), nullptr)
        << last_error();
    for (const auto& m : test::mock_transitions()) EXPECT_NE(m.to, IBV_QPS_RTR);
    ASSERT_TRUE(t[0]->connect(all.data(), stride).ok()) << last_error();
    EXPECT_EQ(t[0]->connect(all.data(), stride).code(), GICL_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(last_error(), "connected already"), nullptr) << last_error();
  }
  ASSERT_TRUE(open_pair().ok()) << last_error();
  region(0, 256);
  region(1, 256);
  Transport& t = *t_[0];
  const Region& r = *regions_[0];
  EXPECT_EQ(t.write(2, r, mem_[0].data(), keys_[1], 0, 8, 0).code(), GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(last_error(), "peer 2"), nullptr) << last_error();
  EXPECT_EQ(
      t.write_imm(1, r, mem_[0].data(), keys_[1], 0, 8, uint64_t{1} << 32, 0, Completion::kSent)
          .code(),
      GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(last_error(), "4 bytes verbs carries"), nullptr) << last_error();
  EXPECT_EQ(t.write(1, r, mem_[0].data(), keys_[1], 250, 8, 0).code(), GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(last_error(), "exceeds the remote region"), nullptr) << last_error();
  EXPECT_EQ(t.read(1, r, mem_[0].data() + 200, keys_[1], 0, 100, 0).code(), GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(last_error(), "outside its registered region"), nullptr) << last_error();
  EXPECT_EQ(t.atomic(1, AtomicOp::kSwap, keys_[1], 3, 1, 0, 0).code(), GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(last_error(), "not 8-byte aligned"), nullptr) << last_error();
  RemoteKey other = keys_[1];
  other.backend = static_cast<uint8_t>(Backend::kOfi);
  EXPECT_EQ(t.write(1, r, mem_[0].data(), other, 0, 8, 0).code(), GICL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(last_error(), "not a key of the verbs backend"), nullptr) << last_error();
  EXPECT_EQ(t.inflight(), 0);
  // A registration the device refuses is reported with the reason.
  for (int i = 0; i < 2; ++i) regions_[i].reset(), t_[i].reset();
  install(MockConfig{.fail_reg_mr = true});
  OpenArgs a;
  std::unique_ptr<Transport> refused;
  EXPECT_EQ(open_transport(Backend::kVerbs, a, &refused).code(), GICL_SYSTEM_ERROR);
  EXPECT_NE(std::strstr(last_error(), "ibv_reg_mr"), nullptr) << last_error();
}

TEST_F(NetVerbs, ADeadPeerFailsTheOperationsToItNamed) {
  install();
  ASSERT_TRUE(open_pair().ok()) << last_error();
  region(0, 4096);
  region(1, 4096);
  // Rank 1's node is gone: its queue pair for rank 0 no longer answers.
  const auto& log = test::mock_transitions();
  uint32_t rank1_to_rank0 = 0;
  for (const auto& m : log)
    if (m.to == IBV_QPS_RTR && m.attr.dest_qp_num != m.qpn) rank1_to_rank0 = m.qpn;
  // The last RTR with a peer is rank 1's (ranks connect in order).
  test::mock_kill(rank1_to_rank0);
  ASSERT_TRUE(t_[0]->write(1, *regions_[0], mem_[0].data(), keys_[1], 0, 64, 1).ok());
  ASSERT_TRUE(t_[0]->write(1, *regions_[0], mem_[0].data(), keys_[1], 64, 64, 2).ok());
  ASSERT_TRUE(t_[0]->flush(1, 3).ok());
  ASSERT_TRUE(pump([&] { return count(0, EventKind::kDone) == 3; }));
  for (const Event& e : events_[0]) EXPECT_EQ(e.status, GICL_REMOTE_ERROR) << e.cookie;
  EXPECT_EQ(t_[0]->write(1, *regions_[0], mem_[0].data(), keys_[1], 0, 8, 4).code(),
            GICL_REMOTE_ERROR);
  EXPECT_NE(std::strstr(last_error(), "rank 1"), nullptr) << last_error();
  // This rank's own queue pair is unaffected.
  ASSERT_TRUE(t_[0]->write(0, *regions_[0], mem_[0].data(), keys_[0], 1024, 8, 5).ok());
  ASSERT_TRUE(pump([&] { return count(0, EventKind::kDone) == 4; }));
  EXPECT_EQ(events_[0].back().status, GICL_SUCCESS);
}

TEST_F(NetVerbs, AnOperationNobodyAnswersTimesOutNamingThePeer) {
  install();
  ASSERT_TRUE(open_pair(200).ok()) << last_error();
  region(0, 4096);
  region(1, 4096);
  test::mock_hold(true);
  ASSERT_TRUE(t_[0]->write(1, *regions_[0], mem_[0].data(), keys_[1], 0, 64, 1).ok());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(pump([&] { return count(0, EventKind::kDone) == 1; }));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(events_[0][0].status, GICL_TIMEOUT);
  EXPECT_EQ(t_[0]->write(1, *regions_[0], mem_[0].data(), keys_[1], 0, 8, 2).code(),
            GICL_REMOTE_ERROR);
  EXPECT_NE(std::strstr(last_error(), "rank 1"), nullptr) << last_error();
  // The provider hands the operation back later: its slot frees, no second event.
  test::mock_hold(false);
  ASSERT_TRUE(pump([&] { return t_[0]->inflight() == 0; }));
  EXPECT_EQ(count(0, EventKind::kDone), 1);
}

}  // namespace
}  // namespace gicl::net
