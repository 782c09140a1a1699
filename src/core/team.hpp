// SPDX-License-Identifier: Apache-2.0
// Teams: ordered subsets of a communicator's ranks, with O(1) translation both ways.
#pragma once

#include <vector>

#include "gicl/gicl.h"

struct gicl_team {
  gicl_comm* comm = nullptr;
  std::vector<int> members;   // team rank -> communicator rank
  std::vector<int> index_of;  // communicator rank -> team rank, -1 if not a member
  int my_index = -1;
  bool predefined = false;

  void assign(gicl_comm* c, int comm_size, int comm_rank, std::vector<int> ranks, bool pre) {
    comm = c;
    members = std::move(ranks);
    index_of.assign(comm_size, -1);
    for (size_t i = 0; i < members.size(); ++i) index_of[members[i]] = static_cast<int>(i);
    my_index = index_of[comm_rank];
    predefined = pre;
  }
};
