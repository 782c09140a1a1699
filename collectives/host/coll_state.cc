// SPDX-License-Identifier: Apache-2.0
#include "collectives/host/coll_state.hpp"

#include <memory>
#include <vector>

#include "collectives/host/residency.hpp"
#include "collectives/schedule/p2p.hpp"
#include "common/cuda.hpp"
#include "common/settings.hpp"
#include "core/comm.hpp"

namespace gicl::coll {

CollState::~CollState() {
  // The proxy first: its copies may still read or write the buffers below.
  p2p_proxy.reset();
  // The staging lives in the heap and goes with it; the local part is ours.
  if (local) GICL_CUDA_WARN(cudaFree(local));
  for (void* p : a2a_space) GICL_CUDA_WARN(cudaFree(p));
  for (cudaStream_t s : ce_streams) GICL_CUDA_WARN(cudaStreamDestroy(s));
  for (cudaEvent_t e : ce_join) GICL_CUDA_WARN(cudaEventDestroy(e));
  if (ce_fork) GICL_CUDA_WARN(cudaEventDestroy(ce_fork));
}

namespace {
size_t align_up(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}

/// Consecutive parts of one allocation, each starting on a 256-byte boundary.
class Layout {
 public:
  /// Offset of a new part of `bytes` bytes.
  size_t add(size_t bytes) {
    const size_t at = end_;
    end_ = align_up(end_ + bytes, 256);
    return at;
  }
  size_t size() const { return end_; }

