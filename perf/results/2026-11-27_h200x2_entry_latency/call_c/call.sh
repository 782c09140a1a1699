#!/usr/bin/env bash
# Thirtieth session, third 2 x H200 call: the final library ("new", .devinst: the entry in one
# round of epoch loads with the peers' windows kept in shared memory, exit_and_finish) against
# main fb5bae6 ("main"), alternated; the tests of the final code, MPS ranks included; the
# sweeps of every collective beside NCCL for the record (eager, a graph, cudaMalloc buffers).
set -u
source scripts/device-call-lib.sh s30c
mkdir -p /tmp/libs; tar xJf .devperf/libs.tar.xz -C /tmp/libs
lib_of() { case $1 in new) echo $r/lib ;; *) echo /tmp/libs/main30 ;; esac; }
T counters_ranks_1_2 200 $r/tests/gpu_collectives --gtest_filter='CollectiveCounters.*:Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures_ce 120 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*:CopyEngineQueues.*'
if mps_on; then
  T mps_residency_3_4_8 240 $r/tests/gpu_collectives --gtest_filter='CollectiveResidency.*:Ranks/Collectives.*/2:Ranks/Collectives.*/3:Ranks/Collectives.*/4'
  mps_off
fi
for rep in 1 2; do
  for v in main new; do
    P ar_${v}$rep $(lib_of $v) $R $r/perf/all_reduce_perf -b 1M -e 64M -f 2 -R 2 -n 50 -w 10
    P arg_${v}$rep $(lib_of $v) $R $r/perf/all_reduce_perf -b 1M -e 16M -f 2 -R 2 -G 10
  done
done
for c in all_reduce all_gather reduce_scatter broadcast reduce alltoall; do
  P ${c}_perf $r/lib $R $r/perf/${c}_perf -b 8 -e 1G -f 2 -R 2 --compare-nccl --json $L/${c}_perf.json
done
P all_reduce_perf_graph10 $r/lib $R $r/perf/all_reduce_perf -b 8 -e 64M -f 2 -R 2 -G 10 --compare-nccl --json $L/all_reduce_perf_graph10.json
P all_reduce_perf_mid2 $r/lib $R $r/perf/all_reduce_perf -b 128K -e 16M -f 2 -R 2 --compare-nccl
P all_reduce_perf_malloc $r/lib $R $r/perf/all_reduce_perf -b 1M -e 256M -f 2 -R 0 --compare-nccl
P reduce_scatter_perf_malloc $r/lib $R $r/perf/reduce_scatter_perf -b 1M -e 256M -f 2 -R 0 --compare-nccl
finish
cd $L
grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' counters_ranks_1_2.log groups_failures_ce.log mps_residency_3_4_8.log
for f in ar arg; do
  echo "-- $f (size: main new | main new; oop us; wrong)"
  paste <(rows ${f}_main1.log) <(rows ${f}_new1.log) <(rows ${f}_main2.log) <(rows ${f}_new2.log) |
    awk '{printf "%9s %6s %6s | %6s %6s w%d\n", $1, $2, $5, $8, $11, $3+$6+$9+$12}'
done
for f in all_reduce_perf all_reduce_perf_mid2 all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf all_reduce_perf_malloc reduce_scatter_perf_malloc; do
  echo "-- $f (size oop ip nccl ratio wrong)"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '$1>=131072 && $1<=67108864 || $1==536870912 {print $1, $6, $10, $(NF-3), $(NF-1), $9 $13}'
done
echo "-- graph allreduce (size oop nccl ratio)"; grep -E '^\[0\] +[0-9]+ ' all_reduce_perf_graph10.log | sed 's/^\[0\] //' | awk '$1>=131072 {print $1, $6, $(NF-2), $NF}'
