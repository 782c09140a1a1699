// SPDX-License-Identifier: Apache-2.0
// p_bw: scalar put rate (see scalar_bw.cuh).
#include "scalar_bw.cuh"
int main(int argc, char** argv) {
  return perf::scalar_bw_main<false>(argc, argv);
}
