#!/usr/bin/env bash
# Twenty-fourth session's one 2 x H200 call: perf beside NCCL, then the 2-GPU tests, then the
# allreduce 1-16 MiB channel sweep; every phase bounded; all logs tarred into $OUT.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
g=/tmp/gc; mkdir -p $g
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
el perf
OUT=$g/perf TESTS=none DEVICE_PERF=0 MPS=0 JOB_TIMEOUT=60 \
  ONLY='^((all_reduce|reduce_scatter|all_gather|broadcast|reduce|alltoall|sendrecv)_perf|all_reduce_perf_graph10|all_reduce_perf_registered|sendrecv_perf_registered|all_reduce_perf_malloc|(alltoall|all_gather|broadcast)_perf_ce|sendrecv_perf_ce)$' \
  timeout -k 5 235 bash scripts/gpu-check.sh >$g/perf_summary.txt 2>&1
el tests
OUT=$g/tests PERF=0 MPS=0 RANKS=2 JOB_TIMEOUT=150 \
  GTEST_FILTER='-CollectiveResidency.*:OneProcessHang.*:Ranks/Collectives.*/2:Ranks/Collectives.*/4' \
  ONLY='^(ccl-info|gpu_.*|mp_comm|ccl-run-env-init-n2|example_.*)$' \
  timeout -k 5 200 bash scripts/gpu-check.sh >$g/tests_summary.txt 2>&1
el sweep
OUT=$g/sweep TESTS=none DEVICE_PERF=0 MPS=0 CROSSOVER=1 JOB_TIMEOUT=15 \
  ONLY='^all_reduce_(two_shot|ll128)_nc[0-9]+$' \
  timeout -k 5 45 bash scripts/gpu-check.sh >$g/sweep_summary.txt 2>&1
el done
tar cJf $OUT/logs.tar.xz -C /tmp gc
cp $g/*_summary.txt $OUT/
grep -E '^(gpu_|mp_comm|ccl-run|example_|ccl-info)' $g/tests_summary.txt
tail -c 7000 $g/perf_summary.txt
