/// @file ccl.h
/// The ccl host API: communicators, teams and the symmetric heap.
///
/// Every function returns a ccl_result_t. On failure the calling thread's last-error message
/// (ccl_get_last_error) names the argument or the rank at fault. No function here throws.
#ifndef CCL_CCL_H_
#define CCL_CCL_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "ccl/device_abi.h"
#include "ccl/types.h"
#include "ccl/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CCL_API __attribute__((visibility("default")))
#else
#define CCL_API
#endif

/// Result of every ccl call. Values are stable across releases.
typedef enum CCL_ENUM_INT {
  CCL_SUCCESS = 0,               ///< The call did what it was asked.
  CCL_UNHANDLED_CUDA_ERROR = 1,  ///< A CUDA runtime or driver call failed.
  CCL_SYSTEM_ERROR = 2,          ///< An OS call (socket, mmap, fork...) failed.
  CCL_INTERNAL_ERROR = 3,        ///< A ccl invariant broke: a bug, please report it.
  CCL_INVALID_ARGUMENT = 4,      ///< An argument is wrong; the last-error message names it.
  CCL_INVALID_USAGE = 5,         ///< The call is valid alone but not in this state or order.
  CCL_REMOTE_ERROR = 6,          ///< A peer rank failed, disagreed, or closed its connection.
  CCL_IN_PROGRESS = 7,           ///< A non-blocking operation has not finished yet.
  CCL_TIMEOUT = 8,               ///< A bounded wait expired; the message names who is late.
  CCL_ABORTED = 9,               ///< The communicator was aborted.
  CCL_UNSUPPORTED = 10,          ///< The build or the machine lacks what the call needs.
  CCL_NUM_RESULTS = 11
} ccl_result_t;

/// Size of the opaque unique id, as in NCCL: one rank creates it, all ranks receive it.
#define CCL_UNIQUE_ID_BYTES 128

/// Opaque bootstrap token: the root's address plus a 128-bit random secret. Treat it as a secret:
/// whoever holds it can join the job.
typedef struct {
  char internal[CCL_UNIQUE_ID_BYTES];
} ccl_unique_id_t;

/// Opaque communicator.
typedef struct ccl_comm* ccl_comm_t;
/// Opaque team: an ordered subset of a communicator's ranks.
typedef struct ccl_team* ccl_team_t;

/// Color that leaves a rank out of ccl_comm_split (it receives a NULL communicator).
#define CCL_SPLIT_NOCOLOR (-1)

/// Predefined teams of a communicator.
typedef enum CCL_ENUM_INT {
  CCL_TEAM_WORLD = 0,  ///< All ranks of the communicator.
  CCL_TEAM_NODE = 1    ///< The ranks this rank reaches by load/store (same node, P2P capable).
} ccl_team_kind_t;

/// Returned by ccl_team_translate_rank when the rank is not a member of the destination team.
#define CCL_RANK_INVALID (-1)

// ---- errors ---------------------------------------------------------------------------------

/// Short constant description of a result code; never NULL.
CCL_API const char* ccl_get_error_string(ccl_result_t result);
/// The calling thread's last error message (empty if none). Valid until the next ccl call on
/// this thread.
CCL_API const char* ccl_get_last_error(void);
/// Library version as CCL_VERSION_CODE.
CCL_API ccl_result_t ccl_get_version(int* version);

// ---- communicators -------------------------------------------------------------------------

/// Creates a unique id and starts the bootstrap root in this process. Call it on one rank and
/// pass the id to all ranks out of band (MPI_Bcast, a file, the launcher).
CCL_API ccl_result_t ccl_get_unique_id(ccl_unique_id_t* id);

/// Collective over nranks processes or threads: joins rank `rank` to the job named by `id`. The
/// communicator uses the CUDA device current on the calling thread (none if the machine has no
/// GPU: such a communicator bootstraps but has no symmetric heap).
CCL_API ccl_result_t ccl_comm_init_rank(ccl_comm_t* comm, int nranks, ccl_unique_id_t id, int rank);

