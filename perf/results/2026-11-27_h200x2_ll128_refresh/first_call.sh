#!/usr/bin/env bash
# Twenty-eighth session, first 2 x H200 call. NEW (.devinst) = the LL rows refreshed by every
# kernel (branch next/ll-refresh-every-kernel) + LL128 with the next loads in flight (the own
# input beside a peer's lines; the next groups while storing). Tests on NEW; libraries
# main / refresh / new / u4row alternated on the LL128 range; forced LL128 up to 8 MiB with
# 4.5 MiB rows (experiments, not kept); NEW beside NCCL.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; mkdir -p /tmp/libs; tar xJf .devperf/libs.tar.xz -C /tmp/libs
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s28a; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 lib=$2; shift 2; T $n 60 env LD_LIBRARY_PATH=$lib:$nccl:$r/lib "$@"; }
R="$r/bin/ccl-run -n 2 --"
export LD_LIBRARY_PATH=$r/lib
T counters_ranks_1_2 200 $r/tests/gpu_collectives --gtest_filter='CollectiveCounters.*:Ranks/Collectives.*/0:Ranks/Collectives.*/1'
export CUDA_MPS_PIPE_DIRECTORY=/tmp/ccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/ccl-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if nvidia-cuda-mps-control -d; then sleep 1
  T mps_ranks_3_4 150 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/2:Ranks/Collectives.*/3'
  echo quit | nvidia-cuda-mps-control; sleep 1
else echo "mps daemon failed" | tee -a $L/summary.txt; fi
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
for rep in 1 2; do
  for v in main refresh new u4row; do
    lib=$r/lib; [[ $v != new ]] && lib=/tmp/libs/$v
    P ar_${v}$rep $lib $R $r/perf/all_reduce_perf -b 256K -e 4M -f 2 -R 2 -n 50 -w 10
    for c in all_gather reduce_scatter broadcast alltoall; do
      P ${c}_${v}$rep $lib $R $r/perf/${c}_perf -b 512K -e 4M -f 2 -R 2 -n 50 -w 10
    done
  done
done
for v in row u4row; do
  for c in all_reduce all_gather reduce_scatter broadcast alltoall; do
    P ${c}_ll128_$v /tmp/libs/$v env CCL_PROTO=LL128 $R $r/perf/${c}_perf -b 1M -e 8M -f 2 -R 2 -n 50 -w 10
  done
done
P all_reduce_perf $r/lib $R $r/perf/all_reduce_perf -b 64K -e 16M -f 2 -R 2 --compare-nccl --json $L/all_reduce_perf.json
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s28a_logs.tar.xz -C /tmp s28a
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' counters_ranks_1_2.log mps_ranks_3_4.log
for f in ar all_gather reduce_scatter broadcast alltoall; do
  echo "-- $f (size: main refresh new u4row, rep1 | rep2; oop us; wrong)"
  for v in main1 refresh1 new1 u4row1 main2 refresh2 new2 u4row2; do grep -E '^\[0\] +[0-9]+ ' ${f}_$v.log | sed 's/^\[0\] //' | awk '{print $1, $6, $9}' > /tmp/$v.t; done
  paste /tmp/main1.t /tmp/refresh1.t /tmp/new1.t /tmp/u4row1.t /tmp/main2.t /tmp/refresh2.t /tmp/new2.t /tmp/u4row2.t | awk '{printf "%8s %6s %6s %6s %6s | %6s %6s %6s %6s w%s\n", $1, $2, $5, $8, $11, $14, $17, $20, $23, $3+$6+$9+$12+$15+$18+$21+$24}'
done
for c in all_reduce all_gather reduce_scatter broadcast alltoall; do
  echo "-- $c forced LL128 (size: row u4row oop us; wrong)"
  paste <(grep -E '^\[0\] +[0-9]+ ' ${c}_ll128_row.log | sed 's/^\[0\] //' | awk '{print $1, $6, $9}') <(grep -E '^\[0\] +[0-9]+ ' ${c}_ll128_u4row.log | sed 's/^\[0\] //' | awk '{print $6, $9}')
done
echo "-- all_reduce_perf NEW vs NCCL (size oop ip nccl ratio wrong)"; grep -E '^\[0\] +[0-9]+ ' all_reduce_perf.log | sed 's/^\[0\] //' | awk '{print $1, $6, $10, $(NF-3), $(NF-1), $9 $13}'
