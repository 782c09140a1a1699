// SPDX-License-Identifier: Apache-2.0
// NCCL's C entry points on gicl (the drop-in libnccl.so.2): each maps its arguments onto the
// public gicl API and gicl's result back (mapping.hpp). What gicl does not do yet returns
// ncclInvalidUsage with ncclGetLastError saying so, never a silent success.
//
// Groups: NCCL lets one thread create several communicators inside ncclGroupStart/End, each
// initialized when the group ends (nccl-tests' -g). gicl's init is collective and blocking, so
// an init inside a group is recorded with the calling thread's device and run at the outermost
// ncclGroupEnd, every recorded init on a thread of its own, before the group's operations issue.
// NCCL's destroy is local, gicl's collective: communicators that one thread created together (a
// group's inits, ncclCommInitAll) form a family whose destroys are deferred until the thread has
// destroyed every member, which then run at once, each on a thread of its own.
#include <cuda_runtime_api.h>

#include <strings.h>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gicl/gicl.h"
#include "shim/nccl/config.hpp"
#include "shim/nccl/custom_ops.hpp"
#include "shim/nccl/env.hpp"
#include "shim/nccl/mapping.hpp"
#include "shim/nccl/premul.hpp"

struct ncclComm;
/// Communicators one thread created together: destroyed together (see above).
struct Family {
  std::mutex m;
  std::vector<ncclComm*> members;
  size_t destroyed = 0;
};

struct ncclComm {
  gicl_comm_t g = nullptr;
  std::shared_ptr<Family> family;  // null: created alone
  gicl::nccl::CommConfig config;
  int device = -1;
  // A pending init (inside a group): its arguments until the group ends.
  bool pending = false;
  int nranks = 0, rank = 0;
  ncclUniqueId id{};
  gicl::nccl::CustomOps ops;                          // ncclRedOpCreatePreMulSum's
  std::unique_ptr<gicl::nccl::PremulScratch> premul;  // their products, made on first use
};
typedef struct ncclComm* ncclComm_t;
typedef void* ncclWindow_t;

#define NCCL_API extern "C" __attribute__((visibility("default")))

namespace {

using gicl::nccl::to_nccl;

thread_local std::string t_last_error;
thread_local int t_group_depth = 0;
thread_local std::vector<ncclComm*> t_pending;
thread_local std::vector<ncclComm*> t_premul_in_group;  // took PreMulSum buffers in this group

/// Records the message for ncclGetLastError and returns `r`.
ncclResult_t fail(ncclResult_t r, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  t_last_error = buf;
  return r;
}

/// gicl's result, its message kept for ncclGetLastError.
ncclResult_t from_gicl(gicl_result_t r) {
  if (r != GICL_SUCCESS) t_last_error = gicl_get_last_error();
  return to_nccl(r);
}

/// NCCL's variables that have a gicl meaning, set as the GICL_* ones before gicl first reads its
/// settings (shim/nccl/env.hpp); those with none are named at NCCL_DEBUG=INFO.
void import_nccl_env() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> ignored;
    for (const auto& m :
         gicl::nccl::nccl_env_to_gicl([](const char* n) { return std::getenv(n); }, &ignored))
      setenv(m.name.c_str(), m.value.c_str(), 0);
    const char* nd = std::getenv("NCCL_DEBUG");
    if (nd != nullptr && (!strcasecmp(nd, "INFO") || !strcasecmp(nd, "TRACE")))
      for (const auto& line : ignored)
        std::fprintf(stderr, "gicl's libnccl.so.2: %s\n", line.c_str());
  });
}

