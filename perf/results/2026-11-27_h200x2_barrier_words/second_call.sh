#!/usr/bin/env bash
# Twenty-seventh session, second 2 x H200 call: what the barrier-delimited (SIMPLE) direct kernels
# pay besides moving data. v0: the session's library (.devinst); v1: the entry barrier without its
# system fence (experiment only: the published windows are then unordered); v2: v1 and the end of
# the kernel without the fence before the epoch push. Alternated twice.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; tar xJf .devperf/exp.tar.xz -C /tmp
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s27b; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
P() { local n=$1 lib=$2; shift 2; T $n 60 env LD_LIBRARY_PATH=$lib:$nccl:$r/lib "$@"; }
R="$r/bin/ccl-run -n 2 --"
for rep in 1 2; do
  for v in v0 v1 v2; do
    lib=$r/lib; [[ $v != v0 ]] && lib=/tmp/$v
    P one_${v}_$rep $lib CCL_PROTO=SIMPLE CCL_ALGO=allreduce:one_shot $R $r/perf/all_reduce_perf -b 8 -e 256K -f 8 -R 2 -n 50 -w 10
    P two_${v}_$rep $lib CCL_ALGO=allreduce:two_shot $R $r/perf/all_reduce_perf -b 1M -e 16M -f 2 -R 2 -n 50 -w 10
    P ag_${v}_$rep $lib CCL_PROTO=SIMPLE $R $r/perf/all_gather_perf -b 1M -e 16M -f 2 -R 2 -n 50 -w 10
  done
done
P two_graph_v0 $r/lib CCL_ALGO=allreduce:two_shot $R $r/perf/all_reduce_perf -b 1M -e 16M -f 2 -R 2 -n 50 -w 10 -G 10 --compare-nccl
P ar_default_v0 $r/lib $R $r/perf/all_reduce_perf -b 1M -e 16M -f 2 -R 2 -n 50 -w 10 --compare-nccl
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s27b_logs.tar.xz -C /tmp s27b
cd $L
for f in one two ag; do
  echo "-- $f (size, v0 v1 v2 rep1, v0 v1 v2 rep2: oop us; wrong)"
  for t in v0_1 v1_1 v2_1 v0_2 v1_2 v2_2; do grep -E '^\[0\] +[0-9]+ ' ${f}_$t.log | sed 's/^\[0\] //' | awk '{print $1, $6, $9}' > /tmp/$t.t; done
  paste /tmp/v0_1.t /tmp/v1_1.t /tmp/v2_1.t /tmp/v0_2.t /tmp/v1_2.t /tmp/v2_2.t | awk '{printf "%9s %7s %7s %7s | %7s %7s %7s  w%s%s%s%s%s%s\n", $1, $2, $5, $8, $11, $14, $17, $3, $6, $9, $12, $15, $18}'
done
for f in two_graph_v0 ar_default_v0; do echo "-- $f (size, oop us, ip us, nccl us, ratio, enq)"; grep -E '^\[0\] +[0-9]+ ' $f.log | sed 's/^\[0\] //' | awk '{print $1, $6, $10, $(NF-3), $(NF-1), $NF}'; done
