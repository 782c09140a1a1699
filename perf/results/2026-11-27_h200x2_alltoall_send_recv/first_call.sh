#!/usr/bin/env bash
# Twenty-sixth session, first 2 x H200 call: FIFO channels with a sending and a receiving block
# each; alltoall as send/recv (tuner from 512 MiB for two ranks, in place through a copy aside).
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s26a; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 s=$2; shift 2; T $n $s env LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH $r/bin/ccl-run -n 2 -- "$@"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 > $L/gpu.txt
T ranks_1_2 180 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures_ce 90 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*:CopyEngineQueues.*'
P sendrecv_malloc 60 $r/perf/sendrecv_perf -b 1M -e 1G -f 4 -R 0 --compare-nccl
P sendrecv_sym 60 $r/perf/sendrecv_perf -b 64M -e 1G -f 2 -R 2 --compare-nccl
P all_gather_sr_malloc 60 $r/perf/all_gather_perf -b 64M -e 1G -f 2 -R 0 --algo send_recv
P all_gather_malloc 60 $r/perf/all_gather_perf -b 64M -e 1G -f 2 -R 0
P broadcast_malloc 60 $r/perf/broadcast_perf -b 64M -e 1G -f 2 -R 0
P alltoall_default 60 $r/perf/alltoall_perf -b 64M -e 1G -f 2 -R 2 --compare-nccl
P alltoall_direct 60 $r/perf/alltoall_perf -b 64M -e 1G -f 2 -R 2 --algo direct --compare-nccl
P alltoall_graph 60 $r/perf/alltoall_perf -b 256M -e 1G -f 2 -R 2 -G 10 --compare-nccl
P alltoall_malloc_default 60 $r/perf/alltoall_perf -b 64M -e 1G -f 2 -R 0
P alltoall_malloc_direct 60 $r/perf/alltoall_perf -b 64M -e 1G -f 2 -R 0 --algo direct
P alltoall_p2p 60 $r/perf/alltoall_perf --p2p -b 16M -e 1G -f 4 -R 2 --compare-nccl
P alltoall_p2p_malloc 60 $r/perf/alltoall_perf --p2p -b 16M -e 1G -f 4 -R 0 --compare-nccl
P sendrecv_small_malloc 60 $r/perf/sendrecv_perf -b 64K -e 1M -f 2 -R 0 --compare-nccl
export CUDA_MPS_PIPE_DIRECTORY=/tmp/ccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/ccl-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if nvidia-cuda-mps-control -d; then sleep 1
  T mps_3ranks 90 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/2'
  echo quit | nvidia-cuda-mps-control; sleep 1
else echo "mps daemon failed" | tee -a $L/summary.txt; fi
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s26a_logs.tar.xz -C /tmp s26a
cd $L; cat gpu.txt; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' ranks_1_2.log groups_failures_ce.log mps_3ranks.log
for f in sendrecv_malloc sendrecv_sym all_gather_sr_malloc all_gather_malloc broadcast_malloc alltoall_default alltoall_direct alltoall_graph alltoall_malloc_default alltoall_malloc_direct alltoall_p2p alltoall_p2p_malloc sendrecv_small_malloc; do
  echo "-- $f"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{print $1, $6, $8, $9, $10, $12, $(NF-3), $(NF-2), $(NF-1)}'; done
