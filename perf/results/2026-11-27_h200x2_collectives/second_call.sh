#!/usr/bin/env bash
# Second 2 x H200 call: the cross-device buffer-check fix, the init/abort cycle test's GPU
# memory, send/recv through the copy engines, and the copy-engine collectives at 512 MiB.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
o=$OUT/b.log; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >>$o; timeout -k 5 $s "$@" >>$o 2>&1; echo "$n rc=$?" | tee -a $o; }
smi() { nvidia-smi --query-gpu=index,memory.used --format=csv,noheader | tr '\n' ' ' >>$o; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader >>$o; echo >>$o; }
smi
T groups 60 $r/tests/gpu_collectives --gtest_filter='CollectiveGroups.*'
for i in 1 2; do smi; T cycles$i 40 $r/tests/mp_comm --gtest_filter='Comm.Thousand*'; done
smi; T cycles_gpu0only 40 env CUDA_VISIBLE_DEVICES=0 $r/tests/mp_comm --gtest_filter='Comm.Thousand*'
P() { T "$1" "$2" env LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH $r/bin/ccl-run -n 2 -- "${@:3}"; }
for c in alltoall all_gather broadcast; do
  P ${c}_ce 40 $r/perf/${c}_perf -b 128M -e 1G -f 2 -R 2 --algo copy_engine --compare-nccl
done
P sendrecv_ce 50 env CCL_P2P_COPY_ENGINE=256K $r/perf/sendrecv_perf -b 1M -e 1G -f 4 -R 2 --compare-nccl
P sendrecv_ce_split50 40 env CCL_P2P_COPY_ENGINE=256K CCL_P2P_COPY_ENGINE_SHARE=50 $r/perf/sendrecv_perf -b 16M -e 1G -f 4 -R 2 --compare-nccl
echo "done [$(( $(date +%s) - t0 )) s]"
grep -E "^\[0\] +[0-9]{8,}|^===|check failed|FAILED|PASSED|OK \]" $o | cut -c1-200