/// Creates ndev communicators in one process, rank i on device devlist[i] (or device i when
/// devlist is NULL). comms must hold ndev entries. A device listed twice is refused
/// (CCL_INVALID_USAGE) unless CCL_SHARED_GPU_THREADS=1: CUDA does not promise that the kernels of
/// ranks sharing one context all start (docs/collectives.md).
CCL_API ccl_result_t ccl_comm_init_all(ccl_comm_t* comms, int ndev, const int* devlist);

/// Joins a job started by a launcher: reads the rank and size from CCL_RANK / CCL_WORLD_SIZE (or
/// the Open MPI, PMI or Slurm variables) and the root from CCL_ROOT_ADDR; rank 0 hosts the root.
/// Selects the CUDA device local_rank % device_count before bootstrapping.
CCL_API ccl_result_t ccl_comm_init_env(ccl_comm_t* comm);

/// Collective over comm: ranks with the same color form a new communicator ordered by (key, old
/// rank). A rank passing CCL_SPLIT_NOCOLOR receives NULL.
CCL_API ccl_result_t ccl_comm_split(ccl_comm_t comm, int color, int key, ccl_comm_t* newcomm);

/// Collective: waits (bounded by CCL_BOOTSTRAP_TIMEOUT) for every rank to arrive, then releases
/// everything the communicator holds. Releases it even when the wait fails.
CCL_API ccl_result_t ccl_comm_destroy(ccl_comm_t comm);

/// Not collective, callable from any thread: stops every operation in flight on comm, releases
/// what it holds (sockets, VMM mappings, memory, threads), and returns within one second.
CCL_API ccl_result_t ccl_comm_abort(ccl_comm_t comm);

CCL_API ccl_result_t ccl_comm_rank(ccl_comm_t comm, int* rank);
CCL_API ccl_result_t ccl_comm_size(ccl_comm_t comm, int* size);
/// The CUDA device of comm, or -1 for a communicator made on a machine without a GPU.
CCL_API ccl_result_t ccl_comm_device(ccl_comm_t comm, int* device);

/// The communicator's asynchronous state: CCL_SUCCESS, or the error that put it into error (a
/// dead peer, a device-side timeout). When `message` is not NULL it receives the report text
/// (valid until the communicator is destroyed).
CCL_API ccl_result_t ccl_comm_get_async_error(ccl_comm_t comm, ccl_result_t* async_error,
                                              const char** message);

// ---- teams ---------------------------------------------------------------------------------

/// One of the predefined teams. The team belongs to comm: do not destroy it.
CCL_API ccl_result_t ccl_comm_get_team(ccl_comm_t comm, ccl_team_kind_t kind, ccl_team_t* team);
/// Local: ranks start, start+stride, ... (size of them) of parent, in that order. Every member
/// must make the same call. Returns a NULL team on ranks that are not members.
CCL_API ccl_result_t ccl_team_split_strided(ccl_team_t parent, int start, int stride, int size,
                                            ccl_team_t* team);
CCL_API ccl_result_t ccl_team_rank(ccl_team_t team, int* rank);
CCL_API ccl_result_t ccl_team_size(ccl_team_t team, int* size);
/// Translates `rank` of src into dst's numbering (CCL_RANK_INVALID if not a member of dst).
CCL_API ccl_result_t ccl_team_translate_rank(ccl_team_t src, int rank, ccl_team_t dst,
                                             int* dst_rank);
/// Destroys a team made by ccl_team_split_strided (predefined teams are refused).
CCL_API ccl_result_t ccl_team_destroy(ccl_team_t team);

// ---- symmetric memory ----------------------------------------------------------------------

