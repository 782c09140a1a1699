#!/usr/bin/env bash
# Twenty-eighth session, second 2 x H200 call. Where the LL refresh costs the two-shot 0.4 us:
# libraries main / refresh (branch: inline after enter, peer_windows by load_ready) / end (the
# refresh out of line at the kernel's end) / end_ldcg (and peer_windows by __ldcg again) /
# nofence (end's kernels with the exit barrier's fence removed: wrong on purpose, the
# fence's price) alternated on the direct sizes; LL128 with 96 and 128 blocks against 64.
# Tests on end_ldcg and end.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; mkdir -p /tmp/libs; tar xJf .devperf/libs.tar.xz -C /tmp/libs
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s28b; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 lib=$2; shift 2; [[ $lib == /tmp/libs/refresh ]] && lib=$r/lib; T $n 60 env LD_LIBRARY_PATH=$lib:$nccl:$r/lib "$@"; }
R="$r/bin/ccl-run -n 2 --"
T tests_end_ldcg 200 env LD_LIBRARY_PATH=/tmp/libs/end_ldcg $r/tests/gpu_collectives --gtest_filter='CollectiveCounters.*:Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T tests_end 100 env LD_LIBRARY_PATH=/tmp/libs/end $r/tests/gpu_collectives --gtest_filter='CollectiveCounters.*'
V1="main refresh end end_ldcg nofence"
for rep in 1 2 3; do
  for v in $V1; do
    P ar_${v}$rep /tmp/libs/$v $R $r/perf/all_reduce_perf -b 4M -e 16M -f 2 -R 2 -n 50 -w 10
    P ag_${v}$rep /tmp/libs/$v $R $r/perf/all_gather_perf -b 4M -e 16M -f 2 -R 2 -n 50 -w 10
  done
done
V2="refresh b96 b128"
for rep in 1 2; do
  for v in $V2; do
    P lar_${v}$rep /tmp/libs/$v $R $r/perf/all_reduce_perf -b 256K -e 2M -f 2 -R 2 -n 50 -w 10
    for c in all_gather reduce_scatter broadcast alltoall; do
      P l${c}_${v}$rep /tmp/libs/$v $R $r/perf/${c}_perf -b 512K -e 4M -f 2 -R 2 -n 50 -w 10
    done
  done
done
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s28b_logs.tar.xz -C /tmp s28b
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' tests_end_ldcg.log tests_end.log
t() { grep -E '^\[0\] +[0-9]+ ' $1 | sed 's/^\[0\] //' | awk '{print $1, $6, $9}'; }
for f in ar ag; do
  echo "-- $f (size: $V1; oop us, reps 1 2 3 on a line each; wrong)"
  for rep in 1 2 3; do
    args=(); for v in $V1; do t ${f}_${v}$rep.log > /tmp/$v.t; args+=(/tmp/$v.t); done
    paste "${args[@]}" | awk '{w=0; s=sprintf("%8s", $1); for (i=2; i<=NF; i+=3) {s=s sprintf(" %6s", $i); w+=$(i+1)} print s, "w" w}'
  done
done
for f in lar lall_gather lreduce_scatter lbroadcast lalltoall; do
  echo "-- $f (size: $V2, rep 1 | rep 2; oop us; wrong)"
  args=(); for rep in 1 2; do for v in $V2; do t ${f}_${v}$rep.log > /tmp/$v$rep.t; args+=(/tmp/$v$rep.t); done; done
  paste "${args[@]}" | awk '{w=0; s=sprintf("%8s", $1); for (i=2; i<=NF; i+=3) {s=s sprintf(" %6s", $i); w+=$(i+1)} print s, "w" w}'
done
