// SPDX-License-Identifier: Apache-2.0
/// @file gicl.h
/// The gicl host API: communicators, teams and the symmetric heap.
///
/// Every function returns a gicl_result_t. On failure the calling thread's last-error message
/// (gicl_get_last_error) names the argument or the rank at fault. No function here throws.
#ifndef GICL_GICL_H_
#define GICL_GICL_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "gicl/device_abi.h"
#include "gicl/types.h"
#include "gicl/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GICL_API __attribute__((visibility("default")))
#else
#define GICL_API
#endif

/// Result of every gicl call. Values are stable across releases.
typedef enum GICL_ENUM_INT {
  GICL_SUCCESS = 0,               ///< The call did what it was asked.
  GICL_UNHANDLED_CUDA_ERROR = 1,  ///< A CUDA runtime or driver call failed.
  GICL_SYSTEM_ERROR = 2,          ///< An OS call (socket, mmap, fork...) failed.
  GICL_INTERNAL_ERROR = 3,        ///< A gicl invariant broke: a bug, please report it.
  GICL_INVALID_ARGUMENT = 4,      ///< An argument is wrong; the last-error message names it.
  GICL_INVALID_USAGE = 5,         ///< The call is valid alone but not in this state or order.
  GICL_REMOTE_ERROR = 6,          ///< A peer rank failed, disagreed, or closed its connection.
  GICL_IN_PROGRESS = 7,           ///< A non-blocking operation has not finished yet.
  GICL_TIMEOUT = 8,               ///< A bounded wait expired; the message names who is late.
  GICL_ABORTED = 9,               ///< The communicator was aborted.
  GICL_UNSUPPORTED = 10,          ///< The build or the machine lacks what the call needs.
  GICL_NUM_RESULTS = 11
} gicl_result_t;

/// Size of the opaque unique id, as in NCCL: one rank creates it, all ranks receive it.
#define GICL_UNIQUE_ID_BYTES 128

/// Opaque bootstrap token: the root's address plus a 128-bit random secret. Treat it as a secret:
/// whoever holds it can join the job.
typedef struct {
  char internal[GICL_UNIQUE_ID_BYTES];
} gicl_unique_id_t;

/// Opaque communicator.
typedef struct gicl_comm* gicl_comm_t;
/// Opaque team: an ordered subset of a communicator's ranks.
typedef struct gicl_team* gicl_team_t;

/// Color that leaves a rank out of gicl_comm_split (it receives a NULL communicator).
#define GICL_SPLIT_NOCOLOR (-1)

/// Predefined teams of a communicator.
typedef enum GICL_ENUM_INT {
  GICL_TEAM_WORLD = 0,  ///< All ranks of the communicator.
  GICL_TEAM_NODE = 1    ///< The ranks this rank reaches by load/store (same node, P2P capable).
} gicl_team_kind_t;

/// Returned by gicl_team_translate_rank when the rank is not a member of the destination team.
#define GICL_RANK_INVALID (-1)

// ---- errors ---------------------------------------------------------------------------------

/// Short constant description of a result code; never NULL.
GICL_API const char* gicl_get_error_string(gicl_result_t result);
/// The calling thread's last error message (empty if none). Valid until the next gicl call on
/// this thread.
GICL_API const char* gicl_get_last_error(void);
/// The library's version as GICL_VERSION_CODE (compare with the header's to catch a mismatch).
GICL_API gicl_result_t gicl_get_version(int* version);
/// Parses a byte count as every gicl tool and size setting does: decimal digits with an optional
/// K, M, G or T suffix (powers of 1024), optionally followed by B ("64K", "1MB", "4096").
GICL_API gicl_result_t gicl_parse_size(const char* text, size_t* bytes);
/// Writes a warning line through gicl's log (GICL_DEBUG, GICL_DEBUG_FILE), for header-inline
/// code that must not fail silently and cannot return an error, such as gicl.hpp's destructors.
GICL_API void gicl_log_warning(const char* message);

// ---- communicators -------------------------------------------------------------------------

/// Creates a unique id and starts the bootstrap root in this process. Call it on one rank and
/// pass the id to all ranks out of band (MPI_Bcast, a file, the launcher).
GICL_API gicl_result_t gicl_get_unique_id(gicl_unique_id_t* id);

/// Collective over nranks processes or threads: joins rank `rank` to the job named by `id`. The
/// communicator uses the CUDA device current on the calling thread (none if the machine has no
/// GPU: such a communicator bootstraps but has no symmetric heap).
GICL_API gicl_result_t gicl_comm_init_rank(gicl_comm_t* comm, int nranks, gicl_unique_id_t id,
                                           int rank);

