#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer harnesses of tests/fuzz/ with clang (ASan and UBSan on, the parsers under
# test compiled into each harness so that their coverage guides the search) and runs each for
# GICL_FUZZ_SECONDS (default 20) from its seed corpus (tests/fuzz/corpus/<name>; the topology
# loader's seeds are tests/data/). A crash, a sanitizer report or a harness's own check fails the
# script and leaves the input under $GICL_BUILD_DIR/fuzz/. Installs clang where it is missing.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GICL_BUILD_DIR:-$root/build}
seconds=${GICL_FUZZ_SECONDS:-20}
((seconds > 0)) || { echo "fuzz: GICL_FUZZ_SECONDS=0: skipped"; exit 0; }
probe='extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }'
if ! command -v clang++ >/dev/null ||
   ! echo "$probe" | clang++ -x c++ -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
  echo "fuzz: installing clang and its fuzzer runtime"
  if [[ $(id -u) -eq 0 ]]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang libclang-rt-dev >/dev/null 2>&1 ||
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang >/dev/null
fi
out=$build/fuzz
mkdir -p "$out/obj"
# gicl.h includes the CUDA runtime's header (types only; nothing here links CUDA): its folders are
# those CMake found for the build (written by the configure step), else the folder beside nvcc.
cuda_inc=()
if [[ -s $build/cuda_include_dirs.txt ]]; then
  IFS=';' read -r -a dirs <"$build/cuda_include_dirs.txt"
  for d in "${dirs[@]}"; do cuda_inc+=(-isystem "$d"); done
else
  nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
  cuda_inc=(-isystem "$(dirname "$(readlink -f "$nvcc")")/../include")
fi
if ! echo '#include <cuda_runtime_api.h>' | clang++ -x c++ -fsyntax-only "${cuda_inc[@]}" - 2>/dev/null; then
  echo "fuzz: cuda_runtime_api.h not found in ${cuda_inc[*]} (configure the build with scripts/setup.sh first)" >&2
  exit 1
fi
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined
       -fno-sanitize-recover=undefined -DGICL_HAVE_HWLOC
       -I"$root/src" -I"$root/include" -I"$root" -I"$root/tests" -I"$build/include" "${cuda_inc[@]}")
obj() {  # obj SOURCE: compiles a library source, instrumented, into $o
  o=$out/obj/$(echo "$1" | tr / _).o
  [[ $o -nt $root/$1 ]] || clang++ "${flags[@]}" -fsanitize=fuzzer-no-link -c "$root/$1" -o "$o"
}
common=(src/common/status.cc src/common/log.cc src/common/settings.cc)
declare -A srcs=(
  [bootstrap_wire]="src/common/socket.cc src/common/hmac.cc src/bootstrap/wire.cc src/bootstrap/auth.cc
    src/core/heartbeat.cc"
  [unique_id]="src/common/socket.cc src/bootstrap/wire.cc"
  [settings]=""
  [topology_xml]="src/topology/machine.cc"
  [nccl_config]="shim/nccl/config.cc"
)
failed=()
for name in bootstrap_wire unique_id settings topology_xml nccl_config; do
  objs=()
  for s in "${common[@]}" ${srcs[$name]}; do
    obj "$s"
    objs+=("$o")
  done
  bin=$out/fuzz_$name
  clang++ "${flags[@]}" -fsanitize=fuzzer "$root/tests/fuzz/fuzz_$name.cc" "${objs[@]}" \
    -lcrypto -lhwloc -o "$bin"
  work=$out/corpus_$name
  mkdir -p "$work"
  seeds=()
  [[ -d $root/tests/fuzz/corpus/$name ]] && seeds+=("$root/tests/fuzz/corpus/$name")
  [[ $name == topology_xml ]] && seeds+=("$root/tests/data")
  log=$out/fuzz_$name.log
  if (cd "$out" && LSAN_OPTIONS=suppressions=$root/tests/fuzz/lsan.supp "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "$work" "${seeds[@]}" >"$log" 2>&1); then
    echo "fuzz: $name: $(grep -E '^stat::number_of_executed_units' "$log" | tail -1 | awk '{print $2}') inputs in ${seconds} s, no finding"
  else
    echo "fuzz: $name: FAILED (log $log)"
    tail -40 "$log"
    failed+=("$name")
  fi
done
((${#failed[@]} == 0)) || { echo "fuzz: findings in ${failed[*]}"; exit 1; }
