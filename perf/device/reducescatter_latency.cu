// SPDX-License-Identifier: Apache-2.0
// reducescatter_latency: device-side team reduce-scatter beside NVSHMEM's (see team_coll.cuh).
#include "team_coll.cuh"
int main(int argc, char** argv) {
  return perf::team_coll_main<perf::TeamColl::kReduceScatter>("reducescatter_latency", argc, argv);
}
