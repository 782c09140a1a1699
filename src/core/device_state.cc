// SPDX-License-Identifier: Apache-2.0
#include "core/device_state.hpp"

#include <cstdio>
#include <cstring>

#include "common/cuda.hpp"
#include "common/log.hpp"
#include "common/settings.hpp"
#include "core/comm.hpp"

namespace gicl {

namespace {

const char* op_name(uint32_t op) {
  static const char* kNames[] = {
      "?",          "put",      "get",        "p",      "g",
      "iput",       "iget",     "put_signal", "signal", "signal_wait_until",
      "wait_until", "atomic",   "barrier",    "sync",   "quiet",
      "fence",      "peer_ptr", "collective"};
  return op < sizeof(kNames) / sizeof(kNames[0]) ? kNames[op] : "?";
}

const char* cmp_name(uint32_t cmp) {
  static const char* kNames[] = {"==", "!=", ">", ">=", "<", "<=", "at least"};
  return cmp < 7 ? kNames[cmp] : "?";
}

}  // namespace

Status device_resources_create(gicl_comm* c) {
  auto d = std::make_unique<DeviceResources>();
  int64_t timeout_ms = 0, checks = 0;
  GICL_CHECK(setting_int(Setting::kWaitTimeout, &timeout_ms));
  GICL_CHECK(setting_int(Setting::kDeviceChecks, &checks));
  GICL_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&d->state_host),
                                sizeof(gicl_device_state_t), cudaHostAllocMapped));
  std::memset(d->state_host, 0, sizeof(gicl_device_state_t));
  d->state_host->version = GICL_DEVICE_ABI_VERSION;
  d->state_host->wait_timeout_ns = static_cast<uint64_t>(timeout_ms) * 1000000ull;
  GICL_CUDA_CHECK(
      cudaHostGetDevicePointer(reinterpret_cast<void**>(&d->state_dev), d->state_host, 0));

  // One device allocation for the small tables: [error lock][slots][sync_expected][paths].
  const size_t n = static_cast<size_t>(c->nranks);
  const size_t slots_off = 16, expected_off = slots_off + ((n * 4 + 15) & ~size_t{15});
  const size_t paths_off = expected_off + n * 8, total = paths_off + n;
  GICL_CUDA_CHECK(cudaMalloc(&d->tables, total));
  std::vector<char> host(total, 0);
  bool all_p2p = true;
  for (int r = 0; r < c->nranks; ++r) {
    const int slot = c->heap->slot_of(r);
    std::memcpy(host.data() + slots_off + r * 4, &slot, 4);
    const uint8_t path = c->paths[r] == PeerPath::kSelf  ? GICL_PATH_SELF
                         : c->paths[r] == PeerPath::kP2P ? GICL_PATH_P2P
                                                         : GICL_PATH_NETWORK;
    host[paths_off + r] = static_cast<char>(path);
    all_p2p = all_p2p && path != GICL_PATH_NETWORK && slot == r;
  }
  GICL_CHECK(upload_device(d->tables, host.data(), total));
  char* t = static_cast<char*>(d->tables);
  gicl_device_comm_t& h = d->handle;
  h.version = GICL_DEVICE_ABI_VERSION;
  h.flags = (checks ? GICL_DEVICE_FLAG_CHECKS : 0u) | (all_p2p ? GICL_DEVICE_FLAG_ALL_P2P : 0u);
  h.rank = c->rank;
  h.nranks = c->nranks;
  h.heap_base = c->heap->va_base();
  h.slot_bytes = c->heap->slot_bytes();
  h.slots = reinterpret_cast<const int32_t*>(t + slots_off);
  h.paths = reinterpret_cast<const uint8_t*>(t + paths_off);
  h.state = d->state_dev;
  h.sync_expected = reinterpret_cast<uint64_t*>(t + expected_off);
  h.own_slot = c->heap->slot_of(c->rank);
  h.wait_timeout_ns = d->state_host->wait_timeout_ns;
  h.error_lock = reinterpret_cast<uint32_t*>(t);
  c->dev = std::move(d);
  device_resources_note_heap(c);
  return GICL_SUCCESS;
}

void device_resources_note_heap(gicl_comm* c) {
  if (c->dev && c->heap) c->dev->state_host->heap_mapped = c->heap->mapped_bytes();
}

