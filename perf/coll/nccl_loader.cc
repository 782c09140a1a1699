// SPDX-License-Identifier: Apache-2.0
#include "nccl_loader.hpp"

#include <dlfcn.h>

namespace perf {
namespace {

enum Fn {
  kGetVersion,
  kGetUniqueId,
  kInitRank,
  kDestroy,
  kMemAlloc,
  kMemFree,
  kWinReg,
  kWinDereg,
  kAllReduce,
  kErrorString,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kSend,
  kRecv,
  kGroupStart,
  kGroupEnd,
  kCommSplit,
  kCount
};
const char* kNames[kCount] = {"ncclGetVersion",
                              "ncclGetUniqueId",
                              "ncclCommInitRank",
                              "ncclCommDestroy",
                              "ncclMemAlloc",
                              "ncclMemFree",
                              "ncclCommWindowRegister",
                              "ncclCommWindowDeregister",
                              "ncclAllReduce",
                              "ncclGetErrorString",
                              "ncclReduceScatter",
                              "ncclAllGather",
                              "ncclBroadcast",
                              "ncclReduce",
                              "ncclSend",
                              "ncclRecv",
                              "ncclGroupStart",
                              "ncclGroupEnd",
                              "ncclCommSplit"};

// gicl_datatype_t and gicl_redop_t carry NCCL's values (gicl/types.h;
// tests/unit/abi_values_test.cc).
int nccl_type(gicl_datatype_t d) {
  return static_cast<int>(d);
}
int nccl_op(gicl_redop_t op) {
  return static_cast<int>(op);
}
constexpr int kWinCollSymmetric = 0x01;

}  // namespace

bool Nccl::load(std::string* error) {
  lib_ = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    *error = std::string("cannot load libnccl.so.2: ") + dlerror();
    return false;
  }
  for (int i = 0; i < kCount; ++i) {
    fn_[i] = dlsym(lib_, kNames[i]);
    if (!fn_[i]) {
      *error = std::string("libnccl.so.2 lacks ") + kNames[i] + " (NCCL >= 2.27 needed)";
      return false;
    }
  }
  reinterpret_cast<int (*)(int*)>(fn_[kGetVersion])(&version_);
  alltoall_ = dlsym(lib_, "ncclAlltoAll");
  return true;
}

int Nccl::get_unique_id(NcclUniqueId* id) const {
  return reinterpret_cast<int (*)(NcclUniqueId*)>(fn_[kGetUniqueId])(id);
}
int Nccl::init_rank(void** comm, int nranks, const NcclUniqueId& id, int rank) const {
  return reinterpret_cast<int (*)(void**, int, NcclUniqueId, int)>(fn_[kInitRank])(comm, nranks, id,
                                                                                   rank);
}
int Nccl::split(void* comm, int color, int key, void** out) const {
  // The last parameter is an ncclConfig_t*: NULL takes the parent's configuration.
  return reinterpret_cast<int (*)(void*, int, int, void**, void*)>(fn_[kCommSplit])(
      comm, color, key, out, nullptr);
}
int Nccl::destroy(void* comm) const {
  return reinterpret_cast<int (*)(void*)>(fn_[kDestroy])(comm);
}
int Nccl::mem_alloc(void** ptr, size_t bytes) const {
  return reinterpret_cast<int (*)(void**, size_t)>(fn_[kMemAlloc])(ptr, bytes);
}
int Nccl::mem_free(void* ptr) const {
  return reinterpret_cast<int (*)(void*)>(fn_[kMemFree])(ptr);
}
int Nccl::window_register(void* comm, void* buf, size_t bytes, void** win) const {
  return reinterpret_cast<int (*)(void*, void*, size_t, void**, int)>(fn_[kWinReg])(
      comm, buf, bytes, win, kWinCollSymmetric);
}
int Nccl::window_deregister(void* comm, void* win) const {
  return reinterpret_cast<int (*)(void*, void*)>(fn_[kWinDereg])(comm, win);
}
int Nccl::allreduce(const void* send, void* recv, size_t count, gicl_datatype_t d, gicl_redop_t op,
                    void* comm, cudaStream_t s) const {
  return reinterpret_cast<int (*)(const void*, void*, size_t, int, int, void*, cudaStream_t)>(
      fn_[kAllReduce])(send, recv, count, nccl_type(d), nccl_op(op), comm, s);
}
int Nccl::reduce_scatter(const void* send, void* recv, size_t count, gicl_datatype_t d,
                         gicl_redop_t op, void* comm, cudaStream_t s) const {
  return reinterpret_cast<int (*)(const void*, void*, size_t, int, int, void*, cudaStream_t)>(
      fn_[kReduceScatter])(send, recv, count, nccl_type(d), nccl_op(op), comm, s);
}
int Nccl::allgather(const void* send, void* recv, size_t count, gicl_datatype_t d, void* comm,
                    cudaStream_t s) const {
  return reinterpret_cast<int (*)(const void*, void*, size_t, int, void*, cudaStream_t)>(
      fn_[kAllGather])(send, recv, count, nccl_type(d), comm, s);
}
int Nccl::broadcast(const void* send, void* recv, size_t count, gicl_datatype_t d, int root,
                    void* comm, cudaStream_t s) const {
  return reinterpret_cast<int (*)(const void*, void*, size_t, int, int, void*, cudaStream_t)>(
      fn_[kBroadcast])(send, recv, count, nccl_type(d), root, comm, s);
}
int Nccl::reduce(const void* send, void* recv, size_t count, gicl_datatype_t d, gicl_redop_t op,
                 int root, void* comm, cudaStream_t s) const {
  return reinterpret_cast<int (*)(const void*, void*, size_t, int, int, int, void*, cudaStream_t)>(
      fn_[kReduce])(send, recv, count, nccl_type(d), nccl_op(op), root, comm, s);
}
int Nccl::send(const void* buf, size_t count, gicl_datatype_t d, int peer, void* comm,
               cudaStream_t s) const {
  return reinterpret_cast<int (*)(const void*, size_t, int, int, void*, cudaStream_t)>(fn_[kSend])(
      buf, count, nccl_type(d), peer, comm, s);
}
int Nccl::recv(void* buf, size_t count, gicl_datatype_t d, int peer, void* comm,
               cudaStream_t s) const {
  return reinterpret_cast<int (*)(void*, size_t, int, int, void*, cudaStream_t)>(fn_[kRecv])(
      buf, count, nccl_type(d), peer, comm, s);
}
int Nccl::group_start() const {
  return reinterpret_cast<int (*)()>(fn_[kGroupStart])();
}
int Nccl::group_end() const {
  return reinterpret_cast<int (*)()>(fn_[kGroupEnd])();
}
int Nccl::alltoall(const void* send, void* recv, size_t count, gicl_datatype_t d, void* comm,
                   cudaStream_t s) const {
  return reinterpret_cast<int (*)(const void*, void*, size_t, int, void*, cudaStream_t)>(alltoall_)(
      send, recv, count, nccl_type(d), comm, s);
}
const char* Nccl::error_string(int result) const {
  return reinterpret_cast<const char* (*)(int)>(fn_[kErrorString])(result);
}

}  // namespace perf
