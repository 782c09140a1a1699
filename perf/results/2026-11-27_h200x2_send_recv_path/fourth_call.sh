#!/usr/bin/env bash
# Twenty-fifth session, fourth 2 x H200 call: the tuner's send_recv for broadcasts only (allgather
# back on the SM kernel unforced), tests and the two sweeps.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s25d; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 s=$2; shift 2; T $n $s env LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH $r/bin/ccl-run -n 2 -- "$@"; }
T ranks_1_2 150 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/0:Ranks/Collectives.*/1'
P broadcast_perf 60 $r/perf/broadcast_perf -b 8 -e 1G -f 4 -R 2 --compare-nccl
P all_gather_perf 60 $r/perf/all_gather_perf -b 64M -e 1G -f 2 -R 2 --compare-nccl
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s25d_logs.tar.xz -C /tmp s25d
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' ranks_1_2.log
for f in broadcast_perf all_gather_perf; do
  echo "-- $f"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{print $1, $6, $8, $9, $10, $12, $(NF-3), $(NF-2), $(NF-1)}'; done
