#!/usr/bin/env bash
# Twenty-eighth session, sixth 2 x H200 call: reduce with LL128 forced at 2-8 MiB (4.5 MiB rows)
# against the table's choice (LL128 to 2 MiB of traffic, SIMPLE above), three runs each; the
# reduce sweep beside NCCL with the table.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo
r=$PWD/.devinst; export LD_LIBRARY_PATH=$r/lib
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
L=/tmp/s28f; mkdir -p $L; t0=$(date +%s)
T() { local n=$1 s=$2; shift 2; echo "=== $n [$(( $(date +%s) - t0 )) s]" >$L/$n.log
  timeout -k 5 $s "$@" >>$L/$n.log 2>&1; local rc=$?; echo "$n rc=$rc [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt; }
R="$r/bin/ccl-run -n 2 --"
for rep in 1 2 3; do
  T reduce_table$rep 60 $R $r/perf/reduce_perf -b 2M -e 8M -f 2 -R 2 -n 50 -w 10
  T reduce_ll128$rep 60 env CCL_PROTO=LL128 $R $r/perf/reduce_perf -b 2M -e 8M -f 2 -R 2 -n 50 -w 10
  T reduce_r1_ll128$rep 60 env CCL_PROTO=LL128 $R $r/perf/reduce_perf -b 4M -e 4M -r 1 -R 2 -n 50 -w 10
  T reduce_r1_table$rep 60 $R $r/perf/reduce_perf -b 4M -e 4M -r 1 -R 2 -n 50 -w 10
done
echo "done [$(( $(date +%s) - t0 )) s]" | tee -a $L/summary.txt
tar cJf $OUT/s28f_logs.tar.xz -C /tmp s28f
cd $L; head -8 reduce_table1.log | tail -3
t() { grep -E '^\[0\] +[0-9]+ ' $1 | sed 's/^\[0\] //' | awk '{print $1, $6, $7, $8, $9}'; }
for rep in 1 2 3; do echo "-- rep $rep: size | table: oop us, algbw, busbw, wrong | LL128 forced"; paste <(t reduce_table$rep.log) <(t reduce_ll128$rep.log); echo "root 1:"; paste <(t reduce_r1_table$rep.log) <(t reduce_r1_ll128$rep.log); done
