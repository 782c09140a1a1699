#!/usr/bin/env bash
# Twenty-eighth session, fourth 2 x H200 call, the session's final library (.devinst): LL rows
# refreshed by every kernel, LL128 grids of up to 96 blocks, 4.5 MiB LL128 rows (two ranks'
# 4 MiB blocks), reduce_scatter and broadcast on LL128 to 4 MiB of link traffic. Tests (1-/2-rank
# matrices with LL128 at the new capacity, counters, groups/failures/copy-engine queues, under
# MPS residency and 3/4/8 ranks); main/new alternated; an experiment with 128-block direct
# grids; the sweeps beside NCCL for the record.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; mkdir -p /tmp/libs; tar xJf .devperf/libs.tar.xz -C /tmp/libs
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s28d; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 lib=$2; shift 2; [[ $lib == /tmp/libs/new ]] && lib=$r/lib; T $n 60 env LD_LIBRARY_PATH=$lib:$nccl:$r/lib "$@"; }
R="$r/bin/ccl-run -n 2 --"
export LD_LIBRARY_PATH=$r/lib
T counters_ranks_1_2 200 $r/tests/gpu_collectives --gtest_filter='CollectiveCounters.*:Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures_ce 120 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*:CopyEngineQueues.*'
export CUDA_MPS_PIPE_DIRECTORY=/tmp/ccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/ccl-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if nvidia-cuda-mps-control -d; then sleep 1
  T mps_residency_3_4_8 200 $r/tests/gpu_collectives --gtest_filter='CollectiveResidency.*:Ranks/Collectives.*/2:Ranks/Collectives.*/3:Ranks/Collectives.*/4'
  echo quit | nvidia-cuda-mps-control; sleep 1
else echo "mps daemon failed" | tee -a $L/summary.txt; fi
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
for rep in 1 2; do
  for v in main new; do
    P all_reduce_${v}$rep /tmp/libs/$v $R $r/perf/all_reduce_perf -b 256K -e 16M -f 2 -R 2 -n 50 -w 10
    for c in all_gather reduce_scatter broadcast alltoall; do
      P ${c}_${v}$rep /tmp/libs/$v $R $r/perf/${c}_perf -b 512K -e 16M -f 2 -R 2 -n 50 -w 10
    done
  done
done
# Experiment (not kept): kMaxBlocks 128 (mb128), the direct kernels at 64 / 96 / 128 blocks.
for rep in 1 2; do
  for nc in 64 96 128; do
    P ar_mb${nc}_$rep /tmp/libs/mb128 env CCL_NCHANNELS=$nc $R $r/perf/all_reduce_perf -b 4M -e 64M -f 2 -R 2 -n 50 -w 10
    P ag_mb${nc}_$rep /tmp/libs/mb128 env CCL_NCHANNELS=$nc $R $r/perf/all_gather_perf -b 4M -e 64M -f 2 -R 2 -n 50 -w 10
    P rs_mb${nc}_$rep /tmp/libs/mb128 env CCL_NCHANNELS=$nc $R $r/perf/reduce_scatter_perf -b 16M -e 64M -f 2 -R 2 -n 50 -w 10
  done
done
for c in all_reduce all_gather reduce_scatter broadcast reduce alltoall; do
  P ${c}_perf $r/lib $R $r/perf/${c}_perf -b 8 -e 1G -f 2 -R 2 --compare-nccl --json $L/${c}_perf.json
done
P all_reduce_perf_graph10 $r/lib $R $r/perf/all_reduce_perf -b 8 -e 64M -f 2 -R 2 -G 10 --compare-nccl --json $L/all_reduce_perf_graph10.json
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s28d_logs.tar.xz -C /tmp s28d
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' counters_ranks_1_2.log groups_failures_ce.log mps_residency_3_4_8.log
t() { grep -E '^\[0\] +[0-9]+ ' $1 | sed 's/^\[0\] //' | awk '{print $1, $6, $9}'; }
for c in all_reduce all_gather reduce_scatter broadcast alltoall; do
  echo "-- $c (size: main new rep1 | rep2; oop us; wrong)"
  paste <(t ${c}_main1.log) <(t ${c}_new1.log) <(t ${c}_main2.log) <(t ${c}_new2.log) | awk '{printf "%9s %6s %6s | %6s %6s w%d\n", $1, $2, $5, $8, $11, $3+$6+$9+$12}'
done
for f in ar ag rs; do
  echo "-- $f kMaxBlocks 128 (size: 64 96 128 blocks rep1 | rep2; oop us; wrong)"
  paste <(t ${f}_mb64_1.log) <(t ${f}_mb96_1.log) <(t ${f}_mb128_1.log) <(t ${f}_mb64_2.log) <(t ${f}_mb96_2.log) <(t ${f}_mb128_2.log) | awk '{printf "%9s %6s %6s %6s | %6s %6s %6s w%d\n", $1, $2, $5, $8, $11, $14, $17, $3+$6+$9+$12+$15+$18}'
done
for f in all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf; do
  echo "-- $f (size oop ip nccl ratio wrong)"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '$1>=262144 && $1<=16777216 || $1==536870912 {print $1, $6, $10, $(NF-3), $(NF-1), $9 $13}'
done
echo "-- graph allreduce (size oop nccl ratio)"; grep -E '^\[0\] +[0-9]+ ' all_reduce_perf_graph10.log | sed 's/^\[0\] //' | awk '$1>=1048576 {print $1, $6, $(NF-2), $NF}'
