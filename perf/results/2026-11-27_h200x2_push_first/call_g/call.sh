#!/usr/bin/env bash
# Twenty-ninth session, seventh 2 x H200 call: the LL128 missing-line test against the final test
# binary and against one relinked with the previous ll128.cu (061e8be), which must fail it.
# gpu_collectives links the library statically: LD_LIBRARY_PATH does not change its code.
set -u
source scripts/device-call-lib.sh s29g
T new_binary 60 $r/tests/gpu_collectives --gtest_filter='CollectiveFailures.AnLL128TimeoutNamesAMissingLine'
T old_binary 60 $r/tests/gpu_collectives_old --gtest_filter='CollectiveFailures.AnLL128TimeoutNamesAMissingLine'
finish
cd $L
grep -hE "report|PASSED|FAILED|check failed" new_binary.log old_binary.log | head -20
