/// @file device_abi.h
/// Structs shared by the host library and device code: the device communicator handle, queue-pair
/// handles and the device state page. Fixed layouts with a version word, explicit padding and
/// size checks, because the host library and a user's kernels may be built separately.
#ifndef CCL_DEVICE_ABI_H_
#define CCL_DEVICE_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CCL_DEVICE_ABI_VERSION 1u

/// How a rank is reached from device code (one byte per rank in ccl_device_comm_t.paths).
enum {
  CCL_PATH_SELF = 0,     ///< this rank
  CCL_PATH_P2P = 1,      ///< load/store through a peer mapping (NVLink, PCIe)
  CCL_PATH_NETWORK = 2,  ///< through the CPU proxy or IBGDA (not available in this build yet)
};

/// Queue-pair handle. Operations on different queue pairs are unordered with respect to each
/// other; on one queue pair they follow the plain rules. Over P2P every queue pair is the default.
typedef struct {
  int32_t id;
} ccl_qp_t;

#define CCL_QP_DEFAULT_ID 0  ///< the queue pair of the plain (handle-less) calls
#define CCL_QP_ANY_ID (-1)   ///< the library picks one
#define CCL_QP_ALL_ID (-2)   ///< every queue pair (fence / quiet only)
/// Target of fence / quiet meaning every rank.
#define CCL_RANK_ALL (-1)

/// What went wrong on the device (ccl_device_error_t.kind).
enum {
  CCL_DEVICE_ERROR_TIMEOUT = 1,       ///< a wait passed CCL_WAIT_TIMEOUT
  CCL_DEVICE_ERROR_ABORTED = 2,       ///< the communicator was aborted while waiting
  CCL_DEVICE_ERROR_BAD_ARGUMENT = 3,  ///< CCL_DEVICE_CHECKS found a bad address, rank or length
  CCL_DEVICE_ERROR_NO_TRANSPORT = 4,  ///< the peer is not reachable by any transport of this build
  CCL_DEVICE_ERROR_PROXY = 5,         ///< a host proxy failed the operation (its log says why)
};

/// Device operations, named in error reports (ccl_device_error_t.op).
enum {
  CCL_OP_PUT = 1,
  CCL_OP_GET,
  CCL_OP_P,
  CCL_OP_G,
  CCL_OP_IPUT,
  CCL_OP_IGET,
  CCL_OP_PUT_SIGNAL,
  CCL_OP_SIGNAL,
  CCL_OP_SIGNAL_WAIT,
  CCL_OP_WAIT_UNTIL,
  CCL_OP_ATOMIC,
  CCL_OP_BARRIER,
  CCL_OP_SYNC,
  CCL_OP_QUIET,
  CCL_OP_FENCE,
  CCL_OP_PEER_PTR,
  CCL_OP_COLLECTIVE  ///< a collective kernel's agreement between ranks (e.g. launch sizes)
};

/// Comparisons of wait_until / signal_wait_until / test.
enum {
  CCL_CMP_EQ = 0,
  CCL_CMP_NE,
  CCL_CMP_GT,
  CCL_CMP_GE,
  CCL_CMP_LT,
  CCL_CMP_LE,
  CCL_CMP_AT_LEAST  ///< wrap-safe "counter reached value": (int64_t)(seen - value) >= 0
};

/// Signal update of put_signal / signal.
enum { CCL_SIGNAL_SET = 0, CCL_SIGNAL_ADD = 1 };

/// Device-side wait or check failure, written by the first failing thread, read by the host
/// through ccl_comm_get_async_error. Lives in host-mapped pinned memory.
typedef struct {
  uint32_t state;     ///< 0 none, 1 being written, 2 complete
  uint32_t op;        ///< ccl_device_op_t of the failed operation
  int32_t rank;       ///< the rank that failed
  int32_t peer;       ///< the peer involved, -1 if none
  uint64_t offset;    ///< heap offset of the address waited on (UINT64_MAX if not in the heap)
  uint64_t address;   ///< the raw address
  uint64_t expected;  ///< value waited for (or the bad length)
  uint64_t seen;      ///< last value seen
  uint32_t cmp;       ///< comparison (ccl_cmp_t) for waits
  uint32_t kind;      ///< ccl_device_error_kind: timeout, aborted, bad argument, no transport
  uint64_t reserved[2];
} ccl_device_error_t;

/// Per-communicator device state page (pinned, mapped into device and host address spaces).
typedef struct {
  uint32_t version;
  volatile uint32_t abort;        ///< set by ccl_comm_abort: every device wait stops
  uint64_t wait_timeout_ns;       ///< CCL_WAIT_TIMEOUT in ns; 0 = wait forever
  volatile uint64_t heap_mapped;  ///< bytes of each slot mapped so far (the heap grows)
  ccl_device_error_t error;
  uint64_t reserved[3];
} ccl_device_state_t;

/// The device communicator handle: trivially copyable, passed to kernels by value.
typedef struct {
  uint32_t version;  ///< CCL_DEVICE_ABI_VERSION
  uint32_t flags;    ///< CCL_DEVICE_FLAG_*
  int32_t rank;
  int32_t nranks;
  char* heap_base;            ///< start of the virtual range holding every mapped rank's slot
  uint64_t slot_bytes;        ///< distance between two ranks' slots
  const int32_t* slots;       ///< device array [nranks]: rank -> slot index, -1 if not mapped
  const uint8_t* paths;       ///< device array [nranks]: CCL_PATH_*
  ccl_device_state_t* state;  ///< error report, abort flag, timeout
  uint64_t* sync_in;          ///< symmetric [nranks]: signals received from each rank (barriers)
  uint64_t* sync_expected;    ///< local device [nranks]: signals consumed from each rank
  int32_t own_slot;           ///< slots[rank]
  uint32_t pad;
  uint64_t wait_timeout_ns;  ///< bound of every device wait (CCL_WAIT_TIMEOUT); 0 = forever
  uint32_t* error_lock;  ///< device word: first failing thread takes it, then fills state->error
  uint64_t reserved[3];
} ccl_device_comm_t;

#define CCL_DEVICE_FLAG_CHECKS 1u   ///< CCL_DEVICE_CHECKS=1: validate addresses, ranks, lengths
#define CCL_DEVICE_FLAG_ALL_P2P 2u  ///< every rank is P2P with slot == rank: no table lookups

/// A team as device code sees it: ordered list of communicator ranks.
typedef struct {
  int32_t size;
  int32_t my_index;        ///< -1 if this rank is not a member
  const int32_t* members;  ///< device array [size]: team rank -> communicator rank
} ccl_device_team_t;

#ifdef __cplusplus
}  // extern "C"
static_assert(sizeof(ccl_device_error_t) == 72, "ccl_device_error_t is ABI");
static_assert(sizeof(ccl_device_state_t) == 120, "ccl_device_state_t is ABI");
static_assert(sizeof(ccl_device_comm_t) == 120, "ccl_device_comm_t is ABI");
static_assert(sizeof(ccl_device_team_t) == 16, "ccl_device_team_t is ABI");
static_assert(sizeof(ccl_qp_t) == 4, "ccl_qp_t is ABI");
#endif

#endif  // CCL_DEVICE_ABI_H_
