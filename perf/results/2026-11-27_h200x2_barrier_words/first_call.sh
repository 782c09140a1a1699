#!/usr/bin/env bash
# Twenty-seventh session, first 2 x H200 call: LL128 with two line groups in flight per warp and
# rows of up to 8 MiB (NEW, .devinst) against the session's starting library (OLD), alternated;
# then the 1- and 2-rank GPU matrices on NEW.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; tar xJf .devperf/old.tar.xz -C /tmp
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s27a; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
# P NAME LIB ENV... -- BINARY ARGS
P() { local n=$1 lib=$2; shift 2; T $n 60 env LD_LIBRARY_PATH=$lib:$nccl:$r/lib "$@"; }
R="$r/bin/ccl-run -n 2 --"
for rep in 1 2; do
  for v in old new; do
    lib=$r/lib; [[ $v == old ]] && lib=/tmp/old
    P ar_ll128_${v}$rep $lib CCL_PROTO=LL128 CCL_ALGO=allreduce:one_shot $R $r/perf/all_reduce_perf -b 256K -e 8M -f 2 -R 2 -n 50 -w 10 --compare-nccl
    P ar_default_${v}$rep $lib $R $r/perf/all_reduce_perf -b 256K -e 16M -f 2 -R 2 -n 50 -w 10 --compare-nccl
    P ag_ll128_${v}$rep $lib CCL_PROTO=LL128 $R $r/perf/all_gather_perf -b 1M -e 16M -f 2 -R 2 -n 50 -w 10 --compare-nccl
    P rs_ll128_${v}$rep $lib CCL_PROTO=LL128 $R $r/perf/reduce_scatter_perf -b 1M -e 16M -f 2 -R 2 -n 50 -w 10 --compare-nccl
    P ar_bf16_ll128_${v}$rep $lib CCL_PROTO=LL128 CCL_ALGO=allreduce:one_shot $R $r/perf/all_reduce_perf -b 256K -e 8M -f 2 -R 2 -n 50 -w 10 -d bfloat16 --compare-nccl
  done
done
T ranks_1_2 150 env LD_LIBRARY_PATH=$r/lib $r/tests/gpu_collectives --gtest_filter='Ranks/Collectives.*/0:Ranks/Collectives.*/1'
T failures 90 env LD_LIBRARY_PATH=$r/lib $r/tests/gpu_collectives --gtest_filter='CollectiveFailures.*'
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s27a_logs.tar.xz -C /tmp s27a
cd $L; grep -hE '^\[  (PASSED|FAILED) |^\[  FAILED  \]' ranks_1_2.log failures.log
for f in ar_ll128 ar_default ag_ll128 rs_ll128 ar_bf16_ll128; do
  echo "-- $f (size, old1 new1 old2 new2 oop us, nccl us)"
  for v in old1 new1 old2 new2; do grep -E '^\[0\] +[0-9]+ ' ${f}_$v.log | sed 's/^\[0\] //' | awk '{print $1, $6, $9, $(NF-3)}' > /tmp/$v.t; done
  paste /tmp/old1.t /tmp/new1.t /tmp/old2.t /tmp/new2.t | awk '{printf "%9s %7s %7s %7s %7s  w%s%s%s%s  nccl %s\n", $1, $2, $6, $10, $14, $3, $7, $11, $15, $4}'
done
