// SPDX-License-Identifier: Apache-2.0
#include "collectives/host/scratch_layout.hpp"

#include <algorithm>

#include "collectives/schedule/p2p.hpp"

namespace gicl::coll {
namespace {

size_t align_up(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}

bool symmetric(Place p) {
  return p == Place::kSymmetric || p == Place::kSymmetricZeroed;
}
bool zeroed(Place p) {
  return p == Place::kSymmetricZeroed || p == Place::kLocalZeroed;
}

template <typename T>
void assign(T*& member, char* at, const ScratchSizes&) {
  member = reinterpret_cast<T*>(at);
}
// The staging is one part, two buffers alternating by epoch parity.
void assign(char* (&member)[2], char* at, const ScratchSizes& z) {
  member[0] = at;
  member[1] = at + z.stage;
}

}  // namespace

ScratchSizes scratch_sizes(int nranks, size_t stage_setting, bool network) {
  ScratchSizes z;
  z.network = network;
  z.nranks = static_cast<size_t>(std::max(nranks, 1));
  z.stage = align_up(stage_setting, 4096);
  // The pipe FIFOs share the staging budget: one slot per (sender, channel, slot).
  z.slot = std::max<size_t>(z.stage / (z.nranks * kPipeChannels * kPipeSlots) / 256 * 256, 4096);
  z.ll_entries = ll_capacity(nranks) / 4;
  z.ll128_row = ll128_row_bytes(nranks);
  z.p2p_ll_entries = p2p_ll_capacity(nranks) / 4;
  return z;
}

ScratchPlan plan_scratch(const ScratchSizes& z) {
  ScratchPlan plan;
  int i = 0;
  bool sym_zero = false, local_zero = false;
  auto add = [&](const char* name, Place place, size_t bytes) {
    size_t& end = symmetric(place) ? plan.symmetric_bytes : plan.local_bytes;
    plan.parts[i++] = {name, place, end, bytes};
    if (zeroed(place)) {
      bool& seen = symmetric(place) ? sym_zero : local_zero;
      size_t& from = symmetric(place) ? plan.symmetric_zero_from : plan.local_zero_from;
      size_t& to = symmetric(place) ? plan.symmetric_zero_to : plan.local_zero_to;
      if (!seen) from = end, seen = true;
      to = end + bytes;
    }
    end = align_up(end + bytes, 256);
  };
#define GICL_SCRATCH_ADD(member, type, count, place) add(#member, place, sizeof(type) * (count));
  GICL_SCRATCH_PARTS(GICL_SCRATCH_ADD)
#undef GICL_SCRATCH_ADD
  return plan;
}

void place_scratch(const ScratchSizes& z, const ScratchPlan& plan, char* sym, char* local,
                   CollScratch* s) {
  int i = 0;
#define GICL_SCRATCH_PLACE(member, type, count, place)                           \
  assign(s->member, (symmetric(place) ? sym : local) + plan.parts[i].offset, z); \
  ++i;
  GICL_SCRATCH_PARTS(GICL_SCRATCH_PLACE)
#undef GICL_SCRATCH_PLACE
  s->stage_bytes = z.stage;
  s->slot_bytes = z.slot;
  s->ll_entries = z.ll_entries;
  s->ll128_row = z.ll128_row;
  s->p2p_ll_entries = z.p2p_ll_entries;
}

}  // namespace gicl::coll