/// Prints once, where NCCL_DEBUG asks for its version line or GICL_DEBUG for INFO, that NCCL's
/// calls go to gicl.
void banner() {
  import_nccl_env();
  static std::once_flag once;
  std::call_once(once, [] {
    const char* nd = std::getenv("NCCL_DEBUG");
    const char* gd = std::getenv("GICL_DEBUG");
    const bool want = (nd && (!strcasecmp(nd, "VERSION") || !strcasecmp(nd, "INFO") ||
                              !strcasecmp(nd, "TRACE"))) ||
                      (gd && !strcasecmp(gd, "INFO"));
    if (!want) return;
    int v = 0;
    (void)gicl_get_version(&v);
    std::fprintf(stderr,
                 "NCCL version 2.28.9 (ABI): calls go to gicl %d.%d.%d through its libnccl.so.2; "
                 "GICL_* settings apply\n",
                 v / 10000, v / 100 % 100, v % 100);
  });
}

ncclResult_t check_comm(ncclComm_t comm, const char* fn) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "%s: comm is NULL", fn);
  if (comm->pending)
    return fail(ncclInvalidUsage,
                "%s: the communicator's init waits for ncclGroupEnd (it was created inside "
                "this group)",
                fn);
  return ncclSuccess;
}

#define SHIM_CHECK_COMM(comm)                                                       \
  do {                                                                              \
    if (ncclResult_t r_ = check_comm(comm, __func__); r_ != ncclSuccess) return r_; \
  } while (0)

ncclResult_t types_of(const char* fn, ncclDataType_t t, gicl_datatype_t* gt) {
  if (!gicl::nccl::to_gicl(t, gt))
    return fail(ncclInvalidArgument, "%s: datatype %d is not one of NCCL's 12 types", fn,
                static_cast<int>(t));
  return ncclSuccess;
}

/// A reduction call's gicl operation and the buffer it reduces. A built-in reduction reads `send`
/// as it is. A PreMulSum one (from ncclNumOps on) reads `send` multiplied by its scalar, written
/// into `into` where given (the call's own receive buffer, as large as the input), else into a
/// buffer of the communicator's, and gicl sums that. `count` is the input's elements, or with
/// `per_rank` its elements per rank (reduce_scatter's).
ncclResult_t reduction_of(ncclComm* c, const char* fn, ncclRedOp_t op, ncclDataType_t type,
                          const void* send, size_t count, bool per_rank, void* into,
                          cudaStream_t stream, gicl_redop_t* g, const void** in) {
  *in = send;
  if (gicl::nccl::to_gicl(op, g)) return ncclSuccess;
  if (static_cast<int>(op) < ncclNumOps)
    return fail(ncclInvalidArgument, "%s: reduction %d is not one of NCCL's", fn,
                static_cast<int>(op));
  gicl::nccl::PreMulSum p;
  if (!c->ops.find(op, &p))
    return fail(ncclInvalidArgument,
                "%s: reduction %d was not created on this communicator "
                "(ncclRedOpCreatePreMulSum), or was destroyed",
                fn, static_cast<int>(op));
  if (p.type != type)
    return fail(ncclInvalidArgument,
                "%s: reduction %d was created for datatype %d; the call's datatype is %d", fn,
                static_cast<int>(op), static_cast<int>(p.type), static_cast<int>(type));
  if (per_rank) {
    int n = 0;
    if (const gicl_result_t r = gicl_comm_size(c->g, &n); r != GICL_SUCCESS) return from_gicl(r);
    count *= static_cast<size_t>(n);
  }
  void* out = into;
  if (out == nullptr && count > 0) {
    if (!c->premul) c->premul = std::make_unique<gicl::nccl::PremulScratch>(c->device);
    const bool in_group = t_group_depth > 0;
    const size_t bytes = count * gicl_datatype_size(static_cast<gicl_datatype_t>(type));
    if (const cudaError_t e = c->premul->get(stream, bytes, in_group, &out); e != cudaSuccess)
      return fail(ncclUnhandledCudaError, "%s: a buffer of %zu elements for PreMulSum: %s", fn,
                  count, cudaGetErrorString(e));
    if (in_group) t_premul_in_group.push_back(c);
  }
  if (const cudaError_t e = gicl::nccl::premul(p, send, out, count, stream); e != cudaSuccess)
    return fail(ncclUnhandledCudaError, "%s: PreMulSum's multiply: %s", fn, cudaGetErrorString(e));
  *g = gicl_sum;
  *in = out;
  return ncclSuccess;
}

