// SPDX-License-Identifier: Apache-2.0
// put_latency: put_signal ping-pong (see pingpong.cuh).
#include "pingpong.cuh"
int main(int argc, char** argv) {
  return perf::pingpong_main<true>(argc, argv);
}
