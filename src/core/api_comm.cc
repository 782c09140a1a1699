// SPDX-License-Identifier: Apache-2.0
// C API: unique ids and communicator life cycle.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "bootstrap/root.hpp"
#include "bootstrap/unique_id.hpp"
#include "common/build_info.hpp"
#include "common/cuda.hpp"
#include "common/hmac.hpp"
#include "common/log.hpp"
#include "common/rank_list.hpp"
#include "common/settings.hpp"
#include "core/api_guard.hpp"
#include "core/comm.hpp"

using gicl::Status;
namespace bs = gicl::bootstrap;

namespace {

// The once-per-process notices, before the first communicator or id: the version banner
// (GICL_DEBUG=VERSION or INFO) and a warning for each mistyped GICL_* variable.
void process_notices() {
  gicl::log_banner_once();
  gicl::warn_unknown_variables_once();
}

Status decode_id(const gicl_unique_id_t& id, bs::UniqueIdData* out) {
  return bs::decode_unique_id(id.internal, sizeof(id.internal), out);
}

Status init_rank(gicl_comm_t* comm, int nranks, const bs::UniqueIdData& id, int rank) {
  process_notices();
  GICL_ARG_CHECK(comm != nullptr, "comm must not be NULL");
  *comm = nullptr;
  GICL_ARG_CHECK(nranks >= 1, "nranks=%d must be >= 1", nranks);
  GICL_ARG_CHECK(rank >= 0 && rank < nranks, "rank=%d is out of range [0, %d)", rank, nranks);
  return gicl::comm_init(id, nranks, rank, comm);
}

Status check_comm(gicl_comm_t comm) {
  GICL_ARG_CHECK(comm != nullptr, "comm must not be NULL");
  return GICL_SUCCESS;
}

}  // namespace

