#!/usr/bin/env bash
# Twenty-seventh session, sixth 2 x H200 call, at ed56784: the direct kernels' block count from
# 2 MiB (the table: one per 64 KiB up to 32, 64 from 64 MiB) against 48 and 64 forced, alternated.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
L=/tmp/s27f; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
R="$r/bin/ccl-run -n 2 --"
for rep in 1 2; do for nc in 0 48 64; do
  e=(); [[ $nc != 0 ]] && e=(CCL_NCHANNELS=$nc)
  T ar_nc${nc}_$rep 40 env "${e[@]}" $R $r/perf/all_reduce_perf -b 4M -e 64M -f 2 -R 2 -n 50 -w 10
  for c in all_gather reduce_scatter broadcast alltoall; do
    T ${c}_nc${nc}_$rep 40 env "${e[@]}" $R $r/perf/${c}_perf -b 4M -e 64M -f 2 -R 2 -n 50 -w 10
  done
done; done
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s27f_logs.tar.xz -C /tmp s27f
cd $L
for f in ar all_gather reduce_scatter broadcast alltoall; do
  echo "-- $f (size: table 48 64 rep1 | table 48 64 rep2; oop us)"
  for t in nc0_1 nc48_1 nc64_1 nc0_2 nc48_2 nc64_2; do grep -E '^\[0\] +[0-9]+ ' ${f}_$t.log | awk '{print $2, $7, $10}' > /tmp/$t.t; done
  paste /tmp/nc0_1.t /tmp/nc48_1.t /tmp/nc64_1.t /tmp/nc0_2.t /tmp/nc48_2.t /tmp/nc64_2.t | awk '{printf "%9s %7s %7s %7s | %7s %7s %7s  w%s%s%s%s%s%s\n", $1, $2, $5, $8, $11, $14, $17, $3, $6, $9, $12, $15, $18}'
done