/// Creates ndev communicators in one process, rank i on device devlist[i] (or device i when
/// devlist is NULL). comms must hold ndev entries. A device listed twice is refused
/// (GICL_INVALID_USAGE) unless GICL_SHARED_GPU_THREADS=1: CUDA does not promise that the kernels of
/// ranks sharing one context all start (docs/collectives.md).
GICL_API gicl_result_t gicl_comm_init_all(gicl_comm_t* comms, int ndev, const int* devlist);

/// Joins a job started by a launcher: reads the rank and size from GICL_RANK / GICL_WORLD_SIZE (or
/// the Open MPI, PMI or Slurm variables) and the root from GICL_ROOT_ADDR; rank 0 hosts the root.
/// Selects the CUDA device local_rank % device_count before bootstrapping.
GICL_API gicl_result_t gicl_comm_init_env(gicl_comm_t* comm);

/// Collective over comm: ranks with the same color form a new communicator ordered by (key, old
/// rank). A rank passing GICL_SPLIT_NOCOLOR receives NULL.
GICL_API gicl_result_t gicl_comm_split(gicl_comm_t comm, int color, int key, gicl_comm_t* newcomm);

/// gicl_comm_shrink's flags. DEFAULT: comm is healthy and every remaining rank calls. ABORT: comm
/// may be in error (a rank was lost): its device waits are stopped before the new one forms.
#define GICL_SHRINK_DEFAULT 0
#define GICL_SHRINK_ABORT 1
/// gicl_comm_shrink's nexclude for "the ranks comm's peer watch found lost".
#define GICL_SHRINK_LOST (-1)

/// Collective over the ranks of comm that remain: a communicator of the ranks not in
/// exclude_ranks (nexclude entries), in comm's order, without a new unique id (as NCCL's
/// ncclCommShrink). Every remaining rank passes the same set, checked; excluded ranks do not call.
/// nexclude = GICL_SHRINK_LOST (exclude_ranks NULL) excludes the ranks comm found lost (its
/// GICL_REMOTE_ERROR names them). comm stays valid: destroy or abort it afterwards.
GICL_API gicl_result_t gicl_comm_shrink(gicl_comm_t comm, const int* exclude_ranks, int nexclude,
                                        gicl_comm_t* newcomm, int flags);

/// Collective: waits (bounded by GICL_BOOTSTRAP_TIMEOUT) for every rank to arrive, then releases
/// everything the communicator holds. Releases it even when the wait fails.
GICL_API gicl_result_t gicl_comm_destroy(gicl_comm_t comm);

/// Not collective, callable from any thread: stops every operation in flight on comm, releases
/// what it holds (sockets, VMM mappings, memory, threads), and returns within one second.
GICL_API gicl_result_t gicl_comm_abort(gicl_comm_t comm);

GICL_API gicl_result_t gicl_comm_rank(gicl_comm_t comm, int* rank);
GICL_API gicl_result_t gicl_comm_size(gicl_comm_t comm, int* size);
/// The CUDA device of comm, or -1 for a communicator made on a machine without a GPU.
GICL_API gicl_result_t gicl_comm_device(gicl_comm_t comm, int* device);

/// The communicator's asynchronous state: GICL_SUCCESS, or the error that put it into error (a
/// dead peer, a device-side timeout). When `message` is not NULL it receives the report text
/// (valid until the communicator is destroyed).
GICL_API gicl_result_t gicl_comm_get_async_error(gicl_comm_t comm, gicl_result_t* async_error,
                                                 const char** message);

// ---- teams ---------------------------------------------------------------------------------

/// One of the predefined teams. The team belongs to comm: do not destroy it.
GICL_API gicl_result_t gicl_comm_get_team(gicl_comm_t comm, gicl_team_kind_t kind,
                                          gicl_team_t* team);
/// Local: ranks start, start+stride, ... (size of them) of parent, in that order. Every member
/// must make the same call. Returns a NULL team on ranks that are not members.
GICL_API gicl_result_t gicl_team_split_strided(gicl_team_t parent, int start, int stride, int size,
                                               gicl_team_t* team);
GICL_API gicl_result_t gicl_team_rank(gicl_team_t team, int* rank);
GICL_API gicl_result_t gicl_team_size(gicl_team_t team, int* size);
/// Translates `rank` of src into dst's numbering (GICL_RANK_INVALID if not a member of dst).
GICL_API gicl_result_t gicl_team_translate_rank(gicl_team_t src, int rank, gicl_team_t dst,
                                                int* dst_rank);
