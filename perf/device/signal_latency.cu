// SPDX-License-Identifier: Apache-2.0
// signal_latency: signal ping-pong (see pingpong.cuh).
#include "pingpong.cuh"
int main(int argc, char** argv) {
  return perf::pingpong_main<false>(argc, argv);
}
