// SPDX-License-Identifier: Apache-2.0
/// @file gicl_mpi.h
/// Communicator creation from an MPI communicator (library gicl_mpi, built with GICL_WITH_MPI).
#ifndef GICL_GICL_MPI_H_
#define GICL_GICL_MPI_H_

#include <mpi.h>

#include "gicl/gicl.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Collective over mpi_comm: rank 0 creates the unique id, MPI_Bcast hands it to all, and every
/// rank joins with its MPI rank. Uses the calling thread's current CUDA device. MPI errors are
/// reported as GICL_SYSTEM_ERROR.
GICL_API gicl_result_t gicl_comm_init_mpi(gicl_comm_t* comm, MPI_Comm mpi_comm);

#ifdef __cplusplus
}
#endif

#endif  // GICL_GICL_MPI_H_
