// SPDX-License-Identifier: Apache-2.0
// fcollect_latency: device-side team fcollect (allgather) beside NVSHMEM's (see team_coll.cuh).
#include "team_coll.cuh"
int main(int argc, char** argv) {
  return perf::team_coll_main<perf::TeamColl::kFcollect>("fcollect_latency", argc, argv);
}
