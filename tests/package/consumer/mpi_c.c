/* SPDX-License-Identifier: Apache-2.0 */
/* An MPI program against the installed package's gicl_mpi: a communicator from MPI_COMM_WORLD.
 * Without a GPU the communicator bootstraps all the same (it has no symmetric heap). */
#include <gicl/gicl_mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int mpi_rank = -1, mpi_size = -1, rank = -1, size = -1, rc = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  gicl_comm_t comm;
  if (gicl_comm_init_mpi(&comm, MPI_COMM_WORLD) != GICL_SUCCESS) {
    fprintf(stderr, "rank %d: %s\n", mpi_rank, gicl_get_last_error());
    rc = 1;
  } else {
    gicl_comm_rank(comm, &rank);
    gicl_comm_size(comm, &size);
    if (rank != mpi_rank || size != mpi_size) rc = 2;
    if (gicl_comm_destroy(comm) != GICL_SUCCESS) rc = 3;
  }
  if (rc == 0 && mpi_rank == 0) printf("mpi_c: %d ranks joined through MPI\n", size);
  MPI_Finalize();
  return rc;
}
