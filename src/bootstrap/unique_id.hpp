// SPDX-License-Identifier: Apache-2.0
// Making unique ids: a fresh one with an in-process root (gicl_get_unique_id), or the one a
// launcher describes through the environment (GICL_ROOT_ADDR + GICL_BOOTSTRAP_SECRET).
#pragma once

#include <string>

#include "bootstrap/wire.hpp"

namespace gicl::bootstrap {

/// Fresh random secret, root started in this process on the bootstrap interface.
Status make_unique_id(UniqueIdData* id);

/// The id of a launcher-started job. Rank 0 also starts the root on its address: GICL_ROOT_ADDR,
/// else torchrun's MASTER_ADDR at MASTER_PORT + 1 (torchrun's own store holds MASTER_PORT).
Status launcher_unique_id(int rank, UniqueIdData* id);
/// The root's "host:port" of a launcher job and the variables it came from (for messages).
Status launcher_root(std::string* text, const char** source);

/// Rank, size and node-local rank from GICL_RANK / GICL_WORLD_SIZE / GICL_LOCAL_RANK, else from
/// torchrun's RANK / WORLD_SIZE / LOCAL_RANK, else from Open MPI, PMIx, PMI or Slurm variables.
/// local_rank is -1 when no launcher sets it.
Status launcher_ranks(int* rank, int* size, int* local_rank);

/// Fills `secret` from the OS's random source.
Status random_secret(uint8_t* secret);

}  // namespace gicl::bootstrap
