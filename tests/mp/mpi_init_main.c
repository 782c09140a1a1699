// SPDX-License-Identifier: Apache-2.0
/* gicl_comm_init_mpi under mpirun: every rank must get its MPI rank and size, and a split and a
   destroy must work. Exits non-zero (failing mpirun and the test) on any mismatch. */
#include <stdio.h>

#include "gicl/gicl_mpi.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, crank = -1, csize = -1, code = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  gicl_comm_t comm = NULL, pair = NULL;
  if (gicl_comm_init_mpi(&comm, MPI_COMM_WORLD) != GICL_SUCCESS) {
    fprintf(stderr, "rank %d: gicl_comm_init_mpi: %s\n", rank, gicl_get_last_error());
    code = 1;
  } else {
    gicl_comm_rank(comm, &crank);
    gicl_comm_size(comm, &csize);
    if (crank != rank || csize != size) {
      fprintf(stderr, "rank %d: gicl says rank %d size %d\n", rank, crank, csize);
      code = 2;
    } else if (gicl_comm_split(comm, rank / 2, rank, &pair) != GICL_SUCCESS ||
               gicl_comm_destroy(pair) != GICL_SUCCESS || gicl_comm_destroy(comm) != GICL_SUCCESS) {
      fprintf(stderr, "rank %d: split/destroy: %s\n", rank, gicl_get_last_error());
      code = 3;
    }
  }
  if (gicl_comm_init_mpi(NULL, MPI_COMM_WORLD) != GICL_INVALID_ARGUMENT) code = 4;
  int worst = 0;
  MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("gicl_comm_init_mpi on %d ranks: %s\n", size, worst ? "FAILED" : "ok");
  MPI_Finalize();
  return worst;
}
