#!/usr/bin/env bash
# Twenty-eighth session, third 2 x H200 call. NEW (.devinst) = the LL rows refreshed by every
# kernel (inline after the entry barrier; peer_windows by __ldcg as on main) + LL128 grids of up
# to 96 blocks (was 64). Tests on NEW; main / new / b128 (128 blocks) alternated; forced LL128
# with 4.5 MiB rows (experiment: 4 MiB blocks on two ranks) at 96 and 128 blocks; NEW vs NCCL.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; mkdir -p /tmp/libs; tar xJf .devperf/libs.tar.xz -C /tmp/libs
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s28c; mkdir -p $L; t0=$(date +%s)
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
  T mps_residency_3_4 150 $r/tests/gpu_collectives --gtest_filter='CollectiveResidency.*:Ranks/Collectives.*/2:Ranks/Collectives.*/3'
  echo quit | nvidia-cuda-mps-control; sleep 1
else echo "mps daemon failed" | tee -a $L/summary.txt; fi
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
V1="main new b128"
for rep in 1 2; do
  for v in $V1; do
    P all_reduce_${v}$rep /tmp/libs/$v $R $r/perf/all_reduce_perf -b 256K -e 16M -f 2 -R 2 -n 50 -w 10
    for c in all_gather reduce_scatter broadcast alltoall; do
      P ${c}_${v}$rep /tmp/libs/$v $R $r/perf/${c}_perf -b 512K -e 16M -f 2 -R 2 -n 50 -w 10
    done
  done
done
V2="row96 row128"
for rep in 1 2; do
  for v in $V2; do
    for c in all_reduce all_gather reduce_scatter broadcast alltoall; do
      P ${c}_ll128_${v}$rep /tmp/libs/$v env CCL_PROTO=LL128 $R $r/perf/${c}_perf -b 1M -e 8M -f 2 -R 2 -n 50 -w 10
    done
  done
done
P all_reduce_perf $r/lib $R $r/perf/all_reduce_perf -b 64K -e 16M -f 2 -R 2 --compare-nccl --json $L/all_reduce_perf.json
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s28c_logs.tar.xz -C /tmp s28c
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' counters_ranks_1_2.log groups_failures_ce.log mps_residency_3_4.log
t() { grep -E '^\[0\] +[0-9]+ ' $1 | sed 's/^\[0\] //' | awk '{print $1, $6, $9}'; }
row() { paste "$@" | awk '{w=0; s=sprintf("%8s", $1); for (i=2; i<=NF; i+=3) {s=s sprintf(" %6s", $i); w+=$(i+1)} print s, "w" w}'; }
for c in all_reduce all_gather reduce_scatter broadcast alltoall; do
  echo "-- $c (size: $V1 rep1 | rep2; forced LL128 $V2 rep1 | rep2; oop us; wrong)"
  a=(); for rep in 1 2; do for v in $V1; do t ${c}_${v}$rep.log > /tmp/$v$rep.t; a+=(/tmp/$v$rep.t); done; done
  b=(); for rep in 1 2; do for v in $V2; do t ${c}_ll128_${v}$rep.log > /tmp/l$v$rep.t; b+=(/tmp/l$v$rep.t); done; done
  join -a1 <(row "${a[@]}" | sort -k1,1) <(row "${b[@]}" | sort -k1,1) | sort -n
done
echo "-- all_reduce_perf NEW vs NCCL (size oop ip nccl ratio wrong)"; grep -E '^\[0\] +[0-9]+ ' all_reduce_perf.log | sed 's/^\[0\] //' | awk '{print $1, $6, $10, $(NF-3), $(NF-1), $9 $13}'
