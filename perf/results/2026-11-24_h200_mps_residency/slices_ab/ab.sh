#!/usr/bin/env bash
# A/B of block slicing: old (element-wise) vs new (whole packs) libccl, same perf binaries.
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps_pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps_log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY $OUT/ab
nvidia-cuda-mps-control -d; sleep 1
D=$PWD/.devinst
for rep in 1 2; do
  for v in old new; do
    lib=$D/lib; [[ $v == old ]] && lib=$D/oldlib
    for n in 2 4; do
      for b in all_reduce reduce_scatter all_gather alltoall; do
        for R in 2 0; do
          LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH timeout 60 ccl-run -n $n -- ${b}_perf -b 4000000 -e 64000000 -f 2 -R $R -n 30 -w 5 > $OUT/ab/${b}_n${n}_R${R}_${v}_${rep}.txt 2>&1
        done
      done
    done
  done
done
echo quit | nvidia-cuda-mps-control
cd $OUT/ab && for f in *_1.txt; do g=${f%_1.txt}; echo "$g $(grep -E '^\[0\] +[0-9]' $f | awk '{printf "%s:%s/%s ",$2,$7,$10}') | $(grep -E '^\[0\] +[0-9]' ${g}_2.txt | awk '{printf "%s/%s ",$7,$10}')"; done
tar czf $OUT/ab.tgz -C $OUT ab