Status device_comm_handle(gicl_comm* c, gicl_device_comm_t* out) {
  if (!c->dev) {
    if (!c->heap)
      return GICL_FAIL(GICL_UNSUPPORTED, "the device API needs a CUDA device on every rank");
    return GICL_FAIL(GICL_UNSUPPORTED,
                     "the device API needs the VMM heap; this communicator uses %s handles "
                     "(set GICL_HEAP_HANDLE=AUTO or POSIX_FD)",
                     heap_handle_name(c->heap->handle()));
  }
  if (c->dev->sync_in == nullptr) {
    void* p = nullptr;
    GICL_CHECK(c->heap->alloc(static_cast<uint64_t>(c->nranks) * sizeof(uint64_t), &p));
    GICL_CHECK(zero_device(p, static_cast<size_t>(c->nranks) * sizeof(uint64_t)));
    // Nobody may signal into a peer's array before that peer has zeroed it.
    GICL_CHECK(c->bootstrap->barrier());
    c->dev->sync_in = static_cast<uint64_t*>(p);
    c->dev->handle.sync_in = c->dev->sync_in;
    if (c->net) {
      // The device-side team reductions stage through it when a member is on the network path.
      int64_t bytes = 0;
      GICL_CHECK(setting_int(Setting::kDeviceCollScratch, &bytes));
      GICL_CHECK(c->heap->alloc(static_cast<uint64_t>(bytes), &c->dev->handle.coll_scratch));
      c->dev->handle.coll_scratch_bytes = static_cast<uint64_t>(bytes);
    }
    device_resources_note_heap(c);
  }
  *out = c->dev->handle;
  return GICL_SUCCESS;
}

Status device_team(gicl_comm* c, gicl_team* team, gicl_device_team_t* out) {
  if (!c->dev)
    return GICL_FAIL(GICL_UNSUPPORTED, "the device API is not available on this communicator");
  auto it = c->dev->team_members.find(team);
  if (it == c->dev->team_members.end()) {
    DeviceScope scope(c->device);
    int32_t* d = nullptr;
    const size_t bytes = team->members.size() * sizeof(int32_t);
    GICL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d), bytes));
    GICL_CHECK(upload_device(d, team->members.data(), bytes));
    it = c->dev->team_members.emplace(team, d).first;
  }
  out->size = static_cast<int32_t>(team->members.size());
  out->my_index = team->my_index;
  out->members = it->second;
  return GICL_SUCCESS;
}

void device_resources_signal_abort(gicl_comm* c) {
  if (c->dev) c->dev->state_host->abort = 1;
}

void device_resources_free(gicl_comm* c, bool device_idle) {
  if (!c->dev) return;
  if (!device_idle) {
    GICL_WARN(
        kSubsysInit,
        "rank %d: kernels may still use the communicator's device state; leaving it allocated",
        c->rank);
    (void)c->dev.release();
    return;
  }
  for (auto& [team, p] : c->dev->team_members) GICL_CUDA_WARN(cudaFree(p));
  GICL_CUDA_WARN(cudaFree(c->dev->tables));
  GICL_CUDA_WARN(cudaFreeHost(c->dev->state_host));
  c->dev.reset();
}

bool device_error_text(const gicl_comm* c, gicl_result_t* code, std::string* text) {
  if (!c->dev) return false;
  const volatile gicl_device_error_t& e = c->dev->state_host->error;
  if (e.state != 2) return false;
  char buf[512];
  const char* what = e.kind == GICL_DEVICE_ERROR_TIMEOUT        ? "device wait timed out"
                     : e.kind == GICL_DEVICE_ERROR_ABORTED      ? "device wait aborted"
                     : e.kind == GICL_DEVICE_ERROR_BAD_ARGUMENT ? "bad device operation argument"
                     : e.kind == GICL_DEVICE_ERROR_PROXY ? "copy-engine proxy failed (logged)"
                                                         : "no transport to peer";
  char where[64];
  if (e.offset != ~0ull)
    std::snprintf(where, sizeof(where), "heap offset 0x%llx",
                  static_cast<unsigned long long>(e.offset));
  else
    std::snprintf(where, sizeof(where), "outside the heap");
  std::snprintf(buf, sizeof(buf),
                "%s: rank %d, %s, address 0x%llx (%s), peer %d, expected %s %llu, last seen %llu",
                what, e.rank, op_name(e.op), static_cast<unsigned long long>(e.address), where,
                e.peer, cmp_name(e.cmp), static_cast<unsigned long long>(e.expected),
                static_cast<unsigned long long>(e.seen));
  *text = buf;
  *code = e.kind == GICL_DEVICE_ERROR_TIMEOUT   ? GICL_TIMEOUT
          : e.kind == GICL_DEVICE_ERROR_ABORTED ? GICL_ABORTED
          : e.kind == GICL_DEVICE_ERROR_PROXY   ? GICL_UNHANDLED_CUDA_ERROR
                                                : GICL_INVALID_ARGUMENT;
  return true;
}

}  // namespace gicl
