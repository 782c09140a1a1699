#!/usr/bin/env bash
# Twenty-sixth session, second 2 x H200 call: allgather as send/recv by default for two ranks;
# self blocks beside SM rendezvous sends (alltoall as send/recv below the proxy size); GPU tests.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s26b; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 s=$2; shift 2; T $n $s env LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH $r/bin/ccl-run -n 2 -- "$@"; }
T ranks_1_2 180 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures_ce 90 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*:CopyEngineQueues.*'
P alltoall_p2p 60 $r/perf/alltoall_perf --p2p -b 1M -e 1G -f 4 -R 2 --compare-nccl
P alltoall_sr 60 $r/perf/alltoall_perf -b 1M -e 1G -f 4 -R 2 --algo send_recv --compare-nccl
P alltoall_default 60 $r/perf/alltoall_perf -b 64M -e 1G -f 2 -R 2 --compare-nccl
P all_gather_default 60 $r/perf/all_gather_perf -b 64M -e 1G -f 2 -R 2 --compare-nccl
P all_gather_graph 60 $r/perf/all_gather_perf -b 256M -e 1G -f 2 -R 2 -G 10 --compare-nccl
P all_gather_malloc 60 $r/perf/all_gather_perf -b 64M -e 1G -f 2 -R 0
P broadcast_default 60 $r/perf/broadcast_perf -b 64M -e 1G -f 2 -R 2 --compare-nccl
P sendrecv_sym 60 $r/perf/sendrecv_perf -b 1M -e 1G -f 4 -R 2 --compare-nccl
for nc in 16 32 48 64; do
  P all_gather_nc$nc 60 env CCL_NCHANNELS=$nc $r/perf/all_gather_perf -b 2M -e 32M -f 2 -R 2 --compare-nccl
done
T mp_comm 90 $r/tests/mp_comm
T env_rank_n2 30 $r/bin/ccl-run -n 2 --timeout 20 -- $r/tests/env_rank
for e in $r/examples/example_*; do T $(basename $e) 30 $r/bin/ccl-run -n 2 --timeout 25 -- $e; done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/ccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/ccl-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if nvidia-cuda-mps-control -d; then sleep 1
  T mps_residency 90 $r/tests/gpu_collectives --gtest_filter='CollectiveResidency.*'
  T mps_3_4ranks 150 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/2:Ranks/Collectives.*/3'
  echo quit | nvidia-cuda-mps-control; sleep 1
else echo "mps daemon failed" | tee -a $L/summary.txt; fi
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s26b_logs.tar.xz -C /tmp s26b
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' ranks_1_2.log groups_failures_ce.log mps_residency.log mps_3_4ranks.log mp_comm.log
for f in alltoall_p2p alltoall_sr alltoall_default all_gather_default all_gather_graph all_gather_malloc broadcast_default sendrecv_sym all_gather_nc16 all_gather_nc32 all_gather_nc48 all_gather_nc64; do
  echo "-- $f"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{print $1, $6, $8, $9, $10, $12, $(NF-3), $(NF-2), $(NF-1)}'; done
