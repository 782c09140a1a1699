#!/usr/bin/env bash
# Twenty-seventh session, seventh 2 x H200 call: the tuner gives two ranks' direct kernels 64
# blocks from 4 MiB. The 1- and 2-rank matrices and groups/failures; the table against 32 blocks
# forced (the former table from 4 to 32 MiB); then the sweeps beside NCCL for the record.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s27g; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
R="$r/bin/ccl-run -n 2 --"
T ranks_1_2 100 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures_ce 90 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*:CopyEngineQueues.*'
for nc in 0 32; do
  e=(); [[ $nc != 0 ]] && e=(CCL_NCHANNELS=$nc)
  T ar_nc$nc 30 env "${e[@]}" $R $r/perf/all_reduce_perf -b 2M -e 64M -f 2 -R 2 -n 50 -w 10
  for c in all_gather reduce_scatter broadcast alltoall; do
    T ${c}_nc$nc 30 env "${e[@]}" $R $r/perf/${c}_perf -b 2M -e 64M -f 2 -R 2 -n 50 -w 10
  done
done
for c in all_reduce all_gather reduce_scatter alltoall broadcast; do
  T ${c}_perf 45 env LD_LIBRARY_PATH=$nccl:$r/lib $R $r/perf/${c}_perf -b 8 -e 1G -f 2 -R 2 --compare-nccl --json $L/${c}_perf.json
done
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s27g_logs.tar.xz -C /tmp s27g
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' ranks_1_2.log groups_failures_ce.log
for f in ar all_gather reduce_scatter broadcast alltoall; do
  echo "-- $f (size: table, 32 forced; oop us)"
  paste <(grep -E '^\[0\] +[0-9]+ ' ${f}_nc0.log | awk '{print $2, $7, $10}') <(grep -E '^\[0\] +[0-9]+ ' ${f}_nc32.log | awk '{print $7, $10}')
done
for f in all_reduce all_gather reduce_scatter alltoall broadcast; do echo "-- ${f}_perf (size oop ip nccl ratio)"; grep -E '^\[0\] +[0-9]+ ' ${f}_perf.log | sed 's/^\[0\] //' | awk '$1>=1048576 && $1<=67108864 {print $1, $6, $10, $(NF-3), $(NF-1)}'; done
