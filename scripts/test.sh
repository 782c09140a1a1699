#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Set up and build like run.sh, run the fuzzers for a bounded time (scripts/fuzz.sh;
# GICL_FUZZ_SECONDS=0 skips them) and the CPU tests under ASan and UBSan, and under TSan
# (scripts/sanitize.sh; GICL_SANITIZE=0 skips it), then every test. GPU tests skip (with the
# reason) where no GPU is visible. The ctest summary is the last thing printed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GICL_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
"$root/scripts/fuzz.sh"
"$root/scripts/sanitize.sh"
cd "$build"
ctest --output-on-failure --timeout 900 -j "${GICL_TEST_JOBS:-2}" ${GICL_CTEST_ARGS:-}