extern "C" {

gicl_result_t gicl_get_unique_id(gicl_unique_id_t* id) {
  return gicl::api_call([&]() -> Status {
    process_notices();
    GICL_ARG_CHECK(id != nullptr, "id must not be NULL");
    bs::UniqueIdData data;
    GICL_CHECK(bs::make_unique_id(&data));
    std::memset(id, 0, sizeof(*id));
    std::memcpy(id->internal, &data, sizeof(data));
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_comm_init_rank(gicl_comm_t* comm, int nranks, gicl_unique_id_t id, int rank) {
  return gicl::api_call([&]() -> Status {
    bs::UniqueIdData data;
    GICL_CHECK(decode_id(id, &data));
    return init_rank(comm, nranks, data, rank);
  });
}

gicl_result_t gicl_comm_init_env(gicl_comm_t* comm) {
  return gicl::api_call([&]() -> Status {
    process_notices();
    GICL_ARG_CHECK(comm != nullptr, "comm must not be NULL");
    int rank = 0, size = 0, local_rank = -1;
    GICL_CHECK(bs::launcher_ranks(&rank, &size, &local_rank));
    const int ndev = gicl::cuda_device_count();
    if (ndev > 0) GICL_CUDA_CHECK(cudaSetDevice((local_rank >= 0 ? local_rank : rank) % ndev));
    bs::UniqueIdData data;
    GICL_CHECK(bs::launcher_unique_id(rank, &data));
    return init_rank(comm, size, data, rank);
  });
}

gicl_result_t gicl_comm_init_all(gicl_comm_t* comms, int ndev, const int* devlist) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(comms != nullptr, "comms must not be NULL");
    GICL_ARG_CHECK(ndev >= 1, "ndev=%d must be >= 1", ndev);
    const int visible = gicl::cuda_device_count();
    if (visible == 0)
      return GICL_FAIL(GICL_UNSUPPORTED, "gicl_comm_init_all needs CUDA devices; none is visible");
    for (int i = 0; i < ndev; ++i) {
      const int d = devlist ? devlist[i] : i;
      GICL_ARG_CHECK(d >= 0 && d < visible, "devlist[%d]=%d is not a visible device (0..%d)", i, d,
                     visible - 1);
    }
    bs::UniqueIdData data;
    GICL_CHECK(bs::make_unique_id(&data));
    std::vector<gicl_result_t> results(ndev, GICL_SUCCESS);
    std::vector<std::string> errors(ndev);
    std::vector<std::thread> threads;
    for (int i = 0; i < ndev; ++i) {
      threads.emplace_back([&, i] {
        results[i] = gicl::api_call([&]() -> Status {
          GICL_CUDA_CHECK(cudaSetDevice(devlist ? devlist[i] : i));
          gicl::log_set_device(devlist ? devlist[i] : i);
          return init_rank(&comms[i], ndev, data, i);
        });
        errors[i] = gicl::last_error();
        gicl::hmac_thread_done();  // the handshakes were MACs
      });
    }
    for (auto& t : threads) t.join();
    for (int i = 0; i < ndev; ++i) {
      if (results[i] == GICL_SUCCESS) continue;
      for (int j = 0; j < ndev; ++j)
        if (comms[j] != nullptr) gicl_comm_abort(comms[j]), comms[j] = nullptr;
      return GICL_FAIL(results[i], "gicl_comm_init_all: rank %d: %s", i, errors[i].c_str());
    }
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_comm_split(gicl_comm_t comm, int color, int key, gicl_comm_t* newcomm) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(check_comm(comm));
    GICL_ARG_CHECK(newcomm != nullptr, "newcomm must not be NULL");
    GICL_ARG_CHECK(color >= 0 || color == GICL_SPLIT_NOCOLOR,
                   "color=%d must be >= 0 or GICL_SPLIT_NOCOLOR", color);
    *newcomm = nullptr;
    bs::UniqueIdData id{};
    int newrank = -1, newsize = 0;
    {
      std::lock_guard<std::mutex> lock(comm->op_mutex);
      gicl::CommOp op(comm);
      GICL_CHECK(op.check());
      struct Entry {
        int32_t color, key;
      };
      std::vector<Entry> all(comm->nranks);
      all[comm->rank] = {color, key};
      GICL_CHECK(comm->bootstrap->allgather(all.data(), sizeof(Entry)));
      if (color == GICL_SPLIT_NOCOLOR) return GICL_SUCCESS;
      std::vector<int> members;
      for (int r = 0; r < comm->nranks; ++r)
        if (all[r].color == color) members.push_back(r);
      std::stable_sort(members.begin(), members.end(),
                       [&](int a, int b) { return all[a].key < all[b].key; });
      newsize = static_cast<int>(members.size());
      newrank =
          static_cast<int>(std::find(members.begin(), members.end(), comm->rank) - members.begin());
      // The group's first member creates the id and hands it to the others.
      const uint32_t tag = bs::kUserTagBase + 1;
      if (newrank == 0) {
        GICL_CHECK(bs::make_unique_id(&id));
        for (int i = 1; i < newsize; ++i)
          GICL_CHECK(comm->bootstrap->send(members[i], tag, &id, sizeof(id)));
      } else {
        GICL_CHECK(comm->bootstrap->recv(members[0], tag, &id, sizeof(id)));
      }
    }
    if (comm->device >= 0) GICL_CUDA_CHECK(cudaSetDevice(comm->device));
    return init_rank(newcomm, newsize, id, newrank);
  });
}

gicl_result_t gicl_comm_shrink(gicl_comm_t comm, const int* exclude_ranks, int nexclude,
                               gicl_comm_t* newcomm, int flags) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(check_comm(comm));
    GICL_ARG_CHECK(newcomm != nullptr, "newcomm must not be NULL");
    *newcomm = nullptr;
    GICL_ARG_CHECK(flags == GICL_SHRINK_DEFAULT || flags == GICL_SHRINK_ABORT,
                   "flags=%d is not GICL_SHRINK_DEFAULT or GICL_SHRINK_ABORT", flags);
    GICL_ARG_CHECK(nexclude == GICL_SHRINK_LOST || (nexclude >= 0 && nexclude < comm->nranks),
                   "nexclude=%d must be in [0, %d) or GICL_SHRINK_LOST", nexclude, comm->nranks);
    GICL_ARG_CHECK(nexclude <= 0 || exclude_ranks != nullptr,
                   "exclude_ranks must not be NULL with nexclude=%d", nexclude);
    // excluded[r] = 1: rank r is left out. The new root sends its copy beside the id, so that
    // ranks that disagree fail naming both sets instead of forming different communicators.
    std::vector<uint8_t> excluded(comm->nranks, 0);
    if (nexclude == GICL_SHRINK_LOST) {
      std::lock_guard<std::mutex> lock(comm->error_mutex);
      if (comm->lost_ranks.empty())
        return GICL_FAIL(GICL_INVALID_USAGE,
                         "gicl_comm_shrink: GICL_SHRINK_LOST, but this communicator has found no "
                         "rank lost");
      for (int r : comm->lost_ranks)
        if (r >= 0 && r < comm->nranks) excluded[r] = 1;
    } else {
      for (int i = 0; i < nexclude; ++i) {
        const int r = exclude_ranks[i];
        GICL_ARG_CHECK(r >= 0 && r < comm->nranks, "exclude_ranks[%d]=%d is out of range [0, %d)",
                       i, r, comm->nranks);
        GICL_ARG_CHECK(excluded[r] == 0, "exclude_ranks[%d]=%d is listed twice", i, r);
        excluded[r] = 1;
      }
    }
    GICL_ARG_CHECK(excluded[comm->rank] == 0,
                   "rank %d is in exclude_ranks: an excluded rank does not call gicl_comm_shrink",
                   comm->rank);
    std::vector<int> members;
    for (int r = 0; r < comm->nranks; ++r)
      if (!excluded[r]) members.push_back(r);
    const int newsize = static_cast<int>(members.size());
    const int newrank =
        static_cast<int>(std::find(members.begin(), members.end(), comm->rank) - members.begin());
    bs::UniqueIdData id{};
    {
      std::lock_guard<std::mutex> lock(comm->op_mutex);
      gicl::CommOp op(comm);
      // A lost peer is what shrink is for: only an aborted communicator (its sockets closed)
      // cannot shrink.
      if (gicl::cancelled(&comm->cancel))
        return GICL_FAIL(GICL_INVALID_USAGE,
                         "gicl_comm_shrink: the communicator was aborted; shrink it before "
                         "aborting it");
      if (flags == GICL_SHRINK_ABORT) gicl::device_resources_signal_abort(comm);
      // The new root (the first remaining rank) makes the id; each remaining rank receives it
      // with the root's set over the parent's connections, which the lost ranks are not on.
      const uint32_t tag = bs::kUserTagBase + 2;
      std::vector<char> msg(sizeof(bs::UniqueIdData) + excluded.size());
      if (newrank == 0) {
        GICL_CHECK(bs::make_unique_id(&id));
        std::memcpy(msg.data(), &id, sizeof(id));
        std::memcpy(msg.data() + sizeof(id), excluded.data(), excluded.size());
        for (int i = 1; i < newsize; ++i)
          GICL_CHECK(comm->bootstrap->send(members[i], tag, msg.data(), msg.size()));
      } else {
        GICL_CHECK(comm->bootstrap->recv(members[0], tag, msg.data(), msg.size()));
        std::memcpy(&id, msg.data(), sizeof(id));
        if (std::memcmp(msg.data() + sizeof(id), excluded.data(), excluded.size()) != 0) {
          std::vector<int> theirs, ours;
          for (int r = 0; r < comm->nranks; ++r) {
            if (msg[sizeof(id) + r]) theirs.push_back(r);
            if (excluded[r]) ours.push_back(r);
          }
          auto text = [](const std::vector<int>& v) {
            return v.empty() ? std::string("none") : "{" + gicl::rank_list(v) + "}";
          };
          return GICL_FAIL(GICL_INVALID_USAGE,
                           "gicl_comm_shrink: rank %d excludes %s, rank %d excludes %s: every "
                           "remaining rank must exclude the same ranks",
                           members[0], text(theirs).c_str(), comm->rank, text(ours).c_str());
        }
      }
    }
    if (comm->device >= 0) GICL_CUDA_CHECK(cudaSetDevice(comm->device));
    return init_rank(newcomm, newsize, id, newrank);
  });
}