 private:
  size_t end_ = 0;
};

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
/// GICL_EPOCH_BASE: every rank's completed epoch, this rank's LL operation counts with each peer
/// and the credits of its LL rows start at the base, as if that many calls had run (each rank
/// sets its own copies; every rank sets the same base).
Status start_counters_at(const CollScratch& s, int nranks) {
  int64_t base = 0;
  GICL_CHECK(setting_int(Setting::kEpochBase, &base));
  if (base == 0) return GICL_SUCCESS;
  const size_t n = static_cast<size_t>(nranks);
  const uint64_t b = static_cast<uint64_t>(base);
  const std::vector<uint64_t> epochs(n, b), credits(n * kP2pLLSlots, b);
  std::vector<P2pCounts> counts(n);
  for (P2pCounts& pc : counts) pc.ll_sent = pc.ll_rcvd = b;
  GICL_CHECK(upload_device(s.epoch, epochs.data(), n * sizeof(uint64_t)));
  GICL_CHECK(upload_device(s.p2p_ll_credit, credits.data(), credits.size() * sizeof(uint64_t)));
  return upload_device(s.p2p, counts.data(), n * sizeof(P2pCounts));
}
}  // namespace

CollScratch launch_scratch(const gicl_comm* comm, const CollState* st) {
  CollScratch s = st->scratch;
  s.regs = comm->registry ? comm->registry->device_table() : nullptr;
  return s;
}

Status coll_state(gicl_comm* c, CollState** out) {
  if (c->coll_state) {
    *out = static_cast<CollState*>(c->coll_state.get());
    return GICL_SUCCESS;
  }
  // The first collective may be the first call captured into a graph: the set-up runs outside
  // the capture (host calls, allocations and zeroing on a private stream).
  RelaxedCapture relaxed;
  gicl_device_comm_t dc;
  GICL_CHECK(device_comm_handle(c, &dc));
  int64_t stage_setting = 0;
  GICL_CHECK(setting_int(Setting::kCollScratchSize, &stage_setting));
  const size_t n = static_cast<size_t>(c->nranks);
  const size_t stage = align_up(static_cast<size_t>(stage_setting), 4096);
  // The pipe FIFOs share the staging budget: one slot per (sender, channel, slot).
  size_t slot = stage / (n * kPipeChannels * kPipeSlots) / 256 * 256;
  if (slot < 4096) slot = 4096;
  auto st = std::make_shared<CollState>();
  GICL_CHECK(load_tuner_config(&st->cfg));
  // The tuner's LL128 range and a forced LL128 consult it; a forced LL or SIMPLE does not pay
  // the n^2 / 2 driver queries.
  st->all_nvlink = (st->cfg.proto == Proto::kAuto || st->cfg.proto == Proto::kLL128) &&
                   all_pairs_nvlink(c->peers);
  GICL_CHECK(resident_blocks(c->peers, &st->resident_blocks));
  st->time_sliced = ranks_time_slice_a_gpu(c->peers);
  int64_t ce_share = 100;
  GICL_CHECK(setting_int(Setting::kP2pCopyEngineShare, &ce_share));
  st->p2p_ce_share = static_cast<int>(ce_share);
  // Symmetric part, in one heap block: every rank carves the same offsets. The flags, LL rows
  // and LL128 lines are zeroed (one range); the FIFO slots after them need not be.
  const size_t ll_entries = ll_capacity(c->nranks) / 4;
  Layout h;
  const size_t stage_at = h.add(2 * stage);
  const size_t ready_at = h.add(2 * kMaxBlocks * n * sizeof(Ready));
  const size_t done_at = h.add(kMaxBlocks * n * sizeof(uint64_t));
  const size_t pushed_at = h.add(kMaxBlocks * n * sizeof(uint64_t));
  const size_t swapped_at = h.add(kMaxBlocks * n * sizeof(uint64_t));
  const size_t epoch_at = h.add(n * sizeof(uint64_t));
  const size_t head_at = h.add(n * kPipeChannels * sizeof(uint64_t));
  const size_t tail_at = h.add(n * kPipeChannels * sizeof(uint64_t));
  const size_t offers_at = h.add(n * kMaxP2pOps * sizeof(P2pOffer));
  const size_t offers_read_at = h.add(n * sizeof(uint64_t));
  const size_t zc_bytes_at = h.add(n * sizeof(uint64_t));
  const size_t ll_at = h.add(2 * n * ll_entries * sizeof(uint64_t));
  const size_t ll128_at = h.add(2 * n * ll128_row_bytes(c->nranks));
  const size_t p2p_ll_entries = p2p_ll_capacity(c->nranks) / 4;
  const size_t p2p_ll_at = h.add(kP2pLLSlots * n * p2p_ll_entries * sizeof(uint64_t));
  const size_t p2p_credit_at = h.add(kP2pLLSlots * n * sizeof(uint64_t));
  const size_t p2p_sizes_at = h.add(n * kPipeChannels * kPipeSlots * sizeof(uint64_t));
  const size_t inbox_at = h.add(n * kPipeChannels * kPipeSlots * slot);
  GICL_CHECK(c->heap->alloc(h.size(), &st->heap_block));
  device_resources_note_heap(c);
  char* p = static_cast<char*>(st->heap_block);
  CollScratch& s = st->scratch;
  s.stage[0] = p + stage_at;
  s.stage[1] = p + stage_at + stage;
  s.stage_bytes = stage;
  s.ready = reinterpret_cast<Ready*>(p + ready_at);
  s.done = reinterpret_cast<uint64_t*>(p + done_at);
  s.pushed = reinterpret_cast<uint64_t*>(p + pushed_at);
  s.swapped = reinterpret_cast<uint64_t*>(p + swapped_at);
  s.epoch = reinterpret_cast<uint64_t*>(p + epoch_at);
  s.head = reinterpret_cast<uint64_t*>(p + head_at);
  s.tail = reinterpret_cast<uint64_t*>(p + tail_at);
  s.offers = reinterpret_cast<P2pOffer*>(p + offers_at);
  s.offers_read = reinterpret_cast<uint64_t*>(p + offers_read_at);
  s.zc_bytes = reinterpret_cast<uint64_t*>(p + zc_bytes_at);
  s.ll = reinterpret_cast<uint64_t*>(p + ll_at);
  s.ll_entries = ll_entries;
  s.ll128 = p + ll128_at;
  s.ll128_row = ll128_row_bytes(c->nranks);
  s.p2p_ll = reinterpret_cast<uint64_t*>(p + p2p_ll_at);
  s.p2p_ll_entries = p2p_ll_entries;
  s.p2p_ll_credit = reinterpret_cast<uint64_t*>(p + p2p_credit_at);
  s.inbox = p + inbox_at;
  s.p2p_sizes = reinterpret_cast<uint64_t*>(p + p2p_sizes_at);
  s.slot_bytes = slot;
  // LL entries and LL128 lines carry their epoch as a flag, point-to-point LL entries their
  // operation's sequence number: zero (never either) until first written.
  GICL_CHECK(zero_device(p + ready_at, inbox_at - ready_at));
  // Local part: counters and sequence numbers (zeroed), then the work space.
  Layout lo;
  const size_t finished_at = lo.add(sizeof(uint32_t));
  const size_t readers_at = lo.add(kMaxP2pOps * sizeof(uint32_t));
  const size_t ll_done_at = lo.add(sizeof(uint32_t));
  const size_t ll_read_at = lo.add(kMaxP2pOps * sizeof(uint32_t));
  const size_t seq_at = lo.add(n * kPipeChannels * 2 * sizeof(uint64_t));
  const size_t p2p_at = lo.add(n * sizeof(P2pCounts));
  const size_t temp_at = lo.add(stage);
  GICL_CUDA_CHECK(cudaMalloc(&st->local, lo.size()));
  GICL_CHECK(zero_device(st->local, temp_at));
  char* l = static_cast<char*>(st->local);
  s.finished = reinterpret_cast<uint32_t*>(l + finished_at);
  s.p2p_readers = reinterpret_cast<uint32_t*>(l + readers_at);
  s.p2p_ll_done = reinterpret_cast<uint32_t*>(l + ll_done_at);
  s.p2p_ll_read = reinterpret_cast<uint32_t*>(l + ll_read_at);
  s.seq = reinterpret_cast<uint64_t*>(l + seq_at);
  s.p2p = reinterpret_cast<P2pCounts*>(l + p2p_at);
  s.temp = l + temp_at;
  GICL_CHECK(start_counters_at(s, c->nranks));
  // No rank may signal into a peer's flags before that peer has zeroed them.
  GICL_CHECK(c->bootstrap->barrier());
  c->coll_state = st;
  *out = st.get();
  return GICL_SUCCESS;
}

}  // namespace gicl::coll
