// SPDX-License-Identifier: Apache-2.0
// bcast_latency: device-side team broadcast from rank 0 beside NVSHMEM's (see team_coll.cuh).
#include "team_coll.cuh"
int main(int argc, char** argv) {
  return perf::team_coll_main<perf::TeamColl::kBroadcast>("bcast_latency", argc, argv);
}