/// Collective: allocates `bytes` of symmetric device memory at the same heap offset on every rank.
/// Every rank must pass the same size; a mismatch fails on all ranks and names the ranks. The
/// heap grows collectively when needed, up to CCL_SYMMETRIC_SIZE.
CCL_API ccl_result_t ccl_mem_alloc(ccl_comm_t comm, size_t bytes, void** ptr);
/// Collective: frees a pointer returned by ccl_mem_alloc on comm.
CCL_API ccl_result_t ccl_mem_free(ccl_comm_t comm, void* ptr);
/// Local: the address at which this process can load/store `peer`'s copy of the symmetric
/// address `ptr`. NULL (and CCL_SUCCESS) when the peer is not reachable by load/store.
CCL_API ccl_result_t ccl_mem_peer_ptr(ccl_comm_t comm, const void* ptr, int peer, void** peer_ptr);
/// Collective: registers [buff, buff + size) of this rank's ordinary device memory (cudaMalloc)
/// with every load/store peer (CUDA IPC), so that collectives whose buffers lie inside it read
/// and write them in place (zero copy) instead of staging them through the symmetric scratch.
/// Every rank calls it, in the same order as its other registrations, each with its own buffer
/// and size. A buffer from ccl_mem_alloc is accepted (it is zero copy already). Memory that
/// cannot be shared (host memory, cudaMallocAsync pools, another device's memory) is refused with
/// CCL_INVALID_ARGUMENT; a failure on any rank fails the call on every rank. At most 256 live
/// registrations per communicator. Not inside CUDA graph capture.
CCL_API ccl_result_t ccl_comm_register(ccl_comm_t comm, void* buff, size_t size, void** handle);
/// Collective: waits for this device's work, then every rank drops its mappings of the buffer;
/// the buffer may be freed after the call. A handle that is not live fails on every rank.
CCL_API ccl_result_t ccl_comm_deregister(ccl_comm_t comm, void* handle);

// ---- device API: handles, queue pairs, host stream operations ------------------------------

/// Collective on the first call per communicator (it allocates the barrier signals from the
/// symmetric heap); later calls are local. Fills the handle kernels take by value (see
/// ccl/device.cuh). Needs a heap on CUDA VMM (CCL_HEAP_HANDLE=AUTO or POSIX_FD): with legacy IPC
/// handles the device API is CCL_UNSUPPORTED.
CCL_API ccl_result_t ccl_comm_get_device_comm(ccl_comm_t comm, ccl_device_comm_t* dcomm);
/// The device view of a team (its member list in device memory, owned by the team).
CCL_API ccl_result_t ccl_team_get_device(ccl_team_t team, ccl_device_team_t* dteam);
/// Collective: creates n queue pairs. Where extra queue pairs bring nothing (every peer over
/// NVLink) it succeeds and returns CCL_QP_DEFAULT handles, so code stays portable.
CCL_API ccl_result_t ccl_qp_create(ccl_comm_t comm, int n, ccl_qp_t* qps);

/// Stream-ordered put of `bytes` from local `src` into `peer`'s copy of symmetric `dst` (copy
/// engine over P2P). Visible at the peer when the stream reaches the next operation.
CCL_API ccl_result_t ccl_put_on_stream(ccl_comm_t comm, void* dst, const void* src, size_t bytes,
                                       int peer, cudaStream_t stream);
/// Stream-ordered signal: set (CCL_SIGNAL_SET) or add (CCL_SIGNAL_ADD) `value` at `peer`'s copy
/// of the symmetric uint64 `sig`, after everything earlier on the stream.
CCL_API ccl_result_t ccl_signal_on_stream(ccl_comm_t comm, uint64_t* sig, uint64_t value, int op,
                                          int peer, cudaStream_t stream);
/// Stream-ordered bounded wait until the local symmetric `sig` satisfies `cmp` (CCL_CMP_*).
CCL_API ccl_result_t ccl_wait_signal_on_stream(ccl_comm_t comm, const uint64_t* sig, int cmp,
                                               uint64_t value, cudaStream_t stream);
/// Collective, stream-ordered barrier of all ranks (completes earlier puts on the stream).
CCL_API ccl_result_t ccl_barrier_on_stream(ccl_comm_t comm, cudaStream_t stream);
/// Stream-ordered completion of every earlier put and signal on the stream.
CCL_API ccl_result_t ccl_quiet_on_stream(ccl_comm_t comm, cudaStream_t stream);

// ---- collectives ----------------------------------------------------------------------------

