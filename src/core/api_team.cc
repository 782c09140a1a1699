// SPDX-License-Identifier: Apache-2.0
// C API: teams.
#include "core/api_guard.hpp"
#include "core/comm.hpp"

using gicl::Status;

extern "C" {

gicl_result_t gicl_comm_get_team(gicl_comm_t comm, gicl_team_kind_t kind, gicl_team_t* team) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(comm != nullptr, "comm must not be NULL");
    GICL_ARG_CHECK(team != nullptr, "team must not be NULL");
    GICL_ARG_CHECK(kind == GICL_TEAM_WORLD || kind == GICL_TEAM_NODE,
                   "kind=%d is not GICL_TEAM_WORLD or GICL_TEAM_NODE", static_cast<int>(kind));
    *team = kind == GICL_TEAM_WORLD ? &comm->world : &comm->node;
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_team_split_strided(gicl_team_t parent, int start, int stride, int size,
                                      gicl_team_t* team) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(parent != nullptr, "parent must not be NULL");
    GICL_ARG_CHECK(team != nullptr, "team must not be NULL");
    *team = nullptr;
    const int n = static_cast<int>(parent->members.size());
    GICL_ARG_CHECK(start >= 0 && start < n, "start=%d is out of range [0, %d)", start, n);
    GICL_ARG_CHECK(stride >= 1, "stride=%d must be >= 1", stride);
    GICL_ARG_CHECK(size >= 1, "size=%d must be >= 1", size);
    GICL_ARG_CHECK(static_cast<int64_t>(start) + static_cast<int64_t>(size - 1) * stride < n,
                   "start=%d, stride=%d, size=%d reach past the parent team's %d ranks", start,
                   stride, size, n);
    std::vector<int> ranks;
    for (int i = 0; i < size; ++i) ranks.push_back(parent->members[start + i * stride]);
    gicl_comm* comm = parent->comm;
    auto t = std::make_unique<gicl_team>();
    t->assign(comm, comm->nranks, comm->rank, std::move(ranks), false);
    if (t->my_index < 0) return GICL_SUCCESS;  // not a member
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    comm->split_teams.push_back(std::move(t));
    *team = comm->split_teams.back().get();
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_team_rank(gicl_team_t team, int* rank) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(team != nullptr, "team must not be NULL");
    GICL_ARG_CHECK(rank != nullptr, "rank must not be NULL");
    *rank = team->my_index;
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_team_size(gicl_team_t team, int* size) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(team != nullptr, "team must not be NULL");
    GICL_ARG_CHECK(size != nullptr, "size must not be NULL");
    *size = static_cast<int>(team->members.size());
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_team_translate_rank(gicl_team_t src, int rank, gicl_team_t dst, int* dst_rank) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(src != nullptr, "src must not be NULL");
    GICL_ARG_CHECK(dst != nullptr, "dst must not be NULL");
    GICL_ARG_CHECK(dst_rank != nullptr, "dst_rank must not be NULL");
    GICL_ARG_CHECK(src->comm == dst->comm, "src and dst belong to different communicators");
    const int n = static_cast<int>(src->members.size());
    GICL_ARG_CHECK(rank >= 0 && rank < n, "rank=%d is out of range for src (size %d)", rank, n);
    *dst_rank = dst->index_of[src->members[rank]];
    return GICL_SUCCESS;
  });
}

gicl_result_t gicl_team_destroy(gicl_team_t team) {
  return gicl::api_call([&]() -> Status {
    GICL_ARG_CHECK(team != nullptr, "team must not be NULL");
    GICL_ARG_CHECK(!team->predefined, "team is a predefined team of its communicator");
    gicl_comm* comm = team->comm;
    std::lock_guard<std::mutex> lock(comm->op_mutex);
    for (auto it = comm->split_teams.begin(); it != comm->split_teams.end(); ++it) {
      if (it->get() == team) {
        comm->split_teams.erase(it);
        return GICL_SUCCESS;
      }
    }
    return GICL_FAIL(GICL_INVALID_ARGUMENT, "team is not a live team of its communicator");
  });
}

}  // extern "C"
