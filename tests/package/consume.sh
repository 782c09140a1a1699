#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds four out-of-tree consumers against an installed (and moved) gicl, once with
# find_package and once with pkg-config: a C11 host program (-Wall -Wextra -pedantic -Werror), a
# C++20 program on gicl.hpp, a CUDA kernel on the device API and an MPI program. Runs what needs
# no GPU, builds the installed examples, and runs the installed gicl-info and a benchmark's -h.
# usage: consume.sh PREFIX SOURCE_DIR WORK_DIR NVCC
set -euo pipefail
prefix=$1 src=$2 work=$3 nvcc=$4
consumer=$src/tests/package/consumer
rm -rf "$work"
mkdir -p "$work/pc"
mpirun_2() { mpirun --allow-run-as-root --oversubscribe -np 2 "$@"; }

echo "== find_package(gicl)"
cmake -S "$consumer" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CUDA_COMPILER="$nvcc" >/dev/null
cmake --build "$work/cmake"
"$work/cmake/host_c"
"$work/cmake/host_cpp"
"$work/cmake/device_kernel"
[[ -x $work/cmake/mpi_c ]] && mpirun_2 "$work/cmake/mpi_c"

echo "== pkg-config gicl"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
gcc -std=c11 -Wall -Wextra -pedantic -Werror "$consumer/host_c.c" -o "$work/pc/host_c" \
  $(pkg-config --cflags --libs gicl)
g++ -std=c++20 -Wall -Wextra -Werror "$consumer/host_cpp.cpp" -o "$work/pc/host_cpp" \
  $(pkg-config --cflags --libs gicl)
"$nvcc" -std=c++20 -arch=sm_90 "$consumer/device_kernel.cu" -o "$work/pc/device_kernel" \
  $(pkg-config --cflags --libs gicl)
if pkg-config --exists gicl_mpi; then
  mpicc "$consumer/mpi_c.c" -o "$work/pc/mpi_c" $(pkg-config --cflags --libs gicl_mpi)
fi
export LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$work/pc/host_c"
"$work/pc/host_cpp"
"$work/pc/device_kernel"
[[ -x $work/pc/mpi_c ]] && mpirun_2 -x LD_LIBRARY_PATH "$work/pc/mpi_c"
unset LD_LIBRARY_PATH

echo "== installed examples, tools and benchmarks"
cmake -S "$prefix/share/gicl/examples" -B "$work/examples" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_COMPILER="$nvcc" >/dev/null
cmake --build "$work/examples"
"$prefix/bin/gicl-info" >"$work/info.txt"
grep -q "^gicl [0-9]" "$work/info.txt"
"$prefix/libexec/gicl/all_reduce_perf" -h | grep -q "^usage: "
"$prefix/bin/gicl-run" -n 2 -- "$prefix/libexec/gicl/all_reduce_perf" -h >/dev/null
echo "consume: four consumers built with find_package and with pkg-config, and run; examples built"
