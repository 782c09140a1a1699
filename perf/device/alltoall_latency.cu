// SPDX-License-Identifier: Apache-2.0
// alltoall_latency: device-side team alltoall beside NVSHMEM's (see team_coll.cuh).
#include "team_coll.cuh"
int main(int argc, char** argv) {
  return perf::team_coll_main<perf::TeamColl::kAlltoall>("alltoall_latency", argc, argv);
}
