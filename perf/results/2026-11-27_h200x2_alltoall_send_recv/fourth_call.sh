#!/usr/bin/env bash
# Twenty-sixth session, fourth 2 x H200 call: HEAD (CCL_P2P_COPY_ENGINE 128 MiB, self pairs in the
# kernel from 8 MiB peer sends): GPU tests, and the send/recv-routed collectives beside NCCL.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s26d; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 s=$2; shift 2; T $n $s env LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH $r/bin/ccl-run -n 2 -- "$@"; }
T ranks_1_2 180 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures_ce 90 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*:CopyEngineQueues.*'
for c in broadcast sendrecv all_gather alltoall; do
  P ${c}_perf 60 $r/perf/${c}_perf -b 32M -e 1G -f 2 -R 2 --compare-nccl
done
P broadcast_graph 60 $r/perf/broadcast_perf -b 64M -e 512M -f 2 -R 2 -G 10 --compare-nccl
P alltoall_p2p 60 $r/perf/alltoall_perf --p2p -b 256K -e 1G -f 4 -R 2 --compare-nccl
P sendrecv_malloc 60 $r/perf/sendrecv_perf -b 1M -e 1G -f 4 -R 0 --compare-nccl
P broadcast_malloc 60 $r/perf/broadcast_perf -b 64M -e 1G -f 2 -R 0
export CUDA_MPS_PIPE_DIRECTORY=/tmp/ccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/ccl-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if nvidia-cuda-mps-control -d; then sleep 1
  T mps_3_4ranks 150 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/2:Ranks/Collectives.*/3'
  echo quit | nvidia-cuda-mps-control; sleep 1
else echo "mps daemon failed" | tee -a $L/summary.txt; fi
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s26d_logs.tar.xz -C /tmp s26d
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' ranks_1_2.log groups_failures_ce.log mps_3_4ranks.log
for f in broadcast_perf sendrecv_perf all_gather_perf alltoall_perf broadcast_graph alltoall_p2p sendrecv_malloc broadcast_malloc; do
  echo "-- $f"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{print $1, $6, $8, $9, $10, $12, $(NF-3), $(NF-2), $(NF-1)}'; done
