// SPDX-License-Identifier: Apache-2.0
// put_bw: block-scope put bandwidth (see rma_bw.cuh).
#include "rma_bw.cuh"
int main(int argc, char** argv) {
  return perf::rma_bw_main<false>(argc, argv);
}