ncclResult_t init_now(ncclComm* c) {
  gicl_unique_id_t id;
  static_assert(sizeof(id) == sizeof(c->id), "the unique ids have one size");
  std::memcpy(&id, &c->id, sizeof(id));
  return from_gicl(gicl_comm_init_rank(&c->g, c->nranks, id, c->rank));
}

ncclResult_t init_rank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                       const ncclConfig_t* config) {
  banner();
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "ncclCommInitRank: rank %d of nranks %d", rank, nranks);
  auto* c = new ncclComm;
  std::string why;
  if (const ncclResult_t r = gicl::nccl::read_config(config, &c->config, &why); r != ncclSuccess) {
    delete c;
    return fail(r, "ncclCommInitRankConfig: %s", why.c_str());
  }
  if (cudaGetDevice(&c->device) != cudaSuccess) c->device = -1;
  c->nranks = nranks;
  c->rank = rank;
  c->id = id;
  if (t_group_depth > 0) {
    c->pending = true;
    t_pending.push_back(c);
    *comm = c;
    return ncclSuccess;
  }
  if (const ncclResult_t r = init_now(c); r != ncclSuccess) {
    delete c;
    return r;
  }
  *comm = c;
  return ncclSuccess;
}

/// The outermost group end's inits: each on a thread of its own, on the device its caller had.
ncclResult_t run_pending() {
  std::vector<ncclComm*> todo;
  todo.swap(t_pending);
  if (todo.empty()) return ncclSuccess;
  std::vector<ncclResult_t> rc(todo.size(), ncclSuccess);
  std::vector<std::string> msg(todo.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < todo.size(); ++i)
    threads.emplace_back([&, i] {
      if (todo[i]->device >= 0 && cudaSetDevice(todo[i]->device) != cudaSuccess) {
        rc[i] = ncclUnhandledCudaError;
        msg[i] = "cudaSetDevice failed";
        return;
      }
      rc[i] = init_now(todo[i]);
      msg[i] = t_last_error;
    });
  for (auto& t : threads) t.join();
  ncclResult_t first = ncclSuccess;
  auto family = todo.size() > 1 ? std::make_shared<Family>() : nullptr;
  for (size_t i = 0; i < todo.size(); ++i) {
    todo[i]->pending = false;
    if (family) {
      todo[i]->family = family;
      family->members.push_back(todo[i]);
    }
    if (rc[i] != ncclSuccess && first == ncclSuccess) {
      first = rc[i];
      t_last_error =
          "ncclGroupEnd: the init of rank " + std::to_string(todo[i]->rank) + ": " + msg[i];
    }
  }
  return first;
}

}  // namespace

NCCL_API ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = GICL_NCCL_ABI_VERSION;
  return ncclSuccess;
}

NCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  banner();
  if (id == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  gicl_unique_id_t g;
  if (const gicl_result_t r = gicl_get_unique_id(&g); r != GICL_SUCCESS) return from_gicl(r);
  std::memcpy(id, &g, sizeof(*id));
  return ncclSuccess;
}

NCCL_API const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the gicl developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

NCCL_API const char* ncclGetLastError(ncclComm_t) {
  return t_last_error.c_str();
}

NCCL_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return init_rank(comm, nranks, id, rank, nullptr);
}

NCCL_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                             int rank, ncclConfig_t* config) {
  return init_rank(comm, nranks, id, rank, config);
}

NCCL_API ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int nId,
                                               ncclUniqueId* ids, ncclConfig_t* config) {
  if (nId != 1 || ids == nullptr)
    return fail(ncclInvalidUsage,
                "ncclCommInitRankScalable: %d unique ids; gicl's NCCL ABI takes exactly one", nId);
  return init_rank(comm, nranks, ids[0], rank, config);
}

