#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: set up and build, then run gicl on every local GPU. Without a GPU it says so,
# prints gicl-info and exits 0.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GICL_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
# NVLink multicast stays off unless a user turns it on explicitly (see docs/env.md).
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} NVSHMEM_DISABLE_NVLS=${NVSHMEM_DISABLE_NVLS:-1}
export TORCH_SYMM_MEM_DISABLE_MULTICAST=${TORCH_SYMM_MEM_DISABLE_MULTICAST:-1}
"$build/src/tools/gicl-info"
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "run: no GPU on this machine: built and printed gicl-info; nothing to run on a GPU."
  exit 0
fi
# The main job: all_reduce_perf on every local GPU, one process each, symmetric buffers (the
# nccl-tests table; add --compare-nccl with libnccl.so.2 on LD_LIBRARY_PATH to see NCCL beside it).
ngpu=$(nvidia-smi -L | wc -l)
GICL_SOCKET_IFNAME=${GICL_SOCKET_IFNAME:-lo} "$build/src/tools/gicl-run" -n "$ngpu" -- \
  "$build/perf/all_reduce_perf" -b 8 -e 256M -f 2 -R 2