/// Destroys a team made by gicl_team_split_strided (predefined teams are refused).
GICL_API gicl_result_t gicl_team_destroy(gicl_team_t team);

// ---- symmetric memory ----------------------------------------------------------------------

/// Collective: allocates `bytes` of symmetric device memory at the same heap offset on every rank.
/// Every rank must pass the same size; a mismatch fails on all ranks and names the ranks. The
/// heap grows collectively when needed, up to GICL_SYMMETRIC_SIZE.
GICL_API gicl_result_t gicl_mem_alloc(gicl_comm_t comm, size_t bytes, void** ptr);
/// Collective: frees a pointer returned by gicl_mem_alloc on comm.
GICL_API gicl_result_t gicl_mem_free(gicl_comm_t comm, void* ptr);
/// Local: the address at which this process can load/store `peer`'s copy of the symmetric
/// address `ptr`. NULL (and GICL_SUCCESS) when the peer is not reachable by load/store.
GICL_API gicl_result_t gicl_mem_peer_ptr(gicl_comm_t comm, const void* ptr, int peer,
                                         void** peer_ptr);
/// Collective: registers [buff, buff + size) of this rank's ordinary device memory (cudaMalloc)
/// with every load/store peer (CUDA IPC), so that collectives whose buffers lie inside it read
/// and write them in place (zero copy) instead of staging them through the symmetric scratch.
/// Every rank calls it, in the same order as its other registrations, each with its own buffer
/// and size. A buffer from gicl_mem_alloc is accepted (it is zero copy already). Memory that
/// cannot be shared (host memory, cudaMallocAsync pools, another device's memory) is refused with
/// GICL_INVALID_ARGUMENT; a failure on any rank fails the call on every rank. At most 256 live
/// registrations per communicator. Not inside CUDA graph capture.
GICL_API gicl_result_t gicl_comm_register(gicl_comm_t comm, void* buff, size_t size, void** handle);
/// Collective: waits for this device's work, then every rank drops its mappings of the buffer;
/// the buffer may be freed after the call. A handle that is not live fails on every rank.
GICL_API gicl_result_t gicl_comm_deregister(gicl_comm_t comm, void* handle);

// ---- device API: handles, queue pairs, host stream operations ------------------------------

/// Collective on the first call per communicator (it allocates the barrier signals from the
/// symmetric heap); later calls are local. Fills the handle kernels take by value (see
/// gicl/device.cuh). Needs a heap on CUDA VMM (GICL_HEAP_HANDLE=AUTO or POSIX_FD): with legacy IPC
/// handles the device API is GICL_UNSUPPORTED.
GICL_API gicl_result_t gicl_comm_get_device_comm(gicl_comm_t comm, gicl_device_comm_t* dcomm);
/// The device view of a team (its member list in device memory, owned by the team).
GICL_API gicl_result_t gicl_team_get_device(gicl_team_t team, gicl_device_team_t* dteam);
/// Collective: creates n queue pairs. Where extra queue pairs bring nothing (every peer over
/// NVLink) it succeeds and returns GICL_QP_DEFAULT handles, so code stays portable. With a network
/// path each gets an id of its own and, to ranks on that path, posts to its own request ring
/// (GICL_NET_QP_RINGS rings shared round-robin), unordered with the other queue pairs'.
GICL_API gicl_result_t gicl_qp_create(gicl_comm_t comm, int n, gicl_qp_t* qps);

/// Stream-ordered put of `bytes` from local `src` into `peer`'s copy of symmetric `dst` (copy
/// engine over P2P). Visible at the peer when the stream reaches the next operation.
GICL_API gicl_result_t gicl_put_on_stream(gicl_comm_t comm, void* dst, const void* src,
                                          size_t bytes, int peer, cudaStream_t stream);
/// Stream-ordered signal: set (GICL_SIGNAL_SET) or add (GICL_SIGNAL_ADD) `value` at `peer`'s copy
/// of the symmetric uint64 `sig`, after everything earlier on the stream.
GICL_API gicl_result_t gicl_signal_on_stream(gicl_comm_t comm, uint64_t* sig, uint64_t value,
                                             int op, int peer, cudaStream_t stream);
/// Stream-ordered bounded wait until the local symmetric `sig` satisfies `cmp` (GICL_CMP_*).
GICL_API gicl_result_t gicl_wait_signal_on_stream(gicl_comm_t comm, const uint64_t* sig, int cmp,
                                                  uint64_t value, cudaStream_t stream);
