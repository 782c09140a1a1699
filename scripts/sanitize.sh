#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the CPU tests with ASan and UBSan (GCC; in $GICL_SANITIZE_DIR, default build-asan/) and
# runs the unit and multi-process tests under them: a sanitizer report or a UBSan finding fails
# the test. Two multi-process tests stay out, as their parents run threads beside the ranks they
# fork, which GCC's ASan allocator does not survive (a rank may inherit its lock held):
# mp_bootstrap_hostile (its scanner and squatter threads) and mp_nccl_shim (the NCCL library makes
# its ids with a root thread in the test process). The others take their ids from
# tests/mp/fork_ranks.hpp's child_root_id. GICL_SANITIZE=0 skips it all.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ ${GICL_SANITIZE:-1} == 0 ]] && { echo "sanitize: GICL_SANITIZE=0: skipped"; exit 0; }
dir=${GICL_SANITIZE_DIR:-$root/build-asan}
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGICL_WITH_MPI=OFF \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_CUDA_FLAGS="-Xcompiler=-fsanitize=address,-fsanitize=undefined,-fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
select='^(unit_|mp_)'
skip='mp_bootstrap_hostile|mp_nccl_shim'
mapfile -t targets < <(ctest --test-dir "$dir" -N -L cpu | awk '/Test +#/ {print $3}' |
  grep -E "$select" | grep -vE "$skip")
cmake --build "$dir" -j "${GICL_BUILD_JOBS:-$(nproc)}" --target gicl-info gicl-run "${targets[@]}"
# protect_shadow_gap=0: the CUDA runtime maps memory where ASan's shadow gap would be.
# Leaks are not checked: ranks that exit on purpose without destroying their communicator leak.
export ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0:quarantine_size_mb=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$dir"
ctest --output-on-failure --timeout 900 -j "${GICL_TEST_JOBS:-2}" -L cpu -R "$select" -E "$skip"
