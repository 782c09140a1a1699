#!/usr/bin/env bash
# Twenty-ninth session, fifth 2 x H200 call: the in-place alltoall swap with a deeper pipeline
# (experiment libraries d3: three 12 KiB chunks a block in shared memory, d4: four of 10 KiB)
# against main's form (this .devinst: two of 16 KiB), alternated twice; the copy-engine path off
# (CCL_P2P_COPY_ENGINE=0) so that the SM kernels run to 512 MiB. The in-place tests on d3.
set -u
source scripts/device-call-lib.sh s29e
mkdir -p /tmp/libs; tar xJf .devperf/libs.tar.xz -C /tmp/libs
for rep in 1 2; do
  for v in new d3 d4; do
    lib=/tmp/libs/$v; [[ $v == new ]] && lib=$r/lib
    P a2a_${v}$rep $lib env CCL_P2P_COPY_ENGINE=0 $R $r/perf/alltoall_perf -b 16M -e 512M -f 2 -R 2 -n 20 -w 5
  done
done
P a2a_default $r/lib $R $r/perf/alltoall_perf -b 16M -e 1G -f 2 -R 2 --compare-nccl
T ranks_2_d3 200 env LD_LIBRARY_PATH=/tmp/libs/d3 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/1'
finish
cd $L
grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' ranks_2_d3.log
ip() { grep -E '^\[0\] +[0-9]+ ' "$1" | sed 's/^\[0\] //' | awk '{print $1, $10, $9 $13}'; }
echo "-- alltoall in place (size: new d3 d4 rep1 | rep2; ip us; wrong)"
paste <(ip a2a_new1.log) <(ip a2a_d31.log) <(ip a2a_d41.log) <(ip a2a_new2.log) <(ip a2a_d32.log) <(ip a2a_d42.log) |
  awk '{printf "%10s %7s %7s %7s | %7s %7s %7s w%s\n", $1, $2, $5, $8, $11, $14, $17, $3 $6 $9 $12 $15 $18}'
echo "-- default (size oop ip nccl ratio wrong)"; grep -E '^\[0\] +[0-9]+ ' a2a_default.log | sed 's/^\[0\] //' | awk '{print $1, $6, $10, $(NF-3), $(NF-1), $9 $13}'
