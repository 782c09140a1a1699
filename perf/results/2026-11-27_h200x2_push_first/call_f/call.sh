#!/usr/bin/env bash
# Twenty-ninth session, sixth 2 x H200 call: the LL128 timeout report names a missing line
# (this .devinst) with its new test, the absent-rank test, and LL128 allreduce in half, bfloat16
# and fp8 (whose kernels' register use moved) against main 9339776, alternated twice.
set -u
source scripts/device-call-lib.sh s29f
mkdir -p /tmp/libs; tar xJf .devperf/libs.tar.xz -C /tmp/libs
T failures 120 $r/tests/gpu_collectives --gtest_filter='CollectiveFailures.AnLL128TimeoutNamesAMissingLine:CollectiveFailures.AnAbsentRankIsNamedInATimeout'
T failures_main_lib 60 env LD_LIBRARY_PATH=/tmp/libs/main $r/tests/gpu_collectives --gtest_filter='CollectiveFailures.AnLL128TimeoutNamesAMissingLine'
for rep in 1 2; do
  for v in main new; do
    lib=/tmp/libs/main; [[ $v == new ]] && lib=$r/lib
    for d in half bfloat16 float; do
      P ll_${d}_${v}$rep $lib $R $r/perf/all_reduce_perf -b 256K -e 2M -f 2 -R 2 -d $d -n 50 -w 10
    done
  done
done
finish
cd $L
grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]|names a line|report' failures.log failures_main_lib.log | head -20
for d in half bfloat16 float; do
  echo "-- $d (size: main new rep1 | rep2; oop us; wrong)"
  paste <(rows ll_${d}_main1.log) <(rows ll_${d}_new1.log) <(rows ll_${d}_main2.log) <(rows ll_${d}_new2.log) |
    awk '{printf "%9s %6s %6s | %6s %6s w%d\n", $1, $2, $5, $8, $11, $3+$6+$9+$12}'
done
