#!/usr/bin/env bash
# Twenty-eighth session, fifth 2 x H200 call: the direct (SIMPLE) kernels with more blocks.
# Experiment libraries (not kept): kMaxBlocks 96 (mb96) and 128 (mb128), so the tuner's "64
# from 4 MiB" becomes 96 / 128; alternated with NEW (.devinst, 64), three runs each.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; mkdir -p /tmp/libs; tar xJf .devperf/libs.tar.xz -C /tmp/libs
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s28e; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 lib=$2; shift 2; [[ $lib == /tmp/libs/new ]] && lib=$r/lib; T $n 60 env LD_LIBRARY_PATH=$lib:$nccl:$r/lib "$@"; }
R="$r/bin/ccl-run -n 2 --"
V="new mb96 mb128"
for rep in 1 2 3; do
  for v in $V; do
    P ar_${v}$rep /tmp/libs/$v $R $r/perf/all_reduce_perf -b 4M -e 64M -f 2 -R 2 -n 50 -w 10
    P ag_${v}$rep /tmp/libs/$v $R $r/perf/all_gather_perf -b 4M -e 64M -f 2 -R 2 -n 50 -w 10
    P rs_${v}$rep /tmp/libs/$v $R $r/perf/reduce_scatter_perf -b 16M -e 64M -f 2 -R 2 -n 50 -w 10
    P a2a_${v}$rep /tmp/libs/$v $R $r/perf/alltoall_perf -b 4M -e 64M -f 2 -R 2 -n 50 -w 10
  done
done
P ar_mb96_nccl /tmp/libs/mb96 $R $r/perf/all_reduce_perf -b 2M -e 16M -f 2 -R 2 --compare-nccl
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s28e_logs.tar.xz -C /tmp s28e
cd $L
t() { grep -E '^\[0\] +[0-9]+ ' $1 | sed 's/^\[0\] //' | awk '{print $1, $6, $9}'; }
for f in ar ag rs a2a; do
  echo "-- $f (size: $V, reps 1 2 3 on a line each; oop us; wrong)"
  for rep in 1 2 3; do
    paste <(t ${f}_new$rep.log) <(t ${f}_mb96$rep.log) <(t ${f}_mb128$rep.log) | awk '{printf "%9s %7s %7s %7s w%d\n", $1, $2, $5, $8, $3+$6+$9}'
  done
done
echo "-- mb96 vs NCCL (size oop ip nccl ratio wrong)"; grep -E '^\[0\] +[0-9]+ ' ar_mb96_nccl.log | sed 's/^\[0\] //' | awk '{print $1, $6, $10, $(NF-3), $(NF-1), $9 $13}'
