// SPDX-License-Identifier: Apache-2.0
/// @file device_abi.h
/// Structs shared by the host library and device code: the device communicator handle, queue-pair
/// handles and the device state page. Fixed layouts with a version word, explicit padding and
/// size checks, because the host library and a user's kernels may be built separately.
#ifndef GICL_DEVICE_ABI_H_
#define GICL_DEVICE_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GICL_DEVICE_ABI_VERSION 1u

/// How a rank is reached from device code (one byte per rank in gicl_device_comm_t.paths).
enum {
  GICL_PATH_SELF = 0,     ///< this rank
  GICL_PATH_P2P = 1,      ///< load/store through a peer mapping (NVLink, PCIe)
  GICL_PATH_NETWORK = 2,  ///< through the CPU proxy (when the communicator opened a network path)
};

/// Queue-pair handle. Operations on different queue pairs are unordered with respect to each
/// other; on one queue pair they follow the plain rules. Over P2P every queue pair is the default.
typedef struct {
  int32_t id;
} gicl_qp_t;

#define GICL_QP_DEFAULT_ID 0  ///< the queue pair of the plain (handle-less) calls
#define GICL_QP_ANY_ID (-1)   ///< the library picks one
#define GICL_QP_ALL_ID (-2)   ///< every queue pair (fence / quiet only)
/// Target of fence / quiet meaning every rank.
#define GICL_RANK_ALL (-1)

/// What went wrong on the device (gicl_device_error_t.kind).
enum {
  GICL_DEVICE_ERROR_TIMEOUT = 1,       ///< a wait passed GICL_WAIT_TIMEOUT
  GICL_DEVICE_ERROR_ABORTED = 2,       ///< the communicator was aborted while waiting
  GICL_DEVICE_ERROR_BAD_ARGUMENT = 3,  ///< GICL_DEVICE_CHECKS found a bad address, rank or length
  GICL_DEVICE_ERROR_NO_TRANSPORT = 4,  ///< the peer is not reachable by any transport of this build
  GICL_DEVICE_ERROR_PROXY = 5,         ///< a host proxy failed the operation (its log says why)
};

/// Device operations, named in error reports (gicl_device_error_t.op).
enum {
  GICL_OP_PUT = 1,
  GICL_OP_GET,
  GICL_OP_P,
  GICL_OP_G,
  GICL_OP_IPUT,
  GICL_OP_IGET,
  GICL_OP_PUT_SIGNAL,
  GICL_OP_SIGNAL,
  GICL_OP_SIGNAL_WAIT,
  GICL_OP_WAIT_UNTIL,
  GICL_OP_ATOMIC,
  GICL_OP_BARRIER,
  GICL_OP_SYNC,
  GICL_OP_QUIET,
  GICL_OP_FENCE,
  GICL_OP_PEER_PTR,
  GICL_OP_COLLECTIVE  ///< a collective kernel's agreement between ranks (e.g. launch sizes)
};

/// Comparisons of wait_until / signal_wait_until / test.
enum {
  GICL_CMP_EQ = 0,
  GICL_CMP_NE,
  GICL_CMP_GT,
  GICL_CMP_GE,
  GICL_CMP_LT,
  GICL_CMP_LE,
  GICL_CMP_AT_LEAST  ///< wrap-safe "counter reached value": (int64_t)(seen - value) >= 0
};

/// Signal update of put_signal / signal.
enum { GICL_SIGNAL_SET = 0, GICL_SIGNAL_ADD = 1 };

/// Device-side wait or check failure, written by the first failing thread, read by the host
/// through gicl_comm_get_async_error. Lives in host-mapped pinned memory.
typedef struct {
  uint32_t state;     ///< 0 none, 1 being written, 2 complete
  uint32_t op;        ///< gicl_device_op_t of the failed operation
  int32_t rank;       ///< the rank that failed
  int32_t peer;       ///< the peer involved, -1 if none
  uint64_t offset;    ///< heap offset of the address waited on (UINT64_MAX if not in the heap)
  uint64_t address;   ///< the raw address
  uint64_t expected;  ///< value waited for (or the bad length)
  uint64_t seen;      ///< last value seen
  uint32_t cmp;       ///< comparison (gicl_cmp_t) for waits
  uint32_t kind;      ///< gicl_device_error_kind: timeout, aborted, bad argument, no transport
  uint64_t reserved[2];
} gicl_device_error_t;

/// Per-communicator device state page (pinned, mapped into device and host address spaces).
typedef struct {
  uint32_t version;
  volatile uint32_t abort;        ///< set by gicl_comm_abort: every device wait stops
  uint64_t wait_timeout_ns;       ///< GICL_WAIT_TIMEOUT in ns; 0 = wait forever
  volatile uint64_t heap_mapped;  ///< bytes of each slot mapped so far (the heap grows)
  gicl_device_error_t error;
  uint64_t reserved[3];
} gicl_device_state_t;

/// The device communicator handle: trivially copyable, passed to kernels by value.
typedef struct {
  uint32_t version;  ///< GICL_DEVICE_ABI_VERSION
  uint32_t flags;    ///< GICL_DEVICE_FLAG_*
  int32_t rank;
  int32_t nranks;
  char* heap_base;             ///< start of the virtual range holding every mapped rank's slot
  uint64_t slot_bytes;         ///< distance between two ranks' slots
  const int32_t* slots;        ///< device array [nranks]: rank -> slot index, -1 if not mapped
  const uint8_t* paths;        ///< device array [nranks]: GICL_PATH_*
  gicl_device_state_t* state;  ///< error report, abort flag, timeout
  uint64_t* sync_in;           ///< symmetric [nranks]: signals received from each rank (barriers)
  uint64_t* sync_expected;     ///< local device [nranks]: signals consumed from each rank
  int32_t own_slot;            ///< slots[rank]
  uint32_t pad;
  uint64_t wait_timeout_ns;  ///< bound of every device wait (GICL_WAIT_TIMEOUT); 0 = forever
  uint32_t* error_lock;  ///< device word: first failing thread takes it, then fills state->error
  const void* net;       ///< internal: the network proxy's request ring; NULL without network peers
  void* coll_scratch;    ///< symmetric: team reductions' staging with network members; or NULL
  uint64_t coll_scratch_bytes;
} gicl_device_comm_t;

#define GICL_DEVICE_FLAG_CHECKS 1u   ///< GICL_DEVICE_CHECKS=1: validate addresses, ranks, lengths
#define GICL_DEVICE_FLAG_ALL_P2P 2u  ///< every rank is P2P with slot == rank: no table lookups

/// A team as device code sees it: ordered list of communicator ranks.
typedef struct {
  int32_t size;
  int32_t my_index;        ///< -1 if this rank is not a member
  const int32_t* members;  ///< device array [size]: team rank -> communicator rank
} gicl_device_team_t;

#ifdef __cplusplus
}  // extern "C"
static_assert(sizeof(gicl_device_error_t) == 72, "gicl_device_error_t is ABI");
static_assert(sizeof(gicl_device_state_t) == 120, "gicl_device_state_t is ABI");
static_assert(sizeof(gicl_device_comm_t) == 120, "gicl_device_comm_t is ABI");
static_assert(sizeof(gicl_device_team_t) == 16, "gicl_device_team_t is ABI");
static_assert(sizeof(gicl_qp_t) == 4, "gicl_qp_t is ABI");
#endif

#endif  // GICL_DEVICE_ABI_H_