NCCL_API ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  banner();
  if (comms == nullptr || ndev < 1)
    return fail(ncclInvalidArgument, "ncclCommInitAll: comms NULL or ndev %d", ndev);
  std::vector<gicl_comm_t> g(ndev);
  if (const gicl_result_t r = gicl_comm_init_all(g.data(), ndev, devlist); r != GICL_SUCCESS)
    return from_gicl(r);
  auto family = ndev > 1 ? std::make_shared<Family>() : nullptr;
  for (int i = 0; i < ndev; ++i) {
    comms[i] = new ncclComm;
    comms[i]->g = g[i];
    comms[i]->family = family;
    if (family) family->members.push_back(comms[i]);
    comms[i]->device = devlist ? devlist[i] : i;
    comms[i]->nranks = ndev;
    comms[i]->rank = i;
  }
  return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  SHIM_CHECK_COMM(comm);
  return ncclSuccess;  // destroy waits for every rank and releases everything
}

/// Marks `comm` destroyed in its family; true when it was the last, the family's members then
/// in `*all`.
bool last_of_family(ncclComm* comm, std::vector<ncclComm*>* all) {
  Family& f = *comm->family;
  std::lock_guard<std::mutex> lock(f.m);
  if (++f.destroyed < f.members.size()) return false;
  *all = f.members;
  return true;
}

NCCL_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (!comm->family) {
    const gicl_result_t r = comm->g ? gicl_comm_destroy(comm->g) : GICL_SUCCESS;
    delete comm;
    return from_gicl(r);
  }
  std::vector<ncclComm*> all;
  if (!last_of_family(comm, &all)) return ncclSuccess;  // with the family's last destroy
  std::vector<gicl_result_t> rc(all.size(), GICL_SUCCESS);
  std::vector<std::string> msg(all.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < all.size(); ++i)
    threads.emplace_back([&, i] {
      if (all[i]->g == nullptr) return;  // aborted already
      rc[i] = gicl_comm_destroy(all[i]->g);
      if (rc[i] != GICL_SUCCESS) msg[i] = gicl_get_last_error();
    });
  for (auto& t : threads) t.join();
  gicl_result_t first = GICL_SUCCESS;
  for (size_t i = 0; i < all.size(); ++i) {
    if (rc[i] != GICL_SUCCESS && first == GICL_SUCCESS) {
      first = rc[i];
      t_last_error = msg[i];
    }
    delete all[i];
  }
  return to_nccl(first);
}

NCCL_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  const gicl_result_t r = comm->g ? gicl_comm_abort(comm->g) : GICL_SUCCESS;
  comm->g = nullptr;
  if (comm->family) {
    // The family's last destroy or abort frees every member.
    std::vector<ncclComm*> all;
    if (last_of_family(comm, &all))
      for (ncclComm* m : all) {
        if (m->g != nullptr) (void)gicl_comm_abort(m->g);
        delete m;
      }
  } else {
    delete comm;
  }
  return from_gicl(r);
}

NCCL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async) {
  if (async == nullptr)
    return fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm is NULL");
  if (comm->pending) {
    *async = ncclInProgress;
    return ncclSuccess;
  }
  gicl_result_t e = GICL_SUCCESS;
  const char* why = nullptr;
  if (const gicl_result_t r = gicl_comm_get_async_error(comm->g, &e, &why); r != GICL_SUCCESS)
    return from_gicl(r);
  *async = to_nccl(e);
  if (e != GICL_SUCCESS && why != nullptr) t_last_error = why;
  return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  SHIM_CHECK_COMM(comm);
  if (count == nullptr) return fail(ncclInvalidArgument, "ncclCommCount: count is NULL");
  return from_gicl(gicl_comm_size(comm->g, count));
}

