// SPDX-License-Identifier: Apache-2.0
// get_bw: block-scope get bandwidth (see rma_bw.cuh).
#include "rma_bw.cuh"
int main(int argc, char** argv) {
  return perf::rma_bw_main<true>(argc, argv);
}