/// Stream-ordered collectives, as NCCL's. In place when sendbuff == recvbuff (reduce-scatter:
/// recvbuff == sendbuff + rank x recvcount; allgather: sendbuff == recvbuff + rank x sendcount).
/// Buffers may be ordinary device memory (staged through the communicator's symmetric scratch),
/// device memory inside a ccl_comm_register'ed range, or symmetric memory from ccl_mem_alloc
/// (the last two read and written in place by the peers: zero copy); ranks need not pass buffers
/// at the same offsets. Every call can be captured in a CUDA graph and replayed (the first one
/// on a communicator sets up its scratch collectively, outside the graph, while capturing).
/// Collectives of one communicator must be issued in the same order on every rank and must not run
/// concurrently on different streams. Algorithms: docs/collectives.md.
///
/// recvbuff[i] = op over ranks of sendbuff[i], on every rank.
CCL_API ccl_result_t ccl_allreduce(const void* sendbuff, void* recvbuff, size_t count,
                                   ccl_datatype_t datatype, ccl_redop_t op, ccl_comm_t comm,
                                   cudaStream_t stream);
/// sendbuff holds nranks blocks of recvcount; rank r receives block r reduced over ranks.
CCL_API ccl_result_t ccl_reduce_scatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                        ccl_datatype_t datatype, ccl_redop_t op, ccl_comm_t comm,
                                        cudaStream_t stream);
/// recvbuff block r (of sendcount elements) = rank r's sendbuff, on every rank.
CCL_API ccl_result_t ccl_allgather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                   ccl_datatype_t datatype, ccl_comm_t comm, cudaStream_t stream);
/// recvbuff = root's sendbuff on every rank (sendbuff is read on the root only).
CCL_API ccl_result_t ccl_broadcast(const void* sendbuff, void* recvbuff, size_t count,
                                   ccl_datatype_t datatype, int root, ccl_comm_t comm,
                                   cudaStream_t stream);
/// The root's recvbuff = op over ranks of sendbuff (recvbuff is written on the root only).
CCL_API ccl_result_t ccl_reduce(const void* sendbuff, void* recvbuff, size_t count,
                                ccl_datatype_t datatype, ccl_redop_t op, int root, ccl_comm_t comm,
                                cudaStream_t stream);
/// Block j (count elements) of rank r's sendbuff lands in block r of rank j's recvbuff.
CCL_API ccl_result_t ccl_alltoall(const void* sendbuff, void* recvbuff, size_t count,
                                  ccl_datatype_t datatype, ccl_comm_t comm, cudaStream_t stream);
/// Point-to-point: a send to `peer` must meet a receive of the same size from this rank there,
/// in the same order. Sends and receives between ccl_group_start and ccl_group_end progress
/// together, a group of any size (a kernel per communicator for up to 64 operations, several
/// beyond); outside a group each is its own kernel.
CCL_API ccl_result_t ccl_send(const void* sendbuff, size_t count, ccl_datatype_t datatype, int peer,
                              ccl_comm_t comm, cudaStream_t stream);
CCL_API ccl_result_t ccl_recv(void* recvbuff, size_t count, ccl_datatype_t datatype, int peer,
                              ccl_comm_t comm, cudaStream_t stream);
/// Stream-ordered barrier of all ranks (the dissemination barrier of ccl_barrier_on_stream).
CCL_API ccl_result_t ccl_barrier(ccl_comm_t comm, cudaStream_t stream);
/// Calls until the matching ccl_group_end are queued on this thread and issued together: fused
/// point-to-point, and one thread may drive several communicators (ccl_comm_init_all). Groups
/// nest; only the outermost end issues.
CCL_API ccl_result_t ccl_group_start(void);
CCL_API ccl_result_t ccl_group_end(void);

/// Records `message` as the calling thread's last error and returns `code` (for header-inline
/// helpers such as ccl::dev::launch_collective, which run in the caller's CUDA runtime).
CCL_API ccl_result_t ccl_set_last_error(ccl_result_t code, const char* message);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CCL_CCL_H_
