// C API: ccl_allreduce. Checks every argument before anything is enqueued, then runs the
// one-shot kernel in pieces of at most the staging size.
#include <algorithm>

#include "collectives/allreduce/one_shot.cuh"
#include "collectives/common/dtypes.cuh"
#include "collectives/host/check_mode.hpp"
#include "collectives/host/coll_state.hpp"
#include "collectives/schedule/step.hpp"
#include "common/cuda.hpp"
#include "core/api_guard.hpp"
#include "core/comm.hpp"

using ccl::Status;

extern "C" ccl_result_t ccl_allreduce(const void* sendbuff, void* recvbuff, size_t count,
                                      ccl_datatype_t datatype, ccl_redop_t op, ccl_comm_t comm,
                                      cudaStream_t stream) {
  return ccl::api_call([&]() -> Status {
    CCL_ARG_CHECK(comm != nullptr, "comm must not be NULL");
    CCL_ARG_CHECK(datatype >= 0 && datatype < ccl_num_datatypes,
                  "datatype=%d is not a ccl_datatype_t", static_cast<int>(datatype));
    CCL_ARG_CHECK(op >= 0 && op < ccl_num_redops, "op=%d is not a ccl_redop_t",
                  static_cast<int>(op));
    const size_t esize = ccl::coll::dtype_size(datatype);
    CCL_ARG_CHECK(count <= SIZE_MAX / esize, "count=%zu overflows the byte size of %s", count,
                  ccl::coll::dtype_name(datatype));
    CCL_ARG_CHECK(count == 0 || sendbuff != nullptr, "sendbuff must not be NULL");
    CCL_ARG_CHECK(count == 0 || recvbuff != nullptr, "recvbuff must not be NULL");
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    ccl::CommOp guard(comm);
    CCL_CHECK(guard.check());
    CCL_CHECK(ccl::coll::check_call(
        comm,
        {0, count, static_cast<int32_t>(ccl::coll::Collective::kAllReduce), datatype, op, -1}));
    if (count == 0) return CCL_SUCCESS;
    ccl::coll::CollState* st = nullptr;
    CCL_CHECK(ccl::coll::coll_state(comm, stream, &st));
    const ccl_device_comm_t& dc = comm->dev->handle;
    if (!(dc.flags & CCL_DEVICE_FLAG_ALL_P2P))
      return CCL_FAIL(CCL_UNSUPPORTED,
                      "ccl_allreduce needs every rank reachable over NVLink/PCIe peer mappings in "
                      "this build");
    // A symmetric send buffer is read in place by the peers (out of place only: in place, a
    // rank would overwrite its input while peers still read it).
    uint64_t off = 0;
    const bool zero_copy = sendbuff != recvbuff && comm->heap->offset_of(sendbuff, &off) &&
                           comm->heap->mapped_bytes() - off >= count * esize;
    const size_t piece = zero_copy ? count : st->scratch.stage_bytes / esize;
    for (size_t done = 0; done < count; done += piece) {
      const size_t n = std::min(piece, count - done);
      // Always every block: each block index keeps its own ready/done epochs with each peer, so
      // every index must take part in every call (a block's slice may be empty).
      const int grid = ccl::coll::kMaxBlocks;
      CCL_CUDA_CHECK(ccl::coll::launch_one_shot(
          datatype, op, dc, st->scratch, static_cast<const char*>(sendbuff) + done * esize,
          static_cast<char*>(recvbuff) + done * esize, n, zero_copy, grid, stream));
    }
    return CCL_SUCCESS;
  });
}
