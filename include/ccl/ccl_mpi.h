/// @file ccl_mpi.h
/// Communicator creation from an MPI communicator (library ccl_mpi, built with CCL_WITH_MPI).
#ifndef CCL_CCL_MPI_H_
#define CCL_CCL_MPI_H_

#include <mpi.h>

#include "ccl/ccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Collective over mpi_comm: rank 0 creates the unique id, MPI_Bcast hands it to all, and every
/// rank joins with its MPI rank. Uses the calling thread's current CUDA device. MPI errors are
/// reported as CCL_SYSTEM_ERROR.
CCL_API ccl_result_t ccl_comm_init_mpi(ccl_comm_t* comm, MPI_Comm mpi_comm);

#ifdef __cplusplus
}
#endif

#endif  // CCL_CCL_MPI_H_
