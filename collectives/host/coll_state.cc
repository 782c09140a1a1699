#include "collectives/host/coll_state.hpp"

#include <memory>

#include "common/cuda.hpp"
#include "common/log.hpp"
#include "common/settings.hpp"
#include "core/comm.hpp"

namespace ccl::coll {

CollState::~CollState() {
  // The staging lives in the heap and goes with it; the local part is ours.
  if (local) cudaFree(local);
  cudaGetLastError();
}

namespace {
size_t align_up(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}

/// NVLink between every pair of the ranks' GPUs, as this process's CUDA sees them: native peer
/// atomics, which NVLink has and PCIe peer mappings lack. Every rank asks about every pair (each
/// sees all its peers' GPUs, or collectives would not run), so all reach the same answer. Any
/// failed query answers no: LL128 is then never used, which is always safe.
bool all_pairs_nvlink(const std::vector<PeerInfo>& peers) {
  return every_gpu_pair(peers, [](const PeerInfo& a, const PeerInfo& b) {
    if (a.host_hash != b.host_hash) return false;  // bus ids name devices of one host only
    int da = -1, db = -1, atomics = 0;
    const bool ok = cudaDeviceGetByPCIBusId(&da, a.pci_bus_id) == cudaSuccess &&
                    cudaDeviceGetByPCIBusId(&db, b.pci_bus_id) == cudaSuccess &&
                    cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, da,
                                              db) == cudaSuccess;
    if (!ok) cudaGetLastError();  // answered no; leave no sticky error behind
    return ok && atomics != 0;
  });
}
}  // namespace

CollScratch launch_scratch(const ccl_comm* comm, const CollState* st) {
  CollScratch s = st->scratch;
  s.regs = comm->registry ? comm->registry->device_table() : nullptr;
  return s;
}

Status coll_state(ccl_comm* c, CollState** out) {
  if (c->coll_state) {
    *out = static_cast<CollState*>(c->coll_state.get());
    return CCL_SUCCESS;
  }
  // The first collective may be the first call captured into a graph: the set-up runs outside
  // the capture (host calls, allocations and zeroing on a private stream).
  RelaxedCapture relaxed;
  ccl_device_comm_t dc;
  CCL_CHECK(device_comm_handle(c, &dc));
  int64_t stage_setting = 0;
  CCL_CHECK(setting_int(Setting::kCollScratchSize, &stage_setting));
  const size_t n = static_cast<size_t>(c->nranks);
  const size_t stage = align_up(static_cast<size_t>(stage_setting), 4096);
  // The pipe FIFOs share the staging budget: one slot per (sender, channel, slot).
  size_t slot = stage / (n * kPipeChannels * kPipeSlots) / 256 * 256;
  if (slot < 4096) slot = 4096;
  const size_t ready = align_up(2 * kMaxBlocks * n * sizeof(Ready), 256);
  const size_t done = align_up(kMaxBlocks * n * sizeof(uint64_t), 256);
  const size_t epoch = align_up(n * sizeof(uint64_t), 256);
  const size_t inbox = n * kPipeChannels * kPipeSlots * slot;
  const size_t fifo_flags = align_up(n * kPipeChannels * sizeof(uint64_t), 256);
  const size_t offers = align_up(n * kMaxP2pOps * sizeof(P2pOffer), 256);
  const size_t peer_words = align_up(n * sizeof(uint64_t), 256);
  auto st = std::make_shared<CollState>();
  CCL_CHECK(load_tuner_config(&st->cfg));
  // Only a forced LL128 consults it: n^2 / 2 driver queries are not paid otherwise.
  st->all_nvlink = st->cfg.proto == Proto::kLL128 && all_pairs_nvlink(c->peers);
  int major = 0;
  if (st->cfg.pdl)
    CCL_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, c->device));
  st->pdl = st->cfg.pdl && major >= 9;
  CCL_INFO(kSubsysColl, "rank %d: collective kernels launched %s", c->rank,
           st->pdl       ? "with programmatic dependent launch"
           : st->cfg.pdl ? "plainly (no programmatic dependent launch before sm_90)"
                         : "plainly (CCL_PDL=0)");
  const size_t ll_entries = ll_capacity(c->nranks) / 4;
  const size_t ll = 2 * n * ll_entries * sizeof(uint64_t);
  const size_t ll128 = 2 * n * ll128_row_bytes(c->nranks);
  CCL_CHECK(c->heap->alloc(2 * stage + ready + done + epoch + inbox + 2 * fifo_flags + offers +
                               2 * peer_words + ll + ll128,
                           &st->heap_block));
  device_resources_note_heap(c);
  char* p = static_cast<char*>(st->heap_block);
  CollScratch& s = st->scratch;
  s.stage[0] = p;
  s.stage[1] = p + stage;
  s.stage_bytes = stage;
  p += 2 * stage;
  char* flags_begin = p;
  s.ready = reinterpret_cast<Ready*>(p);
  p += ready;
  s.done = reinterpret_cast<uint64_t*>(p);
  p += done;
  s.epoch = reinterpret_cast<uint64_t*>(p);
  p += epoch;
  s.head = reinterpret_cast<uint64_t*>(p);
  p += fifo_flags;
  s.tail = reinterpret_cast<uint64_t*>(p);
  p += fifo_flags;
  s.offers = reinterpret_cast<P2pOffer*>(p);
  p += offers;
  s.offers_read = reinterpret_cast<uint64_t*>(p);
  p += peer_words;
  s.zc_bytes = reinterpret_cast<uint64_t*>(p);
  p += peer_words;
  s.ll = reinterpret_cast<uint64_t*>(p);
  s.ll_entries = ll_entries;
  p += ll;
  s.ll128 = p;
  s.ll128_row = ll128_row_bytes(c->nranks);
  p += ll128;
  // LL entries and LL128 lines carry their epoch as a flag: zero (never an epoch) until first
  // written.
  CCL_CHECK(zero_device(flags_begin, static_cast<size_t>(p - flags_begin)));
  s.inbox = p;
  s.slot_bytes = slot;
  const size_t seq = align_up(n * kPipeChannels * 2 * sizeof(uint64_t), 256);
  const size_t p2p = align_up(n * sizeof(P2pCounts), 256);
  const size_t counted = 2 * 256 + seq + p2p;  // zeroed: counters and sequence numbers
  CCL_CUDA_CHECK(cudaMalloc(&st->local, counted + stage));
  CCL_CHECK(zero_device(st->local, counted));
  char* l = static_cast<char*>(st->local);
  s.finished = reinterpret_cast<uint32_t*>(l);
  s.p2p_readers = reinterpret_cast<uint32_t*>(l + 256);
  s.seq = reinterpret_cast<uint64_t*>(l + 2 * 256);
  s.p2p = reinterpret_cast<P2pCounts*>(l + 2 * 256 + seq);
  s.temp = l + counted;
  // No rank may signal into a peer's flags before that peer has zeroed them.
  CCL_CHECK(c->bootstrap->barrier());
  c->coll_state = st;
  *out = st.get();
  return CCL_SUCCESS;
}

}  // namespace ccl::coll
