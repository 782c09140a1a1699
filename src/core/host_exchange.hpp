// SPDX-License-Identifier: Apache-2.0
// The collectives' per-call host exchanges (GICL_CHECK_MODE's call signatures, the copy-engine
// path's receive windows): through a shared-memory board where every rank of the communicator
// is on this host, else over the bootstrap.
#pragma once

#include <cstddef>

#include "common/status.hpp"

struct gicl_comm;

namespace gicl {

/// Every rank's `bytes` at data + rank * bytes. Collective; call with the comm's op_mutex held.
/// The first call decides, with every rank, whether the board serves this communicator
/// (GICL_HOST_BOARD, all ranks on this host and connected by the heap's handle channel).
Status host_allgather(gicl_comm* comm, void* data, size_t bytes);

}  // namespace gicl
