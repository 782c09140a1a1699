// ccl_comm_init_mpi: the unique id travels by MPI_Bcast; everything after is the TCP bootstrap,
// so an MPI job and a ccl-run job behave the same once initialised.
#include "ccl/ccl_mpi.h"

extern "C" ccl_result_t ccl_comm_init_mpi(ccl_comm_t* comm, MPI_Comm mpi_comm) {
  if (comm == nullptr) {
    ccl_unique_id_t none{};
    return ccl_comm_init_rank(nullptr, 1, none, 0);  // sets the "comm must not be NULL" message
  }
  *comm = nullptr;
  int rank = 0, size = 0;
  if (MPI_Comm_rank(mpi_comm, &rank) != MPI_SUCCESS ||
      MPI_Comm_size(mpi_comm, &size) != MPI_SUCCESS)
    return CCL_SYSTEM_ERROR;
  ccl_unique_id_t id{};
  // Rank 0's failure must reach the others, or they would join a job that never starts.
  int status = CCL_SUCCESS;
  if (rank == 0) status = ccl_get_unique_id(&id);
  if (MPI_Bcast(&status, 1, MPI_INT, 0, mpi_comm) != MPI_SUCCESS) return CCL_SYSTEM_ERROR;
  if (status != CCL_SUCCESS)
    return static_cast<ccl_result_t>(rank == 0 ? status : CCL_REMOTE_ERROR);
  if (MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi_comm) != MPI_SUCCESS) return CCL_SYSTEM_ERROR;
  return ccl_comm_init_rank(comm, size, id, rank);
}
