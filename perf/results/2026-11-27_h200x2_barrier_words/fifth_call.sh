#!/usr/bin/env bash
# Twenty-seventh session, fifth 2 x H200 call, at ed56784 (the session's kernels): the GPU test
# binaries, the 8-rank matrix under MPS, the examples; then the gpu-check jobs not run this
# session and the last ones (-g, every type/op/root, grouped send/recv, launch floor, comm init,
# -G 1); last, one-shot against two-shot allreduce forced at 2-16 MiB.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s27e; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
export LD_LIBRARY_PATH=$r/lib
T ranks_1_2 150 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures_ce 120 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*:CopyEngineQueues.*:CollectiveCounters.*'
for t in gpu_device_api gpu_device_coll gpu_heap; do T $t 150 $r/tests/$t; done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/ccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/ccl-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if nvidia-cuda-mps-control -d; then sleep 1
  T mps_8ranks 150 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/4'
  echo quit | nvidia-cuda-mps-control; sleep 1
else echo "mps daemon failed" | tee -a $L/summary.txt; fi
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
OUT=$L/check TESTS=none DEVICE_PERF=0 MPS=0 RANKS=2 JOB_TIMEOUT=70 \
  ONLY='^(ccl-run-env-init-n2|mp_comm|example_.*|all_reduce_perf_graph|all_reduce_perf_g2|all_reduce_perf_g2_check|all_gather_perf_g2_ce_graph|sendrecv_perf_g2|all_reduce_perf_alltypes|reduce_perf_allroots|sendrecv_perf_agg|alltoall_perf_p2p_agg|launch_floor_perf|comm_init_perf)$' \
  T gpu_check 330 bash scripts/gpu-check.sh
R="$r/bin/ccl-run -n 2 --"
for rep in 1 2; do for a in one_shot two_shot; do
  T ${a}_$rep 40 env LD_LIBRARY_PATH=$nccl:$r/lib CCL_PROTO=SIMPLE CCL_ALGO=allreduce:$a $R $r/perf/all_reduce_perf -b 2M -e 16M -f 2 -R 2 -n 50 -w 10
done; done
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s27e_logs.tar.xz -C /tmp s27e
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' ranks_1_2.log groups_failures_ce.log gpu_device_api.log gpu_device_coll.log gpu_heap.log mps_8ranks.log
grep -E ' (ok|FAIL:[0-9]+) ' gpu_check.log
for a in one_shot two_shot; do echo "-- $a (size rep1 rep2 us)"; paste <(grep -E '^\[0\] +[0-9]+ ' ${a}_1.log | awk '{print $2, $7, $10}') <(grep -E '^\[0\] +[0-9]+ ' ${a}_2.log | awk '{print $7, $10}'); done
