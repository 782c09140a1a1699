// SPDX-License-Identifier: Apache-2.0
// The part of NCCL 2.28's C ABI (its nccl.h) that the drop-in libnccl.so.2 implements on gicl:
// result, type and operation numbers, the unique id and the communicator configuration, laid
// out byte for byte as NCCL's headers lay them out, so that a program compiled against NCCL's
// nccl.h calls this library unchanged. Values and layouts are checked by static_asserts here and
// by tests/unit/nccl_shim_config_test.cc.
#ifndef GICL_SHIM_NCCL_ABI_H_
#define GICL_SHIM_NCCL_ABI_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The NCCL version whose ABI this library implements (ncclGetVersion): 2.28.9.
#define GICL_NCCL_ABI_VERSION 22809

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/// Built-in reductions; a custom one (ncclRedOpCreatePreMulSum) is a value from ncclNumOps on,
/// unique per communicator. NCCL declares the enum with a 4-byte dummy member, as here.
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01
#define NCCL_API_MAGIC 0xcafebeef

/// ncclConfig_t of NCCL 2.28 (80 bytes). Callers set `size` to their header's sizeof: 2.27's
/// headers end before nChannelsPerNetPeer (72 bytes), 2.29's and 2.30's add fields after
/// nvlinkCentricSched (88, 96 bytes); every version starts with these fields in this order.
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

#ifdef __cplusplus
}  // extern "C"
static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId is passed by value: 128 bytes");
static_assert(sizeof(ncclConfig_t) == 80, "ncclConfig_t of NCCL 2.28 is 80 bytes");
static_assert(offsetof(ncclConfig_t, netName) == 32 && offsetof(ncclConfig_t, commName) == 48 &&
                  offsetof(ncclConfig_t, nvlinkCentricSched) == 76,
              "ncclConfig_t's fields sit where NCCL 2.28's nccl.h puts them");
static_assert(sizeof(ncclRedOp_t) == 4, "ncclRedOp_t is a 4-byte enum");
#endif

#endif  // GICL_SHIM_NCCL_ABI_H_
