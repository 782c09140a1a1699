#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the device benchmarks with the NVSHMEM columns (-DGICL_PERF_NVSHMEM) against the NVSHMEM
# of the Python environment (pip package nvidia-nvshmem) and the carried libgicl. Run on the GPU
# machine (scripts/gpu-check.sh does); prints the NVSHMEM library directory on its last line.
#   build_nvshmem.sh OUTDIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:?output directory}
nv=$(python3 -c 'import nvidia.nvshmem as m; print(m.__path__[0])')
lib=$root/.devinst/lib
mkdir -p "$out"
pids=()
for b in put_bw get_bw p_bw g_bw put_latency signal_latency atomic_rate barrier_latency \
  reduction_latency reducescatter_latency fcollect_latency bcast_latency alltoall_latency; do
  nvcc -O3 -std=c++20 -arch=sm_90 -rdc=true -DGICL_PERF_NVSHMEM \
    -I"$root/include" -I"$root/device" -I"$root/perf" -I"$root/.devinst/include" -I"$nv/include" \
    "$root/perf/device/$b.cu" -o "$out/$b" \
    -L"$lib" -lgicl -L"$nv/lib" -l:libnvshmem_host.so.3 "$nv/lib/libnvshmem_device.a" \
    -Xlinker -rpath="$nv/lib" -Xlinker -rpath="$lib" -lcuda &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
echo "$nv/lib"
