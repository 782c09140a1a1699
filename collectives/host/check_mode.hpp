// SPDX-License-Identifier: Apache-2.0
// GICL_CHECK_MODE: ranks compare each collective call's arguments before running it, so a rank
// that calls something else (another count, type, op, root, or another collective) is named
// instead of making the others hang or compute garbage.
#pragma once

#include <cstdint>

#include "common/status.hpp"
#include "gicl/types.h"

struct gicl_comm;

namespace gicl::coll {

/// What every rank must agree on for one call (fixed layout: it crosses processes).
struct CallSignature {
  uint64_t call;  // this communicator's collective call number
  uint64_t count;
  int32_t coll;   // Collective
  int32_t dtype;  // gicl_datatype_t
  int32_t op;     // gicl_redop_t, -1 if none
  int32_t root;   // -1 if none
};
static_assert(sizeof(CallSignature) == 32);

/// Whether GICL_CHECK_MODE is on for `comm` (read at its first call). Call with its op_mutex held.
Status check_mode_on(gicl_comm* comm, bool* on);
/// With GICL_CHECK_MODE=1: allgathers `mine` and fails (GICL_INVALID_USAGE, on every rank) when
/// any rank differs from rank 0, naming the ranks and both calls. Without it: returns at once.
Status check_call(gicl_comm* comm, CallSignature mine);

}  // namespace gicl::coll
