#!/usr/bin/env bash
# Twenty-seventh session, third 2 x H200 call (NEW = .devinst: entry words without the system
# fence, direct kernels' epochs published without one, LL128 with two line groups in flight per
# warp; OLD = the session's starting library): GPU tests on NEW, OLD/NEW alternated on the
# collectives' middle sizes, then NEW's full sweeps beside NCCL.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; tar xJf .devperf/old.tar.xz -C /tmp
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s27c; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 lib=$2; shift 2; T $n 90 env LD_LIBRARY_PATH=$lib:$nccl:$r/lib "$@"; }
R="$r/bin/ccl-run -n 2 --"
export LD_LIBRARY_PATH=$r/lib
T ranks_1_2 150 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures_ce 120 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*:CopyEngineQueues.*'
export CUDA_MPS_PIPE_DIRECTORY=/tmp/ccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/ccl-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if nvidia-cuda-mps-control -d; then sleep 1
  T mps_residency_3_4ranks 150 $r/tests/gpu_collectives --gtest_filter='CollectiveResidency.*:Ranks/Collectives.*/2:Ranks/Collectives.*/3'
  echo quit | nvidia-cuda-mps-control; sleep 1
else echo "mps daemon failed" | tee -a $L/summary.txt; fi
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
for rep in 1 2; do
  for v in old new; do
    lib=$r/lib; [[ $v == old ]] && lib=/tmp/old
    P ar_${v}$rep $lib $R $r/perf/all_reduce_perf -b 256K -e 64M -f 2 -R 2 -n 50 -w 10
    for c in all_gather reduce_scatter broadcast alltoall; do
      P ${c}_${v}$rep $lib $R $r/perf/${c}_perf -b 1M -e 64M -f 2 -R 2 -n 50 -w 10
    done
  done
done
for c in all_reduce reduce_scatter all_gather broadcast reduce alltoall sendrecv; do
  P ${c}_perf $r/lib $R $r/perf/${c}_perf -b 8 -e 1G -f 2 -R 2 --compare-nccl --json $L/${c}_perf.json
done
P all_reduce_perf_graph10 $r/lib $R $r/perf/all_reduce_perf -b 8 -e 64M -f 2 -R 2 -G 10 --compare-nccl --json $L/all_reduce_perf_graph10.json
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s27c_logs.tar.xz -C /tmp s27c
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' ranks_1_2.log groups_failures_ce.log mps_residency_3_4ranks.log
for f in ar all_gather reduce_scatter broadcast alltoall; do
  echo "-- $f (size: old1 new1 old2 new2 oop us; wrong)"
  for v in old1 new1 old2 new2; do grep -E '^\[0\] +[0-9]+ ' ${f}_$v.log | sed 's/^\[0\] //' | awk '{print $1, $6, $9}' > /tmp/$v.t; done
  paste /tmp/old1.t /tmp/new1.t /tmp/old2.t /tmp/new2.t | awk '{printf "%9s %7s %7s %7s %7s  w%s%s%s%s\n", $1, $2, $5, $8, $11, $3, $6, $9, $12}'
done
for f in all_reduce_perf all_gather_perf reduce_scatter_perf; do
  echo "-- $f (size oop ip nccl ratio wrong)"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '$1>=262144 && $1<=67108864 {print $1, $6, $10, $(NF-3), $(NF-1), $9 $13}'
done
