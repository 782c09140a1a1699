#!/usr/bin/env bash
# Twenty-fifth session, fifth 2 x H200 call: the review commit (one copy-engine predicate; side
# streams back in copy_engine.cc): GPU tests and the affected benchmarks beside NCCL.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s25e; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 s=$2; shift 2; T $n $s env LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH $r/bin/ccl-run -n 2 -- "$@"; }
T ranks_1_2 150 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures_ce 90 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*:CopyEngineQueues.*'
T gpu_device_api 60 $r/tests/gpu_device_api
T gpu_device_coll 60 $r/tests/gpu_device_coll
P broadcast_perf 60 $r/perf/broadcast_perf -b 8 -e 1G -f 4 -R 2 --compare-nccl
P broadcast_perf_graph 60 $r/perf/broadcast_perf -b 64M -e 1G -f 2 -R 2 -G 10 --compare-nccl
P sendrecv_perf 60 $r/perf/sendrecv_perf -b 64M -e 1G -f 2 -R 2 --compare-nccl
P alltoall_perf_p2p 60 $r/perf/alltoall_perf --p2p -b 16M -e 1G -f 4 -R 2 --compare-nccl
P all_gather_perf_send_recv 60 $r/perf/all_gather_perf -b 64M -e 1G -f 4 -R 2 --algo send_recv --compare-nccl
P all_gather_perf_send_recv_malloc 60 $r/perf/all_gather_perf -b 64M -e 1G -f 4 -R 0 --algo send_recv
export CUDA_MPS_PIPE_DIRECTORY=/tmp/ccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/ccl-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if nvidia-cuda-mps-control -d; then sleep 1
  T mps_3ranks 60 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/2'
  echo quit | nvidia-cuda-mps-control; sleep 1
else echo "mps daemon failed" | tee -a $L/summary.txt; fi
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s25e_logs.tar.xz -C /tmp s25e
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' ranks_1_2.log groups_failures_ce.log gpu_device_api.log gpu_device_coll.log mps_3ranks.log
for f in broadcast_perf broadcast_perf_graph sendrecv_perf alltoall_perf_p2p all_gather_perf_send_recv all_gather_perf_send_recv_malloc; do
  echo "-- $f"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '$1>=16777216 {print $1, $6, $8, $9, $10, $12, $(NF-3), $(NF-2), $(NF-1)}'; done
