#!/usr/bin/env bash
# Twenty-ninth session, first 2 x H200 call: two-shot allreduce and reduce-scatter that push the
# peers' blocks before the entry barrier (branch next/push-first, this .devinst, tuner range up to
# 32 MiB) against main 9339776 (/tmp/libs/main), alternated three times; tests of the branch.
set -u
source scripts/device-call-lib.sh s29a
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
    P ar_${v}$rep $lib env CCL_ALGO=allreduce:two_shot $R $r/perf/all_reduce_perf -b 1M -e 64M -f 2 -R 2 -n 50 -w 10
    P rs_${v}$rep $lib env CCL_PROTO=SIMPLE $R $r/perf/reduce_scatter_perf -b 2M -e 64M -f 2 -R 2 -n 50 -w 10
    P arm_${v}$rep $lib $R $r/perf/all_reduce_perf -b 4M -e 32M -f 2 -R 0 -n 50 -w 10
  done
done
P ar_nccl $r/lib $R $r/perf/all_reduce_perf -b 1M -e 64M -f 2 -R 2 --compare-nccl
P ar_nccl_graph $r/lib $R $r/perf/all_reduce_perf -b 1M -e 64M -f 2 -R 2 -G 10 --compare-nccl
P rs_nccl $r/lib $R $r/perf/reduce_scatter_perf -b 1M -e 64M -f 2 -R 2 --compare-nccl
finish
cd $L
grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' counters_ranks_1_2.log groups_failures.log mps_ranks_3_4.log
for f in ar rs arm; do
  echo "-- $f (size: main pf rep1 | rep2 | rep3; oop us; wrong)"
  paste <(rows ${f}_main1.log) <(rows ${f}_pf1.log) <(rows ${f}_main2.log) <(rows ${f}_pf2.log) <(rows ${f}_main3.log) <(rows ${f}_pf3.log) |
    awk '{printf "%9s %6s %6s | %6s %6s | %6s %6s w%d\n", $1, $2, $5, $8, $11, $14, $17, $3+$6+$9+$12+$15+$18}'
done
for f in ar_nccl rs_nccl; do
  echo "-- $f (size oop ip nccl ratio wrong)"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{print $1, $6, $10, $(NF-3), $(NF-1), $9 $13}'
done
echo "-- graph (size oop nccl ratio)"; grep -E '^\[0\] +[0-9]+ ' ar_nccl_graph.log | sed 's/^\[0\] //' | awk '{print $1, $6, $(NF-2), $NF}'
