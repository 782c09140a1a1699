#!/usr/bin/env bash
# Twenty-eighth session, seventh 2 x H200 call: e75749a's library (reduce on LL128 to 4 MiB).
# The 1-/2-rank matrices and counters; reduce, broadcast, reduce_scatter, allreduce 256 KiB -
# 16 MiB beside NCCL.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s28g; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
R="$r/bin/ccl-run -n 2 --"
T counters_ranks_1_2 200 $r/tests/gpu_collectives --gtest_filter='CollectiveCounters.*:Ranks/Collectives.*/0:Ranks/Collectives.*/1'
for c in reduce broadcast reduce_scatter all_reduce; do
  T ${c}_perf 60 env LD_LIBRARY_PATH=$nccl:$r/lib $R $r/perf/${c}_perf -b 256K -e 16M -f 2 -R 2 --compare-nccl --json $L/${c}_perf.json
done
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s28g_logs.tar.xz -C /tmp s28g
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' counters_ranks_1_2.log
for f in reduce_perf broadcast_perf reduce_scatter_perf all_reduce_perf; do
  echo "-- $f (size oop ip nccl ratio wrong)"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{print $1, $6, $10, $(NF-3), $(NF-1), $9 $13}'
done
