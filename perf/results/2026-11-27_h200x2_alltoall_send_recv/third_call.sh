#!/usr/bin/env bash
# Twenty-sixth session, third 2 x H200 call: (1) self pairs beside SM sends in the kernel (A, HEAD)
# against a local copy first (B: libccl with that change undone), alltoall --p2p 256 KiB-16 MiB,
# alternated; (2) the copy-engine proxy from 32 MiB against the 256 MiB default, 32-512 MiB.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
mkdir -p /tmp/libB && tar xJf .devperf/libB.tar.xz -C /tmp && B=/tmp/libB
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s26c; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 s=$2; shift 2; T $n $s env LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH $r/bin/ccl-run -n 2 -- "$@"; }
PB() { local n=$1 s=$2; shift 2; T $n $s env LD_LIBRARY_PATH=$nccl:$B:$LD_LIBRARY_PATH $r/bin/ccl-run -n 2 -- "$@"; }
for i in 1 2; do
  P p2p_A$i 60 $r/perf/alltoall_perf --p2p -b 256K -e 16M -f 2 -R 2 --compare-nccl
  PB p2p_B$i 60 $r/perf/alltoall_perf --p2p -b 256K -e 16M -f 2 -R 2 --compare-nccl
done
for c in sendrecv broadcast all_gather alltoall; do
  P ${c}_ce256 60 $r/perf/${c}_perf -b 32M -e 512M -f 2 -R 2 --compare-nccl
  P ${c}_ce32 60 env CCL_P2P_COPY_ENGINE=32M $r/perf/${c}_perf -b 32M -e 512M -f 2 -R 2 --compare-nccl
done
P broadcast_ce32_malloc 60 env CCL_P2P_COPY_ENGINE=32M $r/perf/broadcast_perf -b 32M -e 512M -f 2 -R 0
P all_gather_ce32_malloc 60 env CCL_P2P_COPY_ENGINE=32M $r/perf/all_gather_perf -b 32M -e 512M -f 2 -R 0
P alltoall_ce32_malloc 60 env CCL_P2P_COPY_ENGINE=32M $r/perf/alltoall_perf -b 32M -e 512M -f 2 -R 0
P all_gather_malloc 60 $r/perf/all_gather_perf -b 32M -e 512M -f 2 -R 0
P alltoall_malloc 60 $r/perf/alltoall_perf -b 32M -e 512M -f 2 -R 0
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s26c_logs.tar.xz -C /tmp s26c
cd $L
for f in p2p_A1 p2p_B1 p2p_A2 p2p_B2 sendrecv_ce256 sendrecv_ce32 broadcast_ce256 broadcast_ce32 all_gather_ce256 all_gather_ce32 alltoall_ce256 alltoall_ce32 broadcast_ce32_malloc all_gather_ce32_malloc all_gather_malloc alltoall_ce32_malloc alltoall_malloc; do
  echo "-- $f"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{print $1, $6, $8, $10, $12, $(NF-3), $(NF-1)}'; done
