#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the CPU tests under sanitizers (GCC) and runs them; a sanitizer report fails the test:
# - ASan and UBSan ($GICL_SANITIZE_DIR, default build-asan/): the unit and multi-process tests;
# - TSan (build-tsan/ beside it): the multi-process tests, whose ranks run the library's threads
#   (peer watch, proxy, endpoint threads, acceptor) beside the caller's.
# mp_bootstrap_hostile stays out: its scanner and squatter threads run beside the ranks it forks,
# which neither sanitizer's runtime survives (a rank may inherit a lock held). The others take
# their ids from tests/mp/fork_ranks.hpp's child_root_id or child_made_id, whose roots run in a
# child. GICL_SANITIZE=0 skips it all; GICL_SANITIZE=asan or =tsan runs one.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
which=${GICL_SANITIZE:-1}
[[ $which == 0 ]] && { echo "sanitize: GICL_SANITIZE=0: skipped"; exit 0; }
asan_dir=${GICL_SANITIZE_DIR:-$root/build-asan}
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}  # the compiler scripts/setup.sh uses
skip='mp_bootstrap_hostile'

# sanitized DIR SANITIZERS SELECT: configures DIR with -fsanitize=SANITIZERS, builds the CPU tests
# matching SELECT (less $skip) and runs them.
sanitized() {
  local dir=$1 san=$2 select=$3
  local cflags="-fsanitize=$san -fno-omit-frame-pointer"
  [[ $san == *undefined* ]] && cflags+=" -fno-sanitize-recover=undefined"
  # nvcc's -Xcompiler splits at commas: one -fsanitize= per sanitizer for the host compiler.
  local host="-Xcompiler=-fsanitize=${san//,/,-fsanitize=},-fno-omit-frame-pointer"
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGICL_WITH_MPI=OFF \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CXX_FLAGS="$cflags" \
    -DCMAKE_CUDA_FLAGS="$host" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$san" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=$san" >/dev/null
  local targets
  mapfile -t targets < <(ctest --test-dir "$dir" -N -L cpu | awk '/Test +#/ {print $3}' |
    grep -E "$select" | grep -vE "$skip")
  cmake --build "$dir" -j "${GICL_BUILD_JOBS:-$(nproc)}" --target gicl-info gicl-run "${targets[@]}"
  (cd "$dir" &&
     ctest --output-on-failure --timeout 900 -j "${GICL_TEST_JOBS:-2}" -L cpu -R "$select" -E "$skip")
}

if [[ $which == 1 || $which == asan ]]; then
  # protect_shadow_gap=0: the CUDA runtime maps memory where ASan's shadow gap would be.
  # Leaks are not checked: ranks that exit on purpose without destroying their communicator leak.
  ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0:quarantine_size_mb=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    sanitized "$asan_dir" address,undefined '^(unit_|mp_)'
fi
if [[ $which == 1 || $which == tsan ]]; then
  # A report fails the rank that makes it (exit code 66), and so the test. Threads left running
  # are not reported: ranks that exit on purpose without destroying their communicator leave
  # them, as do roots made inside a rank.
  TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:report_thread_leaks=0:history_size=7:suppressions=$root/tests/tsan.supp" \
    sanitized "$(dirname "$asan_dir")/build-tsan" thread '^mp_'
fi
