#!/usr/bin/env bash
# Thirtieth session, fifth 2 x H200 call: the review's clean-up (exit_to_unstage shared by the
# two direct kernels' tails; the absent-rank tests sharing with_an_absent_peer), "new"
# (.devinst), tested, and timed against the third call's library ("prev", 7c98c8f's kernels).
set -u
source scripts/device-call-lib.sh s30e
mkdir -p /tmp/libs; tar xJf .devperf/libs.tar.xz -C /tmp/libs
T counters_ranks_1_2 200 $r/tests/gpu_collectives --gtest_filter='CollectiveCounters.*:Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures_ce 120 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*:CopyEngineQueues.*:PointToPointFootprint.*'
if mps_on; then
  T mps_residency_3_4_8 240 $r/tests/gpu_collectives --gtest_filter='CollectiveResidency.*:Ranks/Collectives.*/2:Ranks/Collectives.*/3:Ranks/Collectives.*/4'
  mps_off
fi
for rep in 1 2; do
  for v in prev new; do
    lib=/tmp/libs/final1; [[ $v == new ]] && lib=$r/lib
    P ar_${v}$rep $lib $R $r/perf/all_reduce_perf -b 1M -e 64M -f 2 -R 2 -n 50 -w 10
    P ag_${v}$rep $lib $R $r/perf/all_gather_perf -b 4M -e 64M -f 4 -R 2 -n 50 -w 10
  done
done
finish
cd $L
grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' counters_ranks_1_2.log groups_failures_ce.log mps_residency_3_4_8.log
grep -h "rank 0's report" groups_failures_ce.log
for f in ar ag; do
  echo "-- $f (size: prev new | prev new; oop us; wrong)"
  paste <(rows ${f}_prev1.log) <(rows ${f}_new1.log) <(rows ${f}_prev2.log) <(rows ${f}_new2.log) |
    awk '{printf "%9s %6s %6s | %6s %6s w%d\n", $1, $2, $5, $8, $11, $3+$6+$9+$12}'
done
