#!/usr/bin/env bash
# Twenty-eighth session, ninth 2 x H200 call (branch next/two-shot-ll128, pulls in 16-byte packs): the two-shot
# allreduce whose second half travels as LL128 lines (no exit barrier), taken with
# CCL_PROTO=LL128 above 2 MiB. Tests (the matrices' LL128 config runs it at the rows' capacity;
# every type and op through the benchmark's check), then the table's SIMPLE two-shot against it.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s28i; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
R="$r/bin/ccl-run -n 2 --"
T counters_ranks_1_2 200 $r/tests/gpu_collectives --gtest_filter='CollectiveCounters.*:Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T hybrid_alltypes 90 env CCL_PROTO=LL128 $R $r/perf/all_reduce_perf -b 2M -e 8M -f 2 -d all -o all -R 2 -n 3 -w 1
T hybrid_alltypes_cudamalloc 60 env CCL_PROTO=LL128 $R $r/perf/all_reduce_perf -b 4M -e 4M -d all -o sum -R 0 -n 3 -w 1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/ccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/ccl-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if nvidia-cuda-mps-control -d; then sleep 1
  T mps_ranks_3_4 150 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/2:Ranks/Collectives.*/3'
  echo quit | nvidia-cuda-mps-control; sleep 1
else echo "mps daemon failed" | tee -a $L/summary.txt; fi
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
for rep in 1 2 3; do
  T table$rep 60 $R $r/perf/all_reduce_perf -b 2M -e 16M -f 2 -R 2 -n 50 -w 10
  T hybrid$rep 60 env CCL_PROTO=LL128 $R $r/perf/all_reduce_perf -b 2M -e 16M -f 2 -R 2 -n 50 -w 10
done
T hybrid_nccl 60 env CCL_PROTO=LL128 LD_LIBRARY_PATH=$nccl:$r/lib $R $r/perf/all_reduce_perf -b 4M -e 8M -f 2 -R 2 --compare-nccl
T table_nccl 60 env LD_LIBRARY_PATH=$nccl:$r/lib $R $r/perf/all_reduce_perf -b 4M -e 8M -f 2 -R 2 --compare-nccl
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s28i_logs.tar.xz -C /tmp s28i
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' counters_ranks_1_2.log mps_ranks_3_4.log
for f in hybrid_alltypes hybrid_alltypes_cudamalloc; do echo "-- $f: rows, wrong (oop+ip) total"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{n++; w+=$9+$13} END {print n, w}'; grep -iE "error|fail" $f.log | head -3; done
t() { grep -E '^\[0\] +[0-9]+ ' $1 | sed 's/^\[0\] //' | awk '{print $1, $6, $10, $9+$13}'; }
for rep in 1 2 3; do echo "-- rep $rep (size: table oop ip wrong | hybrid oop ip wrong)"; paste <(t table$rep.log) <(t hybrid$rep.log); done
for f in hybrid_nccl table_nccl; do echo "-- $f (size oop ip nccl ratio wrong)"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{print $1, $6, $10, $(NF-3), $(NF-1), $9 $13}'; done
