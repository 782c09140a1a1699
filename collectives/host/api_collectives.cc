// SPDX-License-Identifier: Apache-2.0
// C API of the collectives, point-to-point operations and groups. Each entry point checks its
// arguments (nothing is enqueued when one is wrong) and hands the call to run.cc or group.cc.
#include "collectives/common/dtypes.cuh"
#include "collectives/host/group.hpp"
#include "collectives/host/run.hpp"
#include "core/api_guard.hpp"
#include "core/comm.hpp"

using gicl::Status;
using gicl::coll::CollCall;
using gicl::coll::Collective;

namespace {

gicl_result_t collective(gicl_comm_t comm, const CollCall& call, const char* fn) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(gicl::coll::check_collective(comm, call, fn));
    if (!gicl::coll::in_group()) return gicl::coll::run_collective(comm, call);
    return gicl::coll::run_or_queue(
        comm, call.stream, [comm, call] { return gicl::coll::run_collective(comm, call); });
  });
}

gicl_result_t point_to_point(void* buf, size_t count, gicl_datatype_t dtype, int peer,
                             gicl_comm_t comm, cudaStream_t stream, bool is_send, const char* fn) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(comm != nullptr, "%s: comm must not be NULL", fn);
    GICL_ARG_CHECK(dtype >= 0 && dtype < gicl_num_datatypes,
                   "%s: datatype=%d is not a gicl_datatype_t", fn, static_cast<int>(dtype));
    GICL_ARG_CHECK(peer >= 0 && peer < comm->nranks, "%s: peer=%d is out of range [0, %d)", fn,
                   peer, comm->nranks);
    const size_t esize = gicl::coll::dtype_size(dtype);
    GICL_ARG_CHECK(count <= SIZE_MAX / esize, "%s: count=%zu overflows the byte size", fn, count);
    if (count == 0) return GICL_SUCCESS;
    GICL_ARG_CHECK(buf != nullptr, "%s: %s must not be NULL", fn,
                   is_send ? "sendbuff" : "recvbuff");
    if (!comm->heap) return GICL_FAIL(GICL_UNSUPPORTED, "%s: the communicator has no GPU", fn);
    GICL_CHECK(
        gicl::coll::check_buffer(comm, buf, count * esize, fn, is_send ? "sendbuff" : "recvbuff"));
    gicl::coll::P2pOp op{buf, count * esize, peer, is_send ? 1 : 0, gicl::coll::kNoWindow, 0};
    return gicl::coll::p2p(comm, op, stream);
  });
}

}  // namespace

extern "C" {

gicl_result_t gicl_allreduce(const void* sendbuff, void* recvbuff, size_t count,
                             gicl_datatype_t datatype, gicl_redop_t op, gicl_comm_t comm,
                             cudaStream_t stream) {
  return collective(comm,
                    {Collective::kAllReduce, sendbuff, recvbuff, count, datatype, op, -1, stream},
                    "gicl_allreduce");
}

gicl_result_t gicl_reduce_scatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                  gicl_datatype_t datatype, gicl_redop_t op, gicl_comm_t comm,
                                  cudaStream_t stream) {
  return collective(
      comm, {Collective::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, -1, stream},
      "gicl_reduce_scatter");
}

gicl_result_t gicl_allgather(const void* sendbuff, void* recvbuff, size_t sendcount,
                             gicl_datatype_t datatype, gicl_comm_t comm, cudaStream_t stream) {
  return collective(
      comm, {Collective::kAllGather, sendbuff, recvbuff, sendcount, datatype, gicl_sum, -1, stream},
      "gicl_allgather");
}

gicl_result_t gicl_broadcast(const void* sendbuff, void* recvbuff, size_t count,
                             gicl_datatype_t datatype, int root, gicl_comm_t comm,
                             cudaStream_t stream) {
  return collective(
      comm, {Collective::kBroadcast, sendbuff, recvbuff, count, datatype, gicl_sum, root, stream},
      "gicl_broadcast");
}

gicl_result_t gicl_reduce(const void* sendbuff, void* recvbuff, size_t count,
                          gicl_datatype_t datatype, gicl_redop_t op, int root, gicl_comm_t comm,
                          cudaStream_t stream) {
  return collective(comm,
                    {Collective::kReduce, sendbuff, recvbuff, count, datatype, op, root, stream},
                    "gicl_reduce");
}

gicl_result_t gicl_alltoall(const void* sendbuff, void* recvbuff, size_t count,
                            gicl_datatype_t datatype, gicl_comm_t comm, cudaStream_t stream) {
  return collective(
      comm, {Collective::kAllToAll, sendbuff, recvbuff, count, datatype, gicl_sum, -1, stream},
      "gicl_alltoall");
}

gicl_result_t gicl_send(const void* sendbuff, size_t count, gicl_datatype_t datatype, int peer,
                        gicl_comm_t comm, cudaStream_t stream) {
  return point_to_point(const_cast<void*>(sendbuff), count, datatype, peer, comm, stream, true,
                        "gicl_send");
}

gicl_result_t gicl_recv(void* recvbuff, size_t count, gicl_datatype_t datatype, int peer,
                        gicl_comm_t comm, cudaStream_t stream) {
  return point_to_point(recvbuff, count, datatype, peer, comm, stream, false, "gicl_recv");
}

gicl_result_t gicl_barrier(gicl_comm_t comm, cudaStream_t stream) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(comm != nullptr, "gicl_barrier: comm must not be NULL");
    return gicl::coll::run_or_queue(comm, stream, [comm, stream]() -> Status {
      const gicl_result_t r = gicl_barrier_on_stream(comm, stream);
      return r;
    });
  });
}

gicl_result_t gicl_group_start(void) {
  return gicl::api_call([]() -> Status { return gicl::coll::group_start(); });
}

gicl_result_t gicl_group_end(void) {
  return gicl::api_call([]() -> Status { return gicl::coll::group_end(); });
}

}  // extern "C"
