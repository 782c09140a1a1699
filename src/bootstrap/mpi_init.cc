// SPDX-License-Identifier: Apache-2.0
// gicl_comm_init_mpi: the unique id travels by MPI_Bcast; everything after is the TCP bootstrap,
// so an MPI job and a gicl-run job behave the same once initialised.
#include "gicl/gicl_mpi.h"

extern "C" gicl_result_t gicl_comm_init_mpi(gicl_comm_t* comm, MPI_Comm mpi_comm) {
  if (comm == nullptr) {
    gicl_unique_id_t none{};
    return gicl_comm_init_rank(nullptr, 1, none, 0);  // sets the "comm must not be NULL" message
  }
  *comm = nullptr;
  int rank = 0, size = 0;
  if (MPI_Comm_rank(mpi_comm, &rank) != MPI_SUCCESS ||
      MPI_Comm_size(mpi_comm, &size) != MPI_SUCCESS)
    return GICL_SYSTEM_ERROR;
  gicl_unique_id_t id{};
  // Rank 0's failure must reach the others, or they would join a job that never starts.
  int status = GICL_SUCCESS;
  if (rank == 0) status = gicl_get_unique_id(&id);
  if (MPI_Bcast(&status, 1, MPI_INT, 0, mpi_comm) != MPI_SUCCESS) return GICL_SYSTEM_ERROR;
  if (status != GICL_SUCCESS)
    return static_cast<gicl_result_t>(rank == 0 ? status : GICL_REMOTE_ERROR);
  if (MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi_comm) != MPI_SUCCESS) return GICL_SYSTEM_ERROR;
  return gicl_comm_init_rank(comm, size, id, rank);
}
