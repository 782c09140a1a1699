// SPDX-License-Identifier: Apache-2.0
#include "collectives/host/coll_state.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "collectives/host/residency.hpp"
#include "collectives/host/scratch_layout.hpp"
#include "collectives/schedule/p2p.hpp"
#include "common/cuda.hpp"
#include "common/settings.hpp"
#include "core/comm.hpp"
#include "core/net_path.hpp"

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

namespace {

/// The settings and machine facts the tuner and the planner read once, at the first collective.
Status read_config(gicl_comm* c, CollState* st) {
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
  return GICL_SUCCESS;
}

/// The scratch (scratch_layout.hpp): the symmetric part in one heap block, at the same offsets
/// on every rank, and the local part in device memory; their flags and counters zeroed.
Status allocate_scratch(gicl_comm* c, CollState* st) {
  int64_t stage_setting = 0;
  GICL_CHECK(setting_int(Setting::kCollScratchSize, &stage_setting));
  const bool network =
      std::find(c->paths.begin(), c->paths.end(), PeerPath::kNetwork) != c->paths.end();
  // The staged network path's host FIFOs carry messages of at most their slot's bytes (every
  // rank computes the same sizes); the outbox is then not needed.
  int64_t host_fifos = 0;
  GICL_CHECK(setting_int(Setting::kNetHostFifos, &host_fifos));
  const HostFifos* fifos = network && host_fifos != 0 && c->net && c->net->fifos.out != nullptr
                               ? &c->net->fifos
                               : nullptr;
  static_assert(HostFifos::kLanes == kPipeChannels && HostFifos::kDepth == kPipeSlots,
                "a host FIFO lane is a pipe channel, its slots the channel's");
  ScratchSizes z =
      scratch_sizes(c->nranks, static_cast<size_t>(stage_setting), network && fifos == nullptr);
  if (fifos != nullptr) z.slot = std::min(z.slot, fifos->slot_bytes);
  const ScratchPlan plan = plan_scratch(z);
  GICL_CHECK(c->heap->alloc(plan.symmetric_bytes, &st->heap_block));
  device_resources_note_heap(c);
  GICL_CUDA_CHECK(cudaMalloc(&st->local, plan.local_bytes));
  char* sym = static_cast<char*>(st->heap_block);
  char* local = static_cast<char*>(st->local);
  place_scratch(z, plan, sym, local, &st->scratch);
  if (fifos != nullptr) {
    st->scratch.fifo_out = fifos->out;
    st->scratch.fifo_in = fifos->in;
    st->scratch.fifo_arrived = fifos->arrived;
    st->scratch.fifo_credits = fifos->credits;
    st->scratch.fifo_slot_bytes = fifos->slot_bytes;
  }
  // LL entries and LL128 lines carry their epoch as a flag, point-to-point LL entries their
  // operation's sequence number: zero (never either) until first written.
  GICL_CHECK(zero_device(sym + plan.symmetric_zero_from,
                         plan.symmetric_zero_to - plan.symmetric_zero_from));
  return zero_device(local + plan.local_zero_from, plan.local_zero_to - plan.local_zero_from);
}

}  // namespace

CollExt& coll_ext(gicl_comm* c) {
  if (!c->collectives) c->collectives = std::make_shared<CollExt>();
  return *static_cast<CollExt*>(c->collectives.get());
}

CollState* existing_coll_state(const gicl_comm* c) {
  return c->collectives ? static_cast<const CollExt*>(c->collectives.get())->state.get() : nullptr;
}

Status coll_state(gicl_comm* c, CollState** out) {
  CollExt& ext = coll_ext(c);
  if (ext.state) {
    *out = ext.state.get();
    return GICL_SUCCESS;
  }
  // The first collective may be the first call captured into a graph: the set-up runs outside
  // the capture (host calls, allocations and zeroing on a private stream).
  RelaxedCapture relaxed;
  gicl_device_comm_t dc;
  GICL_CHECK(device_comm_handle(c, &dc));
  auto st = std::make_shared<CollState>();
  GICL_CHECK(read_config(c, st.get()));
  GICL_CHECK(allocate_scratch(c, st.get()));
  GICL_CHECK(start_counters_at(st->scratch, c->nranks));
  // No rank may signal into a peer's flags before that peer has zeroed them.
  GICL_CHECK(c->bootstrap->barrier());
  ext.state = st;
  *out = st.get();
  return GICL_SUCCESS;
}

}  // namespace gicl::coll
