#!/usr/bin/env bash
# Twenty-ninth session, eighth 2 x H200 call: the final code's test binary (8f23492; later
# commits are comments and docs): counters, the 1-/2-rank matrices, groups/failures/copy-engine
# queues.
set -u
source scripts/device-call-lib.sh s29h
T counters_ranks_1_2 100 $r/tests/gpu_collectives --gtest_filter='CollectiveCounters.*:Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures_ce 90 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*:CopyEngineQueues.*'
finish
cd $L
grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]|report:' counters_ranks_1_2.log groups_failures_ce.log
