// SPDX-License-Identifier: Apache-2.0
#include "core/net_path.hpp"

#include <cuda_runtime_api.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "common/cuda.hpp"
#include "common/log.hpp"
#include "common/rank_list.hpp"
#include "common/settings.hpp"
#include "core/comm.hpp"
#include "core/device_state.hpp"
#include "memory/heap.hpp"
#include "net/connect.hpp"
#include "net/transport.hpp"
#include "proxy/cuda_copier.hpp"
#include "proxy/net_proxy.hpp"
#include "proxy/ring_memory.hpp"
#include "proxy/staged_delivery.hpp"
#include "topology/machine.hpp"
#include "topology/nic_affinity.hpp"
#include "topology/peer_info.hpp"

namespace gicl {

NetPath::NetPath() = default;
NetPath::~NetPath() {
  proxy.reset();  // the thread stops before anything it uses goes
}
NetPath::Pinned::~Pinned() {
  if (p != nullptr) (void)cudaFreeHost(p);  // teardown: nothing to report to
}
NetPath::DeviceBuffer::~DeviceBuffer() {
  if (p != nullptr) (void)cudaFree(p);
}

namespace {

constexpr uint32_t kRingSlots = 4096;

// Staging per peer shrinks with the rank count so that the area stays near 16 MiB: 8 receive
// slots of 256 KiB per peer up to 4 peers, at least 2. The host FIFOs take `fifo_bytes` each way
// (GICL_NET_FIFO_SIZE, 32 MiB: slots of 256 KiB on 2 ranks, 128 KiB on 4, 4 KiB from 128 ranks;
// on 2 x H200 over tcp;ofi_rxm, 256 KiB messages moved 128 MiB allreduces 1.6 x faster than
// 64 KiB ones; a message is also at most the collectives' own slot, 256 KiB on 2 ranks).
proxy::StagingLayout staging_layout(int nranks, size_t fifo_bytes) {
  proxy::StagingLayout l;
  l.nranks = nranks;
  l.recv_slots = static_cast<uint32_t>(std::clamp(32 / std::max(nranks, 1), 2, 8));
  l.fifo_lanes = HostFifos::kLanes;
  l.fifo_depth = HostFifos::kDepth;
  const size_t per_slot = fifo_bytes / (size_t(std::max(nranks, 1)) * l.fifo_slots());
  l.fifo_slot = static_cast<uint32_t>(std::clamp<size_t>(per_slot / 4096 * 4096, 4096, 1 << 20));
  return l;
}

/// The backend GICL_NET names (`*which`: the setting's value). AUTO keeps libfabric: its verbs
/// provider reaches the same NICs, and the verbs backend has never run on an RDMA NIC
/// (docs/transports.md); VERBS asks for it.
Status backend_setting(std::string* which, net::Backend* backend) {
  GICL_CHECK(setting_string(Setting::kNet, which));
  *backend = *which == "VERBS" ? net::Backend::kVerbs : net::Backend::kOfi;
  return GICL_SUCCESS;
}

/// Every rank's flag, one byte each.
Status rank_flags(gicl_comm* c, bool mine, std::vector<uint8_t>* v) {
  v->assign(c->nranks, 0);
  (*v)[c->rank] = mine ? 1 : 0;
  return c->bootstrap->allgather(v->data(), 1);
}

/// Every rank's flag: true when all are set.
Status all_ranks(gicl_comm* c, bool mine, bool* all, bool* any = nullptr) {
  std::vector<uint8_t> v;
  GICL_CHECK(rank_flags(c, mine, &v));
  *all = std::all_of(v.begin(), v.end(), [](uint8_t x) { return x != 0; });
  if (any != nullptr) *any = std::any_of(v.begin(), v.end(), [](uint8_t x) { return x != 0; });
  return GICL_SUCCESS;
}

/// This GPU's NICs by PCIe distance (topology/nic_affinity.hpp), nearest first, each by every name
/// the topology knows it by: its rails. Empty where the topology does not say.
std::vector<std::vector<std::string>> closest_nics(const gicl_comm* c,
                                                   const MachineTopology& machine) {
  std::vector<std::vector<std::string>> rails;
  int64_t most = 0;
  if (!setting_int(Setting::kNetRails, &most).ok()) return rails;
  const NicChoice ch = nics_for_gpu(machine, c->peers[c->rank].pci_bus_id, static_cast<int>(most));
  for (int i : ch.nics) rails.push_back(machine.nics[i].os_names);
  return rails;
}

/// The transport's NIC arguments from this rank's rails: `nics` every name nearest first (the
/// verbs backend opens the first rdma-core knows), and where some rank has several, `rails` as
/// many as the most any rank has, this rank's in turn, so that every rank opens as many
/// endpoints and endpoint k of each rank is on one of its NICs.
Status rail_args(gicl_comm* c, const std::vector<std::vector<std::string>>& mine,
                 net::OpenArgs* args) {
  for (const auto& names : mine) args->nics.insert(args->nics.end(), names.begin(), names.end());
  std::vector<uint32_t> counts(c->nranks, 0);
  counts[c->rank] = static_cast<uint32_t>(mine.size());
  GICL_CHECK(c->bootstrap->allgather(counts.data(), sizeof(uint32_t)));
  const uint32_t most = *std::max_element(counts.begin(), counts.end());
  if (most < 2) return GICL_SUCCESS;
  for (uint32_t k = 0; k < most; ++k)
    args->rails.push_back(mine.empty() ? std::vector<std::string>{} : mine[k % mine.size()]);
  return GICL_SUCCESS;
}

/// A core near this rank's GPU for the proxy thread, within the process's affinity, apart from
/// the proxies of the other ranks on the same GPU (MPS, or threads of one process: two proxies
/// on one core take turns by the scheduler's time slice, hundreds of microseconds a hop); -1
/// where the machine's topology does not say (`machine` null: no hwloc; an unknown GPU).
int choose_core(const gicl_comm* c, const MachineTopology* machine) {
  if (machine == nullptr) return -1;
  int sharer = 0;
  for (int r = 0; r < c->rank; ++r)
    if (c->peers[r].device >= 0 && same_gpu(c->peers[r], c->peers[c->rank])) ++sharer;
  std::vector<int> allowed;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) allowed.push_back(i);
  return proxy_core(*machine, c->peers[c->rank].pci_bus_id, allowed, sharer);
}

/// The staged path's streams against this process's hardware queues (check_net_queues), agreed:
/// a rank whose ranks' streams do not fit fails with the count, every other rank naming it.
/// `*linger`: this rank's copy agent's (GICL_NET_COPY_AGENT), 0 where it runs none.
Status fit_queues(gicl_comm* c, bool staged, std::chrono::microseconds* linger) {
  int64_t agent_us = 0;
  GICL_CHECK(setting_int(Setting::kNetCopyAgent, &agent_us));
  bool agent = agent_us > 0;
  std::string why;
  const Status fits = staged
                          ? check_net_queues(c->peers, c->rank,
                                             cuda_work_queues(c->peers[c->rank].mps), &agent, &why)
                          : Status();
  // Time-sliced with another process's rank (no MPS), a resident agent was seen to stall for
  // seconds, neither polling nor leaving (the MoE example over this path on 1 x H200: 7 of 24
  // runs stalled with an agent, 15 of 15 passed without); a time slice (about 2 ms) dwarfs what
  // the agent saves there anyway.
  const std::vector<int> sliced = ranks_time_sliced_with(c->peers, c->rank);
  if (fits.ok() && agent && !sliced.empty()) {
    agent = false;
    GICL_INFO(kSubsysNet,
              "rank %d: no copy agent: GPU %s is time-sliced with rank(s) %s (other processes, "
              "no MPS)",
              c->rank, c->peers[c->rank].pci_bus_id, rank_list(sliced).c_str());
  }
  *linger = std::chrono::microseconds(agent ? agent_us : 0);
  const std::string error = fits.ok() ? "" : last_error();
  std::vector<uint8_t> v;
  GICL_CHECK(rank_flags(c, fits.ok(), &v));
  if (!fits.ok()) return relay(fits.code(), error.c_str());
  std::vector<int> short_ranks;
  for (int r = 0; r < c->nranks; ++r)
    if (v[r] == 0) short_ranks.push_back(r);
  if (!short_ranks.empty())
    return GICL_FAIL(GICL_INVALID_USAGE,
                     "ranks %s: their network path's streams do not fit their process's hardware "
                     "queues (CUDA_DEVICE_MAX_CONNECTIONS; their error says how many)",
                     rank_list(short_ranks).c_str());
  if (!why.empty()) GICL_WARN(kSubsysNet, "rank %d: %s", c->rank, why.c_str());
  return GICL_SUCCESS;
}

Status open_path(gicl_comm* c, NetPath* n, const MachineTopology* machine,
                 std::chrono::microseconds linger) {
  const int me = c->rank;
  proxy::NetProxyArgs a;
  a.rank = me;
  a.transport = n->transport.get();
  a.device = c->device;
  a.cpu = choose_core(c, machine);
  char* own =
      c->heap->va_base() + static_cast<uint64_t>(c->heap->slot_of(me)) * c->heap->slot_bytes();
  const uint64_t heap_bytes = c->heap->max_bytes();
  const uint64_t* arrivals = nullptr;  // the staged path's barrier arrivals, mapped
  if (n->transport->caps().cuda_memory) {
    // The transport registers GPU memory (FI_HMEM / DMA-BUF): RMA straight between heaps.
    GICL_CHECK(n->transport->register_memory(own, heap_bytes, net::MemKind::kCuda, &n->region));
    std::vector<net::RemoteKey> keys;
    GICL_CHECK(net::exchange_keys(*c->bootstrap, *n->region, &keys));
    a.heap = proxy::HeapView{own, heap_bytes, n->region.get(), keys};
  } else {
    n->staged = true;
    proxy::StagingView sv;
    int64_t fifo_bytes = 0;
    GICL_CHECK(setting_int(Setting::kNetFifoSize, &fifo_bytes));
    sv.layout = staging_layout(c->nranks, static_cast<size_t>(fifo_bytes));
    GICL_CHECK(sv.layout.check());
    // Mapped: kernels read and write the host FIFOs in it.
    GICL_CUDA_CHECK(cudaHostAlloc(&n->staging.p, sv.layout.bytes(),
                                  cudaHostAllocPortable | cudaHostAllocMapped));
    std::memset(n->staging.p, 0, sv.layout.bytes());
    GICL_CHECK(n->transport->register_memory(n->staging.p, sv.layout.bytes(), net::MemKind::kHost,
                                             &n->region));
    GICL_CHECK(net::exchange_keys(*c->bootstrap, *n->region, &sv.keys));
    sv.base = static_cast<char*>(n->staging.p);
    sv.region = n->region.get();
    char* dev = nullptr;
    GICL_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), sv.base, 0));
    const proxy::StagingLayout& l = sv.layout;
    n->fifos.out = dev + l.fifo_out_offset(0, 0);
    n->fifos.in = dev + l.fifo_in_offset(0, 0);
    n->fifos.arrived = reinterpret_cast<const uint64_t*>(dev + l.fifo_arrived_offset(0, 0));
    n->fifos.credits = reinterpret_cast<const uint64_t*>(dev + l.fifo_credit_offset(0, 0));
    n->fifos.slot_bytes = l.fifo_slot;
    // Agreed through the peer exchange: a rank counts arrivals where its peers send them
    // (ProxyRingSet::arrivals), so one rank's GICL_NET_HOST_ARRIVALS=0 turns them off for all.
    if (std::all_of(c->peers.begin(), c->peers.end(),
                    [](const PeerInfo& p) { return p.net_host_arrivals != 0; }))
      arrivals = reinterpret_cast<const uint64_t*>(dev + l.arrivals_offset(0));
    net::RemoteKey bound{};
    bound.bytes = heap_bytes;  // every heap reserves the same range: it bounds requests
    a.heap =
        proxy::HeapView{own, heap_bytes, nullptr, std::vector<net::RemoteKey>(c->nranks, bound)};
    GICL_CHECK(proxy::CudaCopier::create(c->device, linger, &n->copier));
    int64_t timeout = 0, ack_hold = 0;
    GICL_CHECK(setting_int(Setting::kNetTimeout, &timeout));
    GICL_CHECK(setting_int(Setting::kNetAckHold, &ack_hold));
    a.delivery = proxy::make_staged_delivery(n->transport.get(), me, a.heap, sv, n->copier.get(),
                                             std::chrono::milliseconds(timeout),
                                             std::chrono::microseconds(ack_hold));
  }
  // The default queue pair's ring, the created queue pairs' rings, the arrivals' ring
  // (ProxyRingSet in gicl/device/detail/proxy_ring.h).
  int64_t qp_rings = 0;
  GICL_CHECK(setting_int(Setting::kNetQpRings, &qp_rings));
  ProxyRingSet set{};
  set.count = static_cast<uint32_t>(qp_rings) + 2;
  set.version = kProxyRingVersion;
  set.arrivals = arrivals;
  static_assert(kProxyInlineMax == 8, "GICL_NET_INLINE's range (settings.def)");
  int64_t inline_max = 0;
  GICL_CHECK(setting_int(Setting::kNetInline, &inline_max));
  set.inline_max = n->staged ? static_cast<uint32_t>(inline_max) : 0;
  for (uint32_t i = 0; i < set.count; ++i) {
    n->rings.emplace_back();
    GICL_CHECK(proxy::RingMemory::create(c->device, kRingSlots, &n->rings.back()));
    proxy::RingMemory& r = *n->rings.back();
    set.rings[i] = r.ring();
    a.rings.push_back(proxy::RingView{r.slots(), r.ring().size, r.tail(), r.done(), r.failed_word(),
                                      r.results(), r.ring().results_size});
  }
  {
    DeviceScope scope(c->device);
    GICL_CUDA_CHECK(cudaMalloc(&n->ring_dev.p, sizeof(ProxyRingSet)));
    GICL_CHECK(upload_device(n->ring_dev.p, &set, sizeof(ProxyRingSet)));
  }
  // Every pair connected, the lower rank first, before kernels can post. Where both ranks of a
  // pair sent their first write at once (the MoE example's first barrier on 4 x H200,
  // tcp;ofi_rxm), one side's write was refused (FI_EAGAIN) until the timeout while the other's
  // went through.
  int64_t timeout_ms = 0;
  GICL_CHECK(setting_int(Setting::kNetTimeout, &timeout_ms));
  GICL_CHECK(net::open_connections(*n->transport, *c->bootstrap, timeout_ms));
  n->proxy_core = a.cpu;
  GICL_CHECK(proxy::NetProxy::start(std::move(a), &n->proxy));
  return GICL_SUCCESS;
}

}  // namespace

