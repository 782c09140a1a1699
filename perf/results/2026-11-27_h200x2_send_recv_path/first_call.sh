#!/usr/bin/env bash
# Twenty-fifth session, first 2 x H200 call: the review commit (buffer check under the
# communicator's device), the 256 MiB send/recv copy-engine default, alltoall as grouped
# send/recv at large sizes, MPS matrices, mp_comm, examples. Every step bounded.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s25a; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 s=$2; shift 2; T $n $s env LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH $r/bin/ccl-run -n 2 -- "$@"; }
nvidia-smi -L > $L/machine.txt; nvidia-smi topo -m >> $L/machine.txt
T ccl_info 20 $r/bin/ccl-info
T groups_failures 90 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*:CollectiveFailures.*'
T gpu_collectives 120 $r/tests/gpu_collectives --gtest_filter='-CollectiveResidency.*:OneProcessHang.*:Ranks/Collectives.*/2:Ranks/Collectives.*/3:Ranks/Collectives.*/4:CollectiveGroups.*:CollectiveFailures.*'
P sendrecv_default 60 $r/perf/sendrecv_perf -b 1M -e 1G -f 4 -R 2 --compare-nccl
P sendrecv_sm 60 env CCL_P2P_COPY_ENGINE=0 $r/perf/sendrecv_perf -b 16M -e 1G -f 2 -R 2 --compare-nccl
P alltoall_p2p 60 $r/perf/alltoall_perf --p2p -b 1M -e 1G -f 4 -R 2 --compare-nccl
P alltoall_sm 60 $r/perf/alltoall_perf -b 1M -e 1G -f 4 -R 2 --compare-nccl
P sendrecv_malloc 40 $r/perf/sendrecv_perf -b 8 -e 256M -f 8 -R 0 --compare-nccl
P sendrecv_registered 40 $r/perf/sendrecv_perf -b 8 -e 256M -f 8 -R 1 --compare-nccl
P all_reduce_malloc 40 $r/perf/all_reduce_perf -b 8 -e 256M -f 8 -R 0 --compare-nccl
P all_reduce_registered 40 $r/perf/all_reduce_perf -b 8 -e 256M -f 8 -R 1 --compare-nccl
export CUDA_MPS_PIPE_DIRECTORY=/tmp/ccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/ccl-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if nvidia-cuda-mps-control -d; then sleep 1
  T mps_residency 60 $r/tests/gpu_collectives --gtest_filter='CollectiveResidency.*'
  T mps_3ranks 60 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/2'
  T mps_4ranks 60 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/3'
  T mps_8ranks 90 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/4'
  echo quit | nvidia-cuda-mps-control; sleep 1
else echo "mps daemon failed" | tee -a $L/summary.txt; fi
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
T mp_comm 90 $r/tests/mp_comm
T env_rank_n2 30 $r/bin/ccl-run -n 2 --timeout 20 -- $r/tests/env_rank
for e in $r/examples/example_*; do T $(basename $e) 30 $r/bin/ccl-run -n 2 --timeout 25 -- $e; done
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s25a_logs.tar.xz -C /tmp s25a
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' groups_failures.log gpu_collectives.log mps_*.log mp_comm.log | head -30
for f in sendrecv_default sendrecv_sm alltoall_p2p alltoall_sm sendrecv_malloc sendrecv_registered all_reduce_malloc all_reduce_registered; do
  echo "-- $f"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{print $1, $6, $7, $8, $9, $(NF-3), $(NF-2), $(NF-1), $NF}' | tail -12; done
