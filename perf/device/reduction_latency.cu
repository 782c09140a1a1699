// SPDX-License-Identifier: Apache-2.0
// reduction_latency: device-side team allreduce beside NVSHMEM's (see team_coll.cuh).
#include "team_coll.cuh"
int main(int argc, char** argv) {
  return perf::team_coll_main<perf::TeamColl::kAllreduce>("reduction_latency", argc, argv);
}
