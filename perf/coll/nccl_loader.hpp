// SPDX-License-Identifier: Apache-2.0
// NCCL loaded at run time (dlopen libnccl.so.2) for --compare-nccl: the harness needs no NCCL
// headers or library at build time, as a machine without NCCL still runs the gicl columns.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "gicl/types.h"

namespace perf {

struct NcclUniqueId {
  char internal[128];
};

class Nccl {
 public:
  /// Loads libnccl.so.2 and resolves the calls; false (with a message) if anything is missing.
  bool load(std::string* error);
  int version() const { return version_; }

  // Thin wrappers returning NCCL's result code (0 = success).
  int get_unique_id(NcclUniqueId* id) const;
  int init_rank(void** comm, int nranks, const NcclUniqueId& id, int rank) const;
  /// ncclCommSplit with the parent's configuration.
  int split(void* comm, int color, int key, void** out) const;
  int destroy(void* comm) const;
  int mem_alloc(void** ptr, size_t bytes) const;
  int mem_free(void* ptr) const;
  /// Symmetric window registration (NCCL_WIN_COLL_SYMMETRIC): NCCL's best configuration.
  int window_register(void* comm, void* buf, size_t bytes, void** win) const;
  int window_deregister(void* comm, void* win) const;
  int allreduce(const void* send, void* recv, size_t count, gicl_datatype_t d, gicl_redop_t op,
                void* comm, cudaStream_t s) const;
  int reduce_scatter(const void* send, void* recv, size_t count, gicl_datatype_t d, gicl_redop_t op,
                     void* comm, cudaStream_t s) const;
  int allgather(const void* send, void* recv, size_t count, gicl_datatype_t d, void* comm,
                cudaStream_t s) const;
  int broadcast(const void* send, void* recv, size_t count, gicl_datatype_t d, int root, void* comm,
                cudaStream_t s) const;
  int reduce(const void* send, void* recv, size_t count, gicl_datatype_t d, gicl_redop_t op,
             int root, void* comm, cudaStream_t s) const;
  int send(const void* buf, size_t count, gicl_datatype_t d, int peer, void* comm,
           cudaStream_t s) const;
  int recv(void* buf, size_t count, gicl_datatype_t d, int peer, void* comm, cudaStream_t s) const;
  int group_start() const;
  int group_end() const;
  /// ncclAlltoAll (NCCL 2.28 and later; nullptr-safe): false when this NCCL lacks it.
  bool has_alltoall() const { return alltoall_ != nullptr; }
  int alltoall(const void* send, void* recv, size_t count, gicl_datatype_t d, void* comm,
               cudaStream_t s) const;
  const char* error_string(int result) const;

 private:
  void* lib_ = nullptr;
  int version_ = 0;
  void* fn_[24] = {};
  void* alltoall_ = nullptr;  // optional: older NCCLs run alltoall as grouped send/recv
};

}  // namespace perf
