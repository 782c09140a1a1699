#!/usr/bin/env bash
# Thirtieth session, first 2 x H200 call: the direct kernels' entry in fewer serial loads (one
# round for the own and the peers' epochs, the peers' windows kept in shared memory from the
# entry barrier instead of loaded again), "new" (.devinst), against main fb5bae6's library
# ("main"), alternated three times; the tests of the new library's code (gpu_collectives links
# it statically).
set -u
source scripts/device-call-lib.sh s30a
mkdir -p /tmp/libs; tar xJf .devperf/libs.tar.xz -C /tmp/libs
T counters_ranks_1_2 200 $r/tests/gpu_collectives --gtest_filter='CollectiveCounters.*:Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures_ce 120 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*:CopyEngineQueues.*'
for rep in 1 2 3; do
  for v in main new; do
    lib=/tmp/libs/main30; [[ $v == new ]] && lib=$r/lib
    P ar_${v}$rep $lib $R $r/perf/all_reduce_perf -b 1M -e 64M -f 2 -R 2 -n 50 -w 10
  done
done
for rep in 1 2; do
  for v in main new; do
    lib=/tmp/libs/main30; [[ $v == new ]] && lib=$r/lib
    P small_${v}$rep $lib $R $r/perf/all_reduce_perf -b 8 -e 512K -f 4 -R 2 -n 50 -w 10
    for c in all_gather reduce_scatter broadcast alltoall; do
      P ${c}_${v}$rep $lib $R $r/perf/${c}_perf -b 1M -e 64M -f 4 -R 2 -n 50 -w 10
    done
  done
done
P ar_graph_main /tmp/libs/main30 $R $r/perf/all_reduce_perf -b 1M -e 16M -f 2 -R 2 -G 10
P ar_graph_new $r/lib $R $r/perf/all_reduce_perf -b 1M -e 16M -f 2 -R 2 -G 10
finish
cd $L
grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' counters_ranks_1_2.log groups_failures_ce.log
echo "-- allreduce (size: main new | main new | main new; oop us; wrong)"
paste <(rows ar_main1.log) <(rows ar_new1.log) <(rows ar_main2.log) <(rows ar_new2.log) <(rows ar_main3.log) <(rows ar_new3.log) |
  awk '{printf "%9s %6s %6s | %6s %6s | %6s %6s w%d\n", $1, $2, $5, $8, $11, $14, $17, $3+$6+$9+$12+$15+$18}'
for f in small all_gather reduce_scatter broadcast alltoall; do
  echo "-- $f (size: main new | main new)"
  paste <(rows ${f}_main1.log) <(rows ${f}_new1.log) <(rows ${f}_main2.log) <(rows ${f}_new2.log) |
    awk '{printf "%9s %6s %6s | %6s %6s w%d\n", $1, $2, $5, $8, $11, $3+$6+$9+$12}'
done
echo "-- graph allreduce (size: main new)"
paste <(rows ar_graph_main.log) <(rows ar_graph_new.log) | awk '{print $1, $2, $5, "w" $3+$6}'