gicl_result_t gicl_comm_destroy(gicl_comm_t comm) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(check_comm(comm));
    // The watch goes quiet first: a rank leaves the barrier below only once every rank has
    // entered destroy, so no rank that goes afterwards is reported as lost. Its heartbeats go on
    // until comm_free: a rank that waits here long is not taken for lost by a slower one.
    if (comm->watch) comm->watch->quiet();
    Status s;
    {
      std::lock_guard<std::mutex> lock(comm->op_mutex);
      gicl::CommOp op(comm);
      s = op.check();
      if (s.ok()) s = comm->bootstrap->barrier();
    }
    gicl::comm_free(comm, 10000);
    bs::reap_roots(false);
    return s;
  });
}

gicl_result_t gicl_comm_abort(gicl_comm_t comm) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(check_comm(comm));
    const auto start = gicl::Clock::now();
    if (comm->watch) comm->watch->stop();  // this rank's own going is no peer's loss
    comm->cancel.store(true, std::memory_order_release);
    gicl::comm_set_error(comm, GICL_ABORTED, "the communicator was aborted");
    // Wake every blocked socket wait now; the cancel flag stops the loops within 100 ms.
    gicl::device_resources_signal_abort(comm);  // device waits see it within microseconds
    if (comm->bootstrap) comm->bootstrap->shutdown();
    if (comm->heap) comm->heap->shutdown();
    { std::lock_guard<std::mutex> lock(comm->op_mutex); }
    while (comm->inflight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    gicl::comm_free(comm, 500);
    bs::reap_roots(false);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(gicl::Clock::now() - start).count();
    if (ms > 1000)
      GICL_WARN(gicl::kSubsysInit, "gicl_comm_abort took %lld ms", static_cast<long long>(ms));
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_comm_rank(gicl_comm_t comm, int* rank) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(check_comm(comm));
    GICL_ARG_CHECK(rank != nullptr, "rank must not be NULL");
    *rank = comm->rank;
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_comm_size(gicl_comm_t comm, int* size) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(check_comm(comm));
    GICL_ARG_CHECK(size != nullptr, "size must not be NULL");
    *size = comm->nranks;
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_comm_device(gicl_comm_t comm, int* device) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(check_comm(comm));
    GICL_ARG_CHECK(device != nullptr, "device must not be NULL");
    *device = comm->device;
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_comm_get_async_error(gicl_comm_t comm, gicl_result_t* async_error,
                                        const char** message) {
  return gicl::api_call([&]() -> Status {
    GICL_CHECK(check_comm(comm));
    GICL_ARG_CHECK(async_error != nullptr, "async_error must not be NULL");
    gicl_result_t dcode;
    std::string dtext;
    // The proxy's write to a peer failed (its connection broke): the peer watch, which learns of
    // a process's end within milliseconds, names the rank and how it went; the proxy knows only
    // the operation that failed.
    if (comm->async_error.load() == GICL_SUCCESS && gicl::net_path_error(comm, &dcode, &dtext) &&
        dcode == GICL_REMOTE_ERROR)
      (void)gicl::await_peer_report(comm);
    std::lock_guard<std::mutex> lock(comm->error_mutex);
    // A device-side report (timeout, bad argument) puts the communicator into error.
    if (comm->async_error.load() == GICL_SUCCESS && gicl::device_error_text(comm, &dcode, &dtext)) {
      comm->async_error.store(dcode);
      comm->async_message = dtext;
    }
    // The network proxy's failure names the peer and the operation; a kernel's report of it
    // (GICL_DEVICE_ERROR_PROXY) says only that the proxy failed.
    if (gicl::net_path_error(comm, &dcode, &dtext) &&
        (comm->async_error.load() == GICL_SUCCESS ||
         comm->async_message.find("proxy") != std::string::npos)) {
      comm->async_error.store(dcode);
      comm->async_message = dtext;
    }
    *async_error = static_cast<gicl_result_t>(comm->async_error.load());
    if (message) *message = comm->async_message.c_str();
    return GICL_SUCCESS;
  });
}

}  // extern "C"
