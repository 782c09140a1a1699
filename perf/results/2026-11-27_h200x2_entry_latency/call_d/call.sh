#!/usr/bin/env bash
# Thirtieth session, fourth 2 x H200 call: the final library's small eager allreduce with more
# iterations (the -n 20 sweeps' small rows follow the host's enqueue time and its jitter), beside
# NCCL, twice; send/recv and alltoall at 512 MiB for the targets' record.
set -u
source scripts/device-call-lib.sh s30d
for rep in 1 2; do
  P small_n200_$rep $r/lib $R $r/perf/all_reduce_perf -b 8 -e 64K -f 2 -R 2 -n 200 -w 50 --compare-nccl --json $L/small_n200_$rep.json
done
P small_n20 $r/lib $R $r/perf/all_reduce_perf -b 8 -e 64K -f 2 -R 2 --compare-nccl
P sendrecv_512m $r/lib $R $r/perf/sendrecv_perf -b 512M -e 512M -R 2 --compare-nccl
finish
cd $L
for f in small_n200_1 small_n200_2 small_n20; do
  echo "-- $f (size oop ip nccl ratio enq wrong)"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{print $1, $6, $10, $(NF-3), $(NF-1), $NF, $9 $13}'
done
echo "-- sendrecv (size time busbw nccl ratio)"; grep -E '^\[0\] +[0-9]+ ' sendrecv_512m.log | sed 's/^\[0\] //' | awk '{print $1, $6, $8, $(NF-3), $(NF-1)}'