NCCL_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  SHIM_CHECK_COMM(comm);
  if (rank == nullptr) return fail(ncclInvalidArgument, "ncclCommUserRank: rank is NULL");
  return from_gicl(gicl_comm_rank(comm->g, rank));
}

NCCL_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  SHIM_CHECK_COMM(comm);
  if (device == nullptr) return fail(ncclInvalidArgument, "ncclCommCuDevice: device is NULL");
  return from_gicl(gicl_comm_device(comm->g, device));
}

namespace {

/// A communicator made from `parent` by `make` (split, shrink): its config is `config`, else the
/// parent's; *newcomm is NULL unless `make` gave one.
template <typename Make>
ncclResult_t child_comm(ncclComm_t parent, ncclConfig_t* config, const char* fn,
                        ncclComm_t* newcomm, Make make) {
  *newcomm = nullptr;
  auto* c = new ncclComm;
  std::string why;
  if (config != nullptr) {
    if (const ncclResult_t r = gicl::nccl::read_config(config, &c->config, &why);
        r != ncclSuccess) {
      delete c;
      return fail(r, "%s: %s", fn, why.c_str());
    }
  } else {
    c->config = parent->config;
  }
  const gicl_result_t r = make(&c->g);
  if (r != GICL_SUCCESS || c->g == nullptr) {
    delete c;
    return from_gicl(r);
  }
  c->device = parent->device;
  *newcomm = c;
  return ncclSuccess;
}

}  // namespace

NCCL_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                    ncclConfig_t* config) {
  SHIM_CHECK_COMM(comm);
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
  return child_comm(comm, config, "ncclCommSplit", newcomm, [&](gicl_comm_t* g) {
    return gicl_comm_split(comm->g, color == NCCL_SPLIT_NOCOLOR ? GICL_SPLIT_NOCOLOR : color, key,
                           g);
  });
}

// NCCL_SHRINK_DEFAULT and NCCL_SHRINK_ABORT are gicl's two flags.
NCCL_API ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                     ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  SHIM_CHECK_COMM(comm);
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "ncclCommShrink: newcomm is NULL");
  *newcomm = nullptr;
  if (excludeRanksCount < 0)
    return fail(ncclInvalidArgument, "ncclCommShrink: excludeRanksCount=%d is negative",
                excludeRanksCount);
  if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT)
    return fail(ncclInvalidArgument,
                "ncclCommShrink: shrinkFlags=%d is not NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT",
                shrinkFlags);
  return child_comm(comm, config, "ncclCommShrink", newcomm, [&](gicl_comm_t* g) {
    return gicl_comm_shrink(
        comm->g, excludeRanksList, excludeRanksCount, g,
        shrinkFlags == NCCL_SHRINK_ABORT ? GICL_SHRINK_ABORT : GICL_SHRINK_DEFAULT);
  });
}

NCCL_API ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  if (cudaMalloc(ptr, size) != cudaSuccess)
    return fail(ncclUnhandledCudaError, "ncclMemAlloc: cudaMalloc of %zu bytes failed", size);
  return ncclSuccess;
}

NCCL_API ncclResult_t ncclMemFree(void* ptr) {
  if (cudaFree(ptr) != cudaSuccess)
    return fail(ncclUnhandledCudaError, "ncclMemFree: cudaFree(%p) failed", ptr);
  return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size,
                                       void** handle) {
  SHIM_CHECK_COMM(comm);
  return from_gicl(gicl_comm_register(comm->g, buff, size, handle));
}

NCCL_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  SHIM_CHECK_COMM(comm);
  return from_gicl(gicl_comm_deregister(comm->g, handle));
}

NCCL_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size,
                                             ncclWindow_t* win, int) {
  SHIM_CHECK_COMM(comm);
  return from_gicl(gicl_comm_register(comm->g, buff, size, win));
}

NCCL_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  SHIM_CHECK_COMM(comm);
  return from_gicl(gicl_comm_deregister(comm->g, win));
}