Status net_path_open(gicl_comm* c) {
  if (!c->dev || !c->heap) return GICL_SUCCESS;  // alike on every rank (agreed heap handle)
  // Some ranks may have network peers and others none (GICL_P2P_DISABLE or GICL_HOSTID set on
  // some only): the path opens everywhere as soon as one rank needs it.
  const bool mine = std::any_of(c->paths.begin(), c->paths.end(),
                                [](PeerPath p) { return p == PeerPath::kNetwork; });
  bool all = false, any = false;
  GICL_CHECK(all_ranks(c, mine, &all, &any));
  if (!any) return GICL_SUCCESS;
  std::string which;
  net::Backend backend;
  GICL_CHECK(backend_setting(&which, &backend));
  const char* backend_label = backend == net::Backend::kVerbs ? "the verbs backend" : "libfabric";
  // One load of the machine's topology for the NIC list and the proxy's core.
  MachineTopology machine;
  const bool have_machine = load_machine_topology("", &machine).ok();
  auto n = std::make_unique<NetPath>();
  net::OpenArgs args;
  args.rank = c->rank;
  args.nranks = c->nranks;
  args.cancel = &c->cancel;
  GICL_CHECK(rail_args(
      c, have_machine ? closest_nics(c, machine) : std::vector<std::vector<std::string>>{}, &args));
  const Status opened = net::open_transport(backend, args, &n->transport);
  const std::string why = opened.ok() ? "" : last_error();
  GICL_CHECK(all_ranks(c, opened.ok(), &all));
  if (!all) {
    if (which != "AUTO")
      return opened.ok() ? GICL_FAIL(GICL_REMOTE_ERROR, "GICL_NET=%s: %s did not open on some rank",
                                     which.c_str(), backend_label)
                         : relay(opened.code(), why.c_str());
    GICL_INFO(kSubsysNet,
              "no network path (GICL_NET=AUTO): %s; operations to ranks on other nodes fail",
              opened.ok() ? "libfabric did not open on some rank" : why.c_str());
    return GICL_SUCCESS;
  }
  std::chrono::microseconds linger{0};
  GICL_CHECK(fit_queues(c, !n->transport->caps().cuda_memory, &linger));
  GICL_CHECK(net::connect_all(*n->transport, *c->bootstrap));
  GICL_CHECK(open_path(c, n.get(), have_machine ? &machine : nullptr, linger));
  GICL_INFO(kSubsysNet, "rank %d: network path %s, %s delivery, proxy on core %d", c->rank,
            n->transport->describe().c_str(), n->staged ? "staged" : "direct", n->proxy_core);
  c->dev->handle.net = n->ring_dev.p;
  c->net = std::move(n);
  return GICL_SUCCESS;
}

std::string net_backend_summary() {
  std::string which;
  net::Backend backend;
  if (!backend_setting(&which, &backend).ok()) return std::string("GICL_NET: ") + last_error();
  std::unique_ptr<net::Transport> t;
  if (!net::open_transport(backend, net::OpenArgs{}, &t).ok())
    return "GICL_NET=" + which + ": none (" + last_error() + ")";
  const net::Caps caps = t->caps();
  return "GICL_NET=" + which + ": " + t->describe() + "; atomics " + (caps.atomics ? "yes" : "no") +
         ", immediates of " + std::to_string(caps.imm_bytes) + " bytes, GPU memory " +
         (caps.cuda_memory ? "registered" : "staged through host memory");
}

bool net_path_error(const gicl_comm* c, gicl_result_t* code, std::string* text) {
  if (!c->net || !c->net->proxy) return false;
  *code = c->net->proxy->error(text);
  return *code != GICL_SUCCESS;
}

void net_path_kick(const gicl_comm* c) {
  if (c->net && c->net->proxy) c->net->proxy->kick();
}

}  // namespace gicl
