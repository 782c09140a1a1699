#!/usr/bin/env bash
# Twenty-sixth session, last 2 x H200 call: the 8-rank matrix under MPS and the device-API tests
# on the session's final kernels (37050b0's build).
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
L=/tmp/s26e; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
T gpu_device_api 60 $r/tests/gpu_device_api
T gpu_device_coll 60 $r/tests/gpu_device_coll
export CUDA_MPS_PIPE_DIRECTORY=/tmp/ccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/ccl-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
if nvidia-cuda-mps-control -d; then sleep 1
  T mps_8ranks 90 $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/4'
  echo quit | nvidia-cuda-mps-control; sleep 1
else echo "mps daemon failed" | tee -a $L/summary.txt; fi
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s26e_logs.tar.xz -C /tmp s26e
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' gpu_device_api.log gpu_device_coll.log mps_8ranks.log
