#!/usr/bin/env bash
# The GPU check: runs every GPU test and benchmark that exists, writes full logs to $OUT (when
# set), and prints a short summary table last. Uses the bundle in .devinst/ when present
# (scripts/make-gpu-bundle.sh), else builds with scripts/setup.sh.
#   RANKS="2 4"   rank counts for the multi-process launches (default: 2 and 4)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# NVLink multicast must stay off on shared machines: never enable it here.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export CCL_SOCKET_IFNAME=${CCL_SOCKET_IFNAME:-lo}
out=${OUT:-/tmp/ccl-gpu-check}
mkdir -p "$out"
ranks=${RANKS:-2 4}

if [[ -d $root/.devinst/bin ]]; then
  bin=$root/.devinst/bin tests=$root/.devinst/tests perf=$root/.devinst/perf
  export LD_LIBRARY_PATH=$root/.devinst/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  "$root/scripts/setup.sh" || exit 1
  b=${CCL_BUILD_DIR:-$root/build}
  bin=$b/src/tools tests=$b/tests perf=$b/perf
fi

declare -a rows
run() {  # run NAME COMMAND...: logs to $out/NAME.log, records a summary row
  local name=$1; shift
  local t0=$(date +%s%N)
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  local secs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN{printf "%.1f", (b-a)/1e9}')
  local detail=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) \]' "$out/$name.log" | grep -v ' \] [A-Z].*\.' | tr '\n' ' ' | sed 's/  */ /g')
  rows+=("$(printf '%-34s %-7s %7ss  %s' "$name" "$([[ $rc == 0 ]] && echo ok || echo FAIL:$rc)" "$secs" "$detail")")
  return $rc
}

{
  echo "# $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi -L
  nvidia-smi topo -m
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
} >"$out/machine.txt" 2>&1
run ccl-info "$bin/ccl-info"
for t in "$tests"/gpu_*; do
  [[ -x $t ]] && run "$(basename "$t")" "$t"
done
for n in $ranks; do
  run "ccl-run-env-init-n$n" "$bin/ccl-run" -n "$n" --timeout 120 -- "$tests/env_rank"
done
[[ -x $tests/mp_comm ]] && run mp_comm "$tests/mp_comm"
for p in "$perf"/*_perf "$perf"/*_bw "$perf"/*_latency; do
  [[ -x $p ]] && run "$(basename "$p")" "$p"
done

echo
echo "== gpu-check summary ($(nvidia-smi -L 2>/dev/null | wc -l) GPU(s); logs in $out) =="
grep -E "GPUs:|^  [0-9]+: |P2P|RDMA devices|NICs:" "$out/ccl-info.log" | head -12
printf '%s\n' "${rows[@]}"
! printf '%s\n' "${rows[@]}" | grep -q ' FAIL:'
