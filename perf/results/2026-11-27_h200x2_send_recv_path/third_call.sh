#!/usr/bin/env bash
# Twenty-fifth session, third 2 x H200 call: broadcast/allgather as send/recv (tuner route from
# CCL_P2P_COPY_ENGINE), self pairs kept in the kernel beside copy-engine sends, GPU tests of both.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s25c; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 s=$2; shift 2; T $n $s env LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH $r/bin/ccl-run -n 2 -- "$@"; }
T ranks_1_2 150 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T groups_failures 90 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*'
for c in broadcast all_gather; do
  P ${c}_route 60 $r/perf/${c}_perf -b 128M -e 1G -f 2 -R 2 --compare-nccl
  P ${c}_route_graph 60 $r/perf/${c}_perf -b 256M -e 1G -f 2 -R 2 -G 10 --compare-nccl
  P ${c}_route_malloc 60 $r/perf/${c}_perf -b 256M -e 1G -f 2 -R 0
done
P alltoall_p2p 60 $r/perf/alltoall_perf --p2p -b 1M -e 1G -f 4 -R 2 --compare-nccl
P sendrecv_default 60 $r/perf/sendrecv_perf -b 64M -e 1G -f 2 -R 2 --compare-nccl
export CUDA_MPS_PIPE_DIRECTORY=/tmp/ccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/ccl-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if nvidia-cuda-mps-control -d; then sleep 1
  T mps_3ranks 60 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/2'
  T mps_4ranks 60 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/3'
  echo quit | nvidia-cuda-mps-control; sleep 1
else echo "mps daemon failed" | tee -a $L/summary.txt; fi
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s25c_logs.tar.xz -C /tmp s25c
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]|rank [0-9].*(fail|FAIL|is |byte)' ranks_1_2.log groups_failures.log mps_*.log | head -30
for f in broadcast_route broadcast_route_graph broadcast_route_malloc all_gather_route all_gather_route_graph all_gather_route_malloc alltoall_p2p sendrecv_default; do
  echo "-- $f"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{print $1, $6, $8, $9, $10, $12, $(NF-3), $(NF-2), $(NF-1)}' | tail -7; done
