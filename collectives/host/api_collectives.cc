// C API of the collectives, point-to-point operations and groups. Each entry point checks its
// arguments (nothing is enqueued when one is wrong) and hands the call to run.cc or group.cc.
#include "collectives/common/dtypes.cuh"
#include "collectives/host/group.hpp"
#include "collectives/host/run.hpp"
#include "core/api_guard.hpp"
#include "core/comm.hpp"

using ccl::Status;
using ccl::coll::CollCall;
using ccl::coll::Collective;

namespace {

ccl_result_t collective(ccl_comm_t comm, const CollCall& call, const char* fn) {
  return ccl::api_call([&]() -> Status {
    CCL_CHECK(ccl::coll::check_collective(comm, call, fn));
    if (!ccl::coll::in_group()) return ccl::coll::run_collective(comm, call);
    return ccl::coll::run_or_queue(comm, call.stream,
                                   [comm, call] { return ccl::coll::run_collective(comm, call); });
  });
}

ccl_result_t point_to_point(void* buf, size_t count, ccl_datatype_t dtype, int peer,
                            ccl_comm_t comm, cudaStream_t stream, bool is_send, const char* fn) {
  return ccl::api_call([&]() -> Status {
    CCL_ARG_CHECK(comm != nullptr, "%s: comm must not be NULL", fn);
    CCL_ARG_CHECK(dtype >= 0 && dtype < ccl_num_datatypes,
                  "%s: datatype=%d is not a ccl_datatype_t", fn, static_cast<int>(dtype));
    CCL_ARG_CHECK(peer >= 0 && peer < comm->nranks, "%s: peer=%d is out of range [0, %d)", fn, peer,
                  comm->nranks);
    const size_t esize = ccl::coll::dtype_size(dtype);
    CCL_ARG_CHECK(count <= SIZE_MAX / esize, "%s: count=%zu overflows the byte size", fn, count);
    if (count == 0) return CCL_SUCCESS;
    CCL_ARG_CHECK(buf != nullptr, "%s: %s must not be NULL", fn, is_send ? "sendbuff" : "recvbuff");
    if (!comm->heap) return CCL_FAIL(CCL_UNSUPPORTED, "%s: the communicator has no GPU", fn);
    CCL_CHECK(
        ccl::coll::check_buffer(comm, buf, count * esize, fn, is_send ? "sendbuff" : "recvbuff"));
    ccl::coll::P2pOp op{buf, count * esize, peer, is_send ? 1 : 0, ccl::coll::kNoWindow, 0};
    return ccl::coll::p2p(comm, op, stream);
  });
}

}  // namespace

extern "C" {

ccl_result_t ccl_allreduce(const void* sendbuff, void* recvbuff, size_t count,
                           ccl_datatype_t datatype, ccl_redop_t op, ccl_comm_t comm,
                           cudaStream_t stream) {
  return collective(comm,
                    {Collective::kAllReduce, sendbuff, recvbuff, count, datatype, op, -1, stream},
                    "ccl_allreduce");
}

ccl_result_t ccl_reduce_scatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                ccl_datatype_t datatype, ccl_redop_t op, ccl_comm_t comm,
                                cudaStream_t stream) {
  return collective(
      comm, {Collective::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, -1, stream},
      "ccl_reduce_scatter");
}

ccl_result_t ccl_allgather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ccl_datatype_t datatype, ccl_comm_t comm, cudaStream_t stream) {
  return collective(
      comm, {Collective::kAllGather, sendbuff, recvbuff, sendcount, datatype, ccl_sum, -1, stream},
      "ccl_allgather");
}

ccl_result_t ccl_broadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ccl_datatype_t datatype, int root, ccl_comm_t comm,
                           cudaStream_t stream) {
  return collective(
      comm, {Collective::kBroadcast, sendbuff, recvbuff, count, datatype, ccl_sum, root, stream},
      "ccl_broadcast");
}

ccl_result_t ccl_reduce(const void* sendbuff, void* recvbuff, size_t count, ccl_datatype_t datatype,
                        ccl_redop_t op, int root, ccl_comm_t comm, cudaStream_t stream) {
  return collective(comm,
                    {Collective::kReduce, sendbuff, recvbuff, count, datatype, op, root, stream},
                    "ccl_reduce");
}

ccl_result_t ccl_alltoall(const void* sendbuff, void* recvbuff, size_t count,
                          ccl_datatype_t datatype, ccl_comm_t comm, cudaStream_t stream) {
  return collective(
      comm, {Collective::kAllToAll, sendbuff, recvbuff, count, datatype, ccl_sum, -1, stream},
      "ccl_alltoall");
}

ccl_result_t ccl_send(const void* sendbuff, size_t count, ccl_datatype_t datatype, int peer,
                      ccl_comm_t comm, cudaStream_t stream) {
  return point_to_point(const_cast<void*>(sendbuff), count, datatype, peer, comm, stream, true,
                        "ccl_send");
}

ccl_result_t ccl_recv(void* recvbuff, size_t count, ccl_datatype_t datatype, int peer,
                      ccl_comm_t comm, cudaStream_t stream) {
  return point_to_point(recvbuff, count, datatype, peer, comm, stream, false, "ccl_recv");
}

ccl_result_t ccl_barrier(ccl_comm_t comm, cudaStream_t stream) {
  return ccl::api_call([&]() -> Status {
    CCL_ARG_CHECK(comm != nullptr, "ccl_barrier: comm must not be NULL");
    return ccl::coll::run_or_queue(comm, stream, [comm, stream]() -> Status {
      const ccl_result_t r = ccl_barrier_on_stream(comm, stream);
      return r;
    });
  });
}

ccl_result_t ccl_group_start(void) {
  return ccl::api_call([]() -> Status { return ccl::coll::group_start(); });
}

ccl_result_t ccl_group_end(void) {
  return ccl::api_call([]() -> Status { return ccl::coll::group_end(); });
}

}  // extern "C"