/// Collective, stream-ordered barrier of all ranks (completes earlier puts on the stream).
GICL_API gicl_result_t gicl_barrier_on_stream(gicl_comm_t comm, cudaStream_t stream);
/// Stream-ordered completion of every earlier put and signal on the stream.
GICL_API gicl_result_t gicl_quiet_on_stream(gicl_comm_t comm, cudaStream_t stream);

// ---- collectives ----------------------------------------------------------------------------

/// Stream-ordered collectives, as NCCL's. In place when sendbuff == recvbuff (reduce-scatter:
/// recvbuff == sendbuff + rank x recvcount; allgather: sendbuff == recvbuff + rank x sendcount).
/// Buffers may be ordinary device memory (staged through the communicator's symmetric scratch),
/// device memory inside a gicl_comm_register'ed range, or symmetric memory from gicl_mem_alloc
/// (the last two read and written in place by the peers: zero copy); ranks need not pass buffers
/// at the same offsets. Every call can be captured in a CUDA graph and replayed (the first one
/// on a communicator sets up its scratch collectively, outside the graph, while capturing).
/// Collectives of one communicator must be issued in the same order on every rank and must not run
/// concurrently on different streams. Algorithms: docs/collectives.md.
///
/// recvbuff[i] = op over ranks of sendbuff[i], on every rank.
GICL_API gicl_result_t gicl_allreduce(const void* sendbuff, void* recvbuff, size_t count,
                                      gicl_datatype_t datatype, gicl_redop_t op, gicl_comm_t comm,
                                      cudaStream_t stream);
/// sendbuff holds nranks blocks of recvcount; rank r receives block r reduced over ranks.
GICL_API gicl_result_t gicl_reduce_scatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                           gicl_datatype_t datatype, gicl_redop_t op,
                                           gicl_comm_t comm, cudaStream_t stream);
/// recvbuff block r (of sendcount elements) = rank r's sendbuff, on every rank.
GICL_API gicl_result_t gicl_allgather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                      gicl_datatype_t datatype, gicl_comm_t comm,
                                      cudaStream_t stream);
/// recvbuff = root's sendbuff on every rank (sendbuff is read on the root only).
GICL_API gicl_result_t gicl_broadcast(const void* sendbuff, void* recvbuff, size_t count,
                                      gicl_datatype_t datatype, int root, gicl_comm_t comm,
                                      cudaStream_t stream);
/// The root's recvbuff = op over ranks of sendbuff (recvbuff is written on the root only).
GICL_API gicl_result_t gicl_reduce(const void* sendbuff, void* recvbuff, size_t count,
                                   gicl_datatype_t datatype, gicl_redop_t op, int root,
                                   gicl_comm_t comm, cudaStream_t stream);
/// Block j (count elements) of rank r's sendbuff lands in block r of rank j's recvbuff.
GICL_API gicl_result_t gicl_alltoall(const void* sendbuff, void* recvbuff, size_t count,
                                     gicl_datatype_t datatype, gicl_comm_t comm,
                                     cudaStream_t stream);
/// Point-to-point: a send to `peer` must meet a receive of the same size from this rank there,
/// in the same order. Sends and receives between gicl_group_start and gicl_group_end progress
/// together, a group of any size (a kernel per communicator for up to 64 operations, several
/// beyond); outside a group each is its own kernel.
GICL_API gicl_result_t gicl_send(const void* sendbuff, size_t count, gicl_datatype_t datatype,
                                 int peer, gicl_comm_t comm, cudaStream_t stream);
GICL_API gicl_result_t gicl_recv(void* recvbuff, size_t count, gicl_datatype_t datatype, int peer,
                                 gicl_comm_t comm, cudaStream_t stream);
/// Stream-ordered barrier of all ranks (the dissemination barrier of gicl_barrier_on_stream).
GICL_API gicl_result_t gicl_barrier(gicl_comm_t comm, cudaStream_t stream);
/// Calls until the matching gicl_group_end are queued on this thread and issued together: fused
/// point-to-point, and one thread may drive several communicators (gicl_comm_init_all). Groups
/// nest; only the outermost end issues.
GICL_API gicl_result_t gicl_group_start(void);
GICL_API gicl_result_t gicl_group_end(void);

/// Records `message` as the calling thread's last error and returns `code` (for header-inline
/// helpers such as gicl::dev::launch_collective, which run in the caller's CUDA runtime).
GICL_API gicl_result_t gicl_set_last_error(gicl_result_t code, const char* message);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // GICL_GICL_H_