NCCL_API ncclResult_t ncclGroupStart() {
  ++t_group_depth;
  return from_gicl(gicl_group_start());
}

NCCL_API ncclResult_t ncclGroupEnd() {
  if (t_group_depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  ncclResult_t inits = ncclSuccess;
  if (--t_group_depth == 0) inits = run_pending();
  const ncclResult_t r = from_gicl(gicl_group_end());
  if (t_group_depth == 0) {
    for (ncclComm* c : t_premul_in_group) c->premul->group_ended();
    t_premul_in_group.clear();
  }
  return inits != ncclSuccess ? inits : r;
}

NCCL_API ncclResult_t ncclGroupSimulateEnd(void*) {
  return fail(ncclInvalidUsage, "ncclGroupSimulateEnd is not available through gicl's NCCL ABI");
}

NCCL_API ncclResult_t ncclDevCommCreate(ncclComm_t, const void*, void*) {
  return fail(ncclInvalidUsage,
              "ncclDevCommCreate: NCCL's device API is not available through gicl's NCCL ABI "
              "(gicl's own device API is gicl/device.cuh)");
}

NCCL_API ncclResult_t ncclDevCommDestroy(ncclComm_t, const void*) {
  return fail(ncclInvalidUsage, "ncclDevCommDestroy: no NCCL device communicator exists here");
}

NCCL_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar,
                                               ncclDataType_t datatype, int residence,
                                               ncclComm_t comm) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: comm is NULL");
  std::string why;
  if (!comm->ops.create(datatype, residence, scalar, op, &why))
    return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: %s", why.c_str());
  return ncclSuccess;
}

NCCL_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclRedOpDestroy: comm is NULL");
  if (!comm->ops.destroy(op))
    return fail(ncclInvalidArgument,
                "ncclRedOpDestroy: reduction %d is no live reduction of this communicator's",
                static_cast<int>(op));
  return ncclSuccess;
}

NCCL_API ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  SHIM_CHECK_COMM(comm);
  gicl_datatype_t t;
  gicl_redop_t o;
  const void* in = nullptr;
  if (ncclResult_t r = types_of(__func__, type, &t); r != ncclSuccess) return r;
  if (ncclResult_t r =
          reduction_of(comm, __func__, op, type, send, count, false, recv, stream, &o, &in);
      r != ncclSuccess)
    return r;
  return from_gicl(gicl_allreduce(in, recv, count, t, o, comm->g, stream));
}

NCCL_API ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t recvcount,
                                        ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                        cudaStream_t stream) {
  SHIM_CHECK_COMM(comm);
  gicl_datatype_t t;
  gicl_redop_t o;
  const void* in = nullptr;
  if (ncclResult_t r = types_of(__func__, type, &t); r != ncclSuccess) return r;
  if (ncclResult_t r =
          reduction_of(comm, __func__, op, type, send, recvcount, true, nullptr, stream, &o, &in);
      r != ncclSuccess)
    return r;
  return from_gicl(gicl_reduce_scatter(in, recv, recvcount, t, o, comm->g, stream));
}

NCCL_API ncclResult_t ncclAllGather(const void* send, void* recv, size_t sendcount,
                                    ncclDataType_t type, ncclComm_t comm, cudaStream_t stream) {
  SHIM_CHECK_COMM(comm);
  gicl_datatype_t t;
  if (ncclResult_t r = types_of(__func__, type, &t); r != ncclSuccess) return r;
  return from_gicl(gicl_allgather(send, recv, sendcount, t, comm->g, stream));
}

NCCL_API ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type,
                                    int root, ncclComm_t comm, cudaStream_t stream) {
  SHIM_CHECK_COMM(comm);
  gicl_datatype_t t;
  if (ncclResult_t r = types_of(__func__, type, &t); r != ncclSuccess) return r;
  return from_gicl(gicl_broadcast(send, recv, count, t, root, comm->g, stream));
}

