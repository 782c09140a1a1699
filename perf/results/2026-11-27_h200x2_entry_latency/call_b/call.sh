#!/usr/bin/env bash
# Thirtieth session, second 2 x H200 call: "tail" (.devinst: the first call's entry plus
# exit_and_finish, a block counted out while its exit-barrier flag crosses) against main
# fb5bae6 ("main") and the first call's library ("new"), alternated three times; "llmain" (new
# with main's ll.cu / ll128.cu, to place the first call's alltoall 1 MiB difference) beside them
# on the LL128 sizes; the tests of tail's code, MPS ranks included; tail's allreduce sweep beside
# NCCL, eager and in a graph.
set -u
source scripts/device-call-lib.sh s30b
mkdir -p /tmp/libs; tar xJf .devperf/libs.tar.xz -C /tmp/libs
lib_of() { case $1 in tail) echo $r/lib ;; *) echo /tmp/libs/${1}30 ;; esac; }
T counters_ranks_1_2 200 $r/tests/gpu_collectives --gtest_filter='CollectiveCounters.*:Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures_ce 120 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*:CopyEngineQueues.*'
if mps_on; then
  T mps_residency_3_4_8 240 $r/tests/gpu_collectives --gtest_filter='CollectiveResidency.*:Ranks/Collectives.*/2:Ranks/Collectives.*/3:Ranks/Collectives.*/4'
  mps_off
fi
for rep in 1 2 3; do
  for v in main new tail; do
    P ar_${v}$rep $(lib_of $v) $R $r/perf/all_reduce_perf -b 1M -e 64M -f 2 -R 2 -n 50 -w 10
  done
done
for rep in 1 2; do
  for v in main new llmain tail; do
    lib=$(lib_of $v); [[ $v == llmain ]] && lib=/tmp/libs/llmain
    P a2a_${v}$rep $lib $R $r/perf/alltoall_perf -b 1M -e 4M -f 2 -R 2 -n 50 -w 10
    P ag_${v}$rep $lib $R $r/perf/all_gather_perf -b 1M -e 4M -f 2 -R 2 -n 50 -w 10
  done
done
for v in main tail; do
  for c in all_gather reduce_scatter broadcast alltoall reduce; do
    P ${c}_${v} $(lib_of $v) $R $r/perf/${c}_perf -b 4M -e 64M -f 4 -R 2 -n 50 -w 10
  done
done
P all_reduce_perf $r/lib $R $r/perf/all_reduce_perf -b 8 -e 64M -f 2 -R 2 --compare-nccl --json $L/all_reduce_perf.json
P all_reduce_perf_graph10 $r/lib $R $r/perf/all_reduce_perf -b 8 -e 64M -f 2 -R 2 -G 10 --compare-nccl --json $L/all_reduce_perf_graph10.json
finish
cd $L
grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' counters_ranks_1_2.log groups_failures_ce.log mps_residency_3_4_8.log
echo "-- allreduce (size: main new tail x3; oop us; wrong)"
paste <(rows ar_main1.log) <(rows ar_new1.log) <(rows ar_tail1.log) <(rows ar_main2.log) <(rows ar_new2.log) <(rows ar_tail2.log) <(rows ar_main3.log) <(rows ar_new3.log) <(rows ar_tail3.log) |
  awk '{printf "%9s %6s %6s %6s | %6s %6s %6s | %6s %6s %6s w%d\n", $1, $2, $5, $8, $11, $14, $17, $20, $23, $26, $3+$6+$9+$12+$15+$18+$21+$24+$27}'
for f in a2a ag; do
  echo "-- $f (size: main new llmain tail x2)"
  paste <(rows ${f}_main1.log) <(rows ${f}_new1.log) <(rows ${f}_llmain1.log) <(rows ${f}_tail1.log) <(rows ${f}_main2.log) <(rows ${f}_new2.log) <(rows ${f}_llmain2.log) <(rows ${f}_tail2.log) |
    awk '{printf "%9s %6s %6s %6s %6s | %6s %6s %6s %6s w%d\n", $1, $2, $5, $8, $11, $14, $17, $20, $23, $3+$6+$9+$12+$15+$18+$21+$24}'
done
for c in all_gather reduce_scatter broadcast alltoall reduce; do
  echo "-- $c (size: main tail)"
  paste <(rows ${c}_main.log) <(rows ${c}_tail.log) | awk '{print $1, $2, $5, "w" $3+$6}'
done
echo "-- tail allreduce vs NCCL (size oop ip nccl ratio wrong)"
grep -E '^\[0\] +[0-9]+ ' all_reduce_perf.log | sed 's/^\[0\] //' | awk '$1>=131072 {print $1, $6, $10, $(NF-3), $(NF-1), $9 $13}'
echo "-- graph (size oop nccl ratio)"
grep -E '^\[0\] +[0-9]+ ' all_reduce_perf_graph10.log | sed 's/^\[0\] //' | awk '$1>=131072 {print $1, $6, $(NF-2), $NF}'
