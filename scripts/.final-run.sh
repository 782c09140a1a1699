export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CCL_SOCKET_IFNAME=lo CCL_DEBUG=NONE
export LD_LIBRARY_PATH=$PWD/.devinst/lib; T=.devinst/tests; P=.devinst/perf; R=.devinst/bin/ccl-run
NL=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib
o=$OUT; s=$o/summary.txt
t() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" > $o/$n.log 2>&1; echo "$n rc=$? $((SECONDS-t0))s" >> $s; }
t coll_n2 40 $T/gpu_collectives --gtest_filter=*/0
t devcoll 20 $T/gpu_device_coll
for c in all_reduce reduce_scatter all_gather broadcast reduce alltoall sendrecv; do
 t ${c}_perf 25 env LD_LIBRARY_PATH=$NL:$LD_LIBRARY_PATH $R -n 2 -- $P/${c}_perf -b 8 -e 512M -f 8 -R 1 --compare-nccl --json $o/${c}.json
done
t ar_graph 15 env LD_LIBRARY_PATH=$NL:$LD_LIBRARY_PATH $R -n 2 -- $P/all_reduce_perf -b 8 -e 512K -f 8 -R 1 -G 1 --compare-nccl --json $o/ar_graph.json
cat $s; grep -h "check failed\|FAILED\|OK \]" $o/coll_n*.log $o/devcoll.log | head -8
cd $o && tar czf r.tgz *.log *.json && rm -f *.log *.json