NCCL_API ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t type, int root,
                                ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, type, root, comm, stream);
}

NCCL_API ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                                 ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  SHIM_CHECK_COMM(comm);
  gicl_datatype_t t;
  gicl_redop_t o;
  const void* in = nullptr;
  if (ncclResult_t r = types_of(__func__, type, &t); r != ncclSuccess) return r;
  // A PreMulSum's products go to a buffer of the communicator's: a non-root's receive buffer is
  // not the caller's to have written.
  if (ncclResult_t r =
          reduction_of(comm, __func__, op, type, send, count, false, nullptr, stream, &o, &in);
      r != ncclSuccess)
    return r;
  return from_gicl(gicl_reduce(in, recv, count, t, o, root, comm->g, stream));
}

NCCL_API ncclResult_t ncclAlltoAll(const void* send, void* recv, size_t count, ncclDataType_t type,
                                   ncclComm_t comm, cudaStream_t stream) {
  SHIM_CHECK_COMM(comm);
  gicl_datatype_t t;
  if (ncclResult_t r = types_of(__func__, type, &t); r != ncclSuccess) return r;
  return from_gicl(gicl_alltoall(send, recv, count, t, comm->g, stream));
}

NCCL_API ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t type, int peer,
                               ncclComm_t comm, cudaStream_t stream) {
  SHIM_CHECK_COMM(comm);
  gicl_datatype_t t;
  if (ncclResult_t r = types_of(__func__, type, &t); r != ncclSuccess) return r;
  return from_gicl(gicl_send(send, count, t, peer, comm->g, stream));
}

NCCL_API ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t type, int peer,
                               ncclComm_t comm, cudaStream_t stream) {
  SHIM_CHECK_COMM(comm);
  gicl_datatype_t t;
  if (ncclResult_t r = types_of(__func__, type, &t); r != ncclSuccess) return r;
  return from_gicl(gicl_recv(recv, count, t, peer, comm->g, stream));
}

namespace {

/// Gather (`gather`) or scatter as one group of sends and receives with the root (NCCL's own
/// way): every rank's one block to or from the root, the root's n blocks of `count` each.
ncclResult_t rooted(const char* fn, bool gather, const void* send, void* recv, size_t count,
                    ncclDataType_t type, int root, ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = check_comm(comm, fn); r != ncclSuccess) return r;
  gicl_datatype_t t;
  if (ncclResult_t r = types_of(fn, type, &t); r != ncclSuccess) return r;
  int n = 0, me = 0;
  (void)gicl_comm_size(comm->g, &n);
  (void)gicl_comm_rank(comm->g, &me);
  const size_t bytes = count * gicl_datatype_size(t);
  gicl_result_t r = gicl_group_start();
  if (r == GICL_SUCCESS && gather) r = gicl_send(send, count, t, root, comm->g, stream);
  for (int p = 0; p < n && me == root && r == GICL_SUCCESS; ++p)
    r = gather
            ? gicl_recv(static_cast<char*>(recv) + p * bytes, count, t, p, comm->g, stream)
            : gicl_send(static_cast<const char*>(send) + p * bytes, count, t, p, comm->g, stream);
  if (r == GICL_SUCCESS && !gather) r = gicl_recv(recv, count, t, root, comm->g, stream);
  const gicl_result_t end = gicl_group_end();
  return from_gicl(r != GICL_SUCCESS ? r : end);
}

}  // namespace

NCCL_API ncclResult_t ncclGather(const void* send, void* recv, size_t count, ncclDataType_t type,
                                 int root, ncclComm_t comm, cudaStream_t stream) {
  return rooted(__func__, true, send, recv, count, type, root, comm, stream);
}

NCCL_API ncclResult_t ncclScatter(const void* send, void* recv, size_t count, ncclDataType_t type,
                                  int root, ncclComm_t comm, cudaStream_t stream) {
  return rooted(__func__, false, send, recv, count, type, root, comm, stream);
}
