#!/usr/bin/env bash
# Twenty-ninth session, second 2 x H200 call: push first in the tuner's range (allreduce two-shot
# 16-128 MiB, any buffers) and for every staged rank (two-shot, reduce-scatter), branch
# next/push-first (this .devinst), against main 9339776 (/tmp/libs/main), alternated three times;
# tests of the branch; LL128 receive spins that sleep 32 / 256 ns (ns32, ns256) against it.
set -u
source scripts/device-call-lib.sh s29b
mkdir -p /tmp/libs; tar xJf .devperf/libs.tar.xz -C /tmp/libs
T counters_ranks_1_2 200 $r/tests/gpu_collectives --gtest_filter='CollectiveCounters.*:Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures 120 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*'
if mps_on; then
  T mps_ranks_3_4 200 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/2:Ranks/Collectives.*/3'
  mps_off
fi
for rep in 1 2 3; do
  for v in main pf; do
    lib=/tmp/libs/main; [[ $v == pf ]] && lib=$r/lib
    P ar_${v}$rep $lib $R $r/perf/all_reduce_perf -b 8M -e 256M -f 2 -R 2 -n 40 -w 10
    P arm_${v}$rep $lib $R $r/perf/all_reduce_perf -b 4M -e 64M -f 2 -R 0 -n 40 -w 10
    P rsm_${v}$rep $lib env CCL_PROTO=SIMPLE $R $r/perf/reduce_scatter_perf -b 2M -e 64M -f 2 -R 0 -n 40 -w 10
  done
done
for rep in 1 2; do
  for v in pf ns32 ns256; do
    lib=/tmp/libs/$v; [[ $v == pf ]] && lib=$r/lib
    P ll_ar_${v}$rep $lib env CCL_PROTO=LL128 $R $r/perf/all_reduce_perf -b 512K -e 4M -f 2 -R 2 -n 50 -w 10
    P ll_rs_${v}$rep $lib $R $r/perf/reduce_scatter_perf -b 1M -e 8M -f 2 -R 2 -n 50 -w 10
  done
done
P ar_nccl $r/lib $R $r/perf/all_reduce_perf -b 1M -e 256M -f 2 -R 2 --compare-nccl
P ar_nccl_graph $r/lib $R $r/perf/all_reduce_perf -b 1M -e 256M -f 2 -R 2 -G 10 --compare-nccl
P arm_nccl $r/lib $R $r/perf/all_reduce_perf -b 1M -e 64M -f 2 -R 0 --compare-nccl
finish
cd $L
grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' counters_ranks_1_2.log groups_failures.log mps_ranks_3_4.log
for f in ar arm rsm; do
  echo "-- $f (size: main pf rep1 | rep2 | rep3; oop us; wrong)"
  paste <(rows ${f}_main1.log) <(rows ${f}_pf1.log) <(rows ${f}_main2.log) <(rows ${f}_pf2.log) <(rows ${f}_main3.log) <(rows ${f}_pf3.log) |
    awk '{printf "%9s %6s %6s | %6s %6s | %6s %6s w%d\n", $1, $2, $5, $8, $11, $14, $17, $3+$6+$9+$12+$15+$18}'
done
for f in ll_ar ll_rs; do
  echo "-- $f (size: pf ns32 ns256 rep1 | rep2; oop us; wrong)"
  paste <(rows ${f}_pf1.log) <(rows ${f}_ns321.log) <(rows ${f}_ns2561.log) <(rows ${f}_pf2.log) <(rows ${f}_ns322.log) <(rows ${f}_ns2562.log) |
    awk '{printf "%9s %6s %6s %6s | %6s %6s %6s w%d\n", $1, $2, $5, $8, $11, $14, $17, $3+$6+$9+$12+$15+$18}'
done
for f in ar_nccl arm_nccl; do
  echo "-- $f (size oop ip nccl ratio wrong)"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{print $1, $6, $10, $(NF-3), $(NF-1), $9 $13}'
done
echo "-- graph (size oop nccl ratio)"; grep -E '^\[0\] +[0-9]+ ' ar_nccl_graph.log | sed 's/^\[0\] //' | awk '{print $1, $6, $(NF-2), $NF}'
