#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU check: runs every GPU test, example and benchmark that exists (benchmarks with NVSHMEM
# side by side when the machine has it), writes full logs to $OUT (when set), and prints a short
# summary last. Uses the bundle in .devinst/ when present (scripts/make-gpu-bundle.sh), else
# builds with scripts/setup.sh.
#   RANKS="2 4"      rank counts for the launcher jobs (default: 2, 3 and 4 on a machine with 4
#                    or more GPUs, else 2 and 4)
#   PERF_RANKS="2"   rank counts of the collective benchmarks' main sweeps, one rank per GPU
#                    (default: 2 up to the GPU count, at most 4)
#   PERF=0           skip the benchmarks
#   DEVICE_PERF=0    skip the device-API benchmarks (put_bw ... barrier_latency, the team collectives)
#   COLL_MAX=1G      largest size of the collective benchmarks
#   CROSSOVER=1      also sweep each allreduce/allgather/reduce-scatter algorithm alone, and LL128
#   TESTS='gpu_*'    which GPU test binaries to run
#   MPS=0            skip the tests of ranks sharing a GPU under MPS
#   ONLY='regex'     run only the jobs whose names match (e.g. 'sendrecv|alltoall'), to split the
#                    check into parts
#   JOB_TIMEOUT=S    stop any job still running after S seconds (its process group, so forked
#                    ranks too); its row reads FAIL:124 and the jobs after it still run
#   SANITIZE="memcheck racecheck synccheck"
#                    also run the GPU test binaries under compute-sanitizer with these tools (every
#                    forked rank too); a finding fails the row. Slow: narrow it with SANITIZE_FILTER
#   SANITIZE_FILTER  gtest filter of the sanitized runs (default: all but the residency, failure,
#                    kill-matrix and soak cases and the 3-, 4- and 8-rank ones); on fewer than 4
#                    GPUs, the network collectives' 4-rank cases also run under MPS
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# NVLink multicast must stay off on shared machines: never enable it here.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export GICL_SOCKET_IFNAME=${GICL_SOCKET_IFNAME:-lo}
out=${OUT:-/tmp/gicl-gpu-check}
mkdir -p "$out"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if ((gpus >= 4)); then ranks=${RANKS:-2 3 4}; else ranks=${RANKS:-2 4}; fi
perf_ranks=${PERF_RANKS:-$(seq -s ' ' 2 $((gpus < 2 ? 2 : gpus > 4 ? 4 : gpus)))}

if [[ ! -d $root/.devinst/bin && -f $root/.devpack/devinst.tar.xz ]]; then
  tar xJf "$root/.devpack/devinst.tar.xz" -C "$root" || exit 1
fi
if [[ -d $root/.devinst/bin ]]; then
  bin=$root/.devinst/bin tests=$root/.devinst/tests perf=$root/.devinst/libexec/gicl
  ex=$root/.devinst/examples
  export LD_LIBRARY_PATH=$root/.devinst/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  "$root/scripts/setup.sh" || exit 1
  b=${GICL_BUILD_DIR:-$root/build}
  bin=$b/src/tools tests=$b/tests perf=$b/perf ex=$b/examples
fi

declare -a rows
# The network suites' 4-rank cases: P2P off, and 2 "nodes" x 2 by host id.
net4() { echo "$1.FourRanksWithP2pDisabled:$1.TwoNodesOfTwoGpusByHostId"; }
job=""
# timeout(1) passes the TERM on to its job's whole group, forked ranks included.
trap '[[ -n $job ]] && kill -TERM "$job" 2>/dev/null; exit 143' TERM INT
run() {  # run NAME COMMAND...: logs to $out/NAME.log, records a summary row
  local name=$1; shift
  [[ -n ${ONLY:-} && ! $name =~ $ONLY ]] && return 0
  local t0=$(date +%s%N)
  local -a guard=()
  [[ -n ${JOB_TIMEOUT:-} ]] && guard=(timeout -k 10 "$JOB_TIMEOUT")
  # In the background, so that a TERM to this script reaches the job (trap below): a guarded
  # job is a process group of its own, which a signal to this script's group misses.
  "${guard[@]}" "$@" >"$out/$name.log" 2>&1 &
  job=$!
  wait "$job"
  local rc=$?
  job=""
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
run gicl-info "$bin/gicl-info"
for t in "$tests"/${TESTS:-gpu_*}; do
  [[ -x $t ]] && run "$(basename "$t")" "$t"
done
# Ranks sharing a GPU with MPS on run their kernels at once (docs/collectives.md, "Ranks sharing
# a GPU"): the residency test and the 4-rank matrix under a private MPS daemon. MPS=0 skips it.
if [[ ${MPS:-1} == 1 && -x $tests/gpu_collectives ]] && command -v nvidia-cuda-mps-control >/dev/null; then
  source "$root/scripts/mps.sh"
  if mps_on; then
    run gpu_collectives_mps_residency "$tests/gpu_collectives" --gtest_filter='CollectiveResidency.*'
    # Two ranks per GPU: 4 ranks (parameter /3) on 2 GPUs, 8 ranks (/4) on 4 or more.
    if ((gpus >= 4)); then
      run gpu_collectives_mps_8ranks "$tests/gpu_collectives" --gtest_filter='Ranks/Collectives.*/4'
    else
      run gpu_collectives_mps_4ranks "$tests/gpu_collectives" --gtest_filter='Ranks/Collectives.*/3'
      # The network suites' 4-rank cases, which skip without a GPU per rank when MPS is off.
      [[ -x $tests/gpu_device_api ]] && run gpu_device_api_mps_net_4ranks \
        "$tests/gpu_device_api" --gtest_filter="$(net4 NetworkDeviceApi)"
      run gpu_collectives_mps_net_4ranks "$tests/gpu_collectives" \
        --gtest_filter="$(net4 NetworkCollectives)"
    fi
    mps_off
  else
    rows+=("(MPS daemon did not start: the shared-GPU tests did not run)")
  fi
fi
# compute-sanitizer over the GPU suites: --target-processes all follows the ranks each test forks;
# --error-exitcode turns any finding into a failed row. racecheck and synccheck look at shared
# memory and barriers inside a block, memcheck at every global and shared access.
# --report-api-errors no: the argument checks' probes of host pointers (cuMemGetAddressRange) fail
# by design in the bad-argument cases, and gicl checks and reports every CUDA call itself.
# Left out by default: cases that time their own bounds (the residency, kill-matrix and soak runs,
# the copy agent's 2 s stop bound), which instrumentation outlasts, and the 3- to 8-rank matrices.
if [[ -n ${SANITIZE:-} ]]; then
  cs=(
    "$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
    --report-api-errors no --target-processes all --error-exitcode 99 --print-limit 20
  )
  for tool in $SANITIZE; do
    for t in "$tests"/${TESTS:-gpu_*}; do
      [[ -x $t ]] || continue
      run "sanitize_${tool}_$(basename "$t")" "${cs[@]}" --tool "$tool" \
        "$t" --gtest_filter="${SANITIZE_FILTER:--*Residency*:*Failures*:*KillMatrix*:*Soak*:*CannotLeave*:Ranks/*/2:Ranks/*/3:Ranks/*/4}"
    done
  done
  # 4 ranks where there are fewer GPUs: the network collectives' 4-rank cases under each tool, 4
  # processes under MPS, a hardware queue for each stream. The network device API's are left
  # out: there a rank's stream query or synchronize enters memcheck's callback and holds the
  # driver's lock while a kernel that waits for the proxy runs, and the proxy's next launch or
  # copy waits for that lock (docs/reliability.md, "Not yet").
  if ((gpus < 4)) && [[ ${MPS:-1} == 1 && -x $tests/gpu_collectives ]] &&
     command -v nvidia-cuda-mps-control >/dev/null; then
    source "$root/scripts/mps.sh"
    if mps_on; then
      for tool in $SANITIZE; do
        run "sanitize_${tool}_mps_gpu_collectives_net_4ranks" env CUDA_DEVICE_MAX_CONNECTIONS=8 \
          "${cs[@]}" --tool "$tool" "$tests/gpu_collectives" \
          --gtest_filter="$(net4 NetworkCollectives)"
      done
      mps_off
    else
      rows+=("(MPS daemon did not start: the 4-rank network collectives ran under no sanitizer)")
    fi
  fi
fi
# The network collectives' second message path (the outbox and the proxy's copier), which
# transports that register GPU memory take; gpu_collectives above ran the host FIFOs.
[[ -x $tests/gpu_collectives ]] && run gpu_collectives_net_outbox env GICL_NET_HOST_FIFOS=0 \
  "$tests/gpu_collectives" --gtest_filter='NetworkCollectives.*'
# The staged path without its copy agent: every copier step a copy or a kernel launched by the
# proxy thread (docs/transports.md, "The proxy thread and CUDA").
[[ -x $tests/gpu_collectives ]] && run gpu_collectives_net_no_agent env GICL_NET_COPY_AGENT=0 \
  "$tests/gpu_collectives" --gtest_filter='NetworkCollectives.*'
for n in $ranks; do
  run "gicl-run-env-init-n$n" "$bin/gicl-run" -n "$n" --timeout 120 -- "$tests/env_rank"
done
[[ -x $tests/mp_comm ]] && run mp_comm "$tests/mp_comm"
for e in "$ex"/example_*; do
  [[ -x $e ]] && run "$(basename "$e")" "$bin/gicl-run" -n 2 --timeout 120 -- "$e"
done
# The MoE example with its peer on the network path (libfabric's tcp;ofi_rxm on loopback). On one
# GPU its two ranks take turns (no copy agent there: docs/transports.md), and under MPS they run
# at once with one.
moe_net() {
  local name=$1
  run "$name" env GICL_P2P_DISABLE=1 GICL_NET=OFI GICL_OFI_PROVIDER='tcp;ofi_rxm' FI_TCP_IFACE=lo \
    "$bin/gicl-run" -n 2 --timeout 120 -- "$ex/example_moe_dispatch_combine"
}
if [[ -x $ex/example_moe_dispatch_combine ]]; then
  moe_net example_moe_dispatch_combine_net
  if ((gpus < 2)) && command -v nvidia-cuda-mps-control >/dev/null; then
    source "$root/scripts/mps.sh"
    if mps_on; then
      moe_net example_moe_dispatch_combine_net_mps
      mps_off
    else
      rows+=("(MPS daemon did not start: the MoE example on the network path under MPS did not run)")
    fi
  fi
fi

# Unmodified nccl-tests through gicl's libnccl.so.2 (LD_PRELOAD), one process per GPU under
# mpirun: built here from NCCL_TESTS_SRC (a checkout of NVIDIA/nccl-tests, by default
# .devpack/nccl-tests) against the NCCL wheel's nccl.h. A wrong value fails the job.
shim=$(dirname "$bin")/lib/gicl-nccl/libnccl.so.2
[[ -f $shim ]] || shim=$(dirname "$tests")/shim/libnccl.so.2
nt=${NCCL_TESTS_SRC:-$root/.devpack/nccl-tests}
if [[ -f $shim && -f $nt/Makefile ]] && command -v mpirun >/dev/null &&
   nc=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])' 2>/dev/null); then
  home=/tmp/gicl-ncclhome
  mkdir -p "$home/lib" && ln -sfn "$nc/include" "$home/include" &&
    ln -sf "$nc/lib/libnccl.so.2" "$home/lib/libnccl.so"
  if make -C "$nt" -j MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi NCCL_HOME="$home" \
       NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$out/nccl_tests_build.log" 2>&1; then
    nt_env=(env LD_PRELOAD="$shim" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$nc/lib" NCCL_DEBUG=VERSION)
    for n in $perf_ranks; do
      sfx=""; [[ $n != 2 ]] && sfx=_n$n
      for c in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter; do
        run "nccl_tests_$c$sfx" "${nt_env[@]}" mpirun --allow-run-as-root -np "$n" -x LD_PRELOAD \
          -x LD_LIBRARY_PATH -x NCCL_DEBUG -x GICL_SOCKET_IFNAME -x NCCL_NVLS_ENABLE \
          -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST \
          "$nt/build/${c}_perf" -b 8 -e 16M -f 8 -g 1 -c 1 -n 5 -w 2
      done
    done
    # Every type, and for the reductions every operation (PreMulSum included), on 2 ranks.
    for c in all_reduce reduce_scatter reduce all_gather broadcast alltoall sendrecv gather scatter; do
      ops=(); [[ $c == all_reduce || $c == reduce_scatter || $c == reduce ]] && ops=(-o all)
      run "nccl_tests_${c}_all_types" "${nt_env[@]}" mpirun --allow-run-as-root -np 2 -x LD_PRELOAD \
        -x LD_LIBRARY_PATH -x NCCL_DEBUG -x GICL_SOCKET_IFNAME -x NCCL_NVLS_ENABLE \
        -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST \
        "$nt/build/${c}_perf" -b 8 -e 1M -f 32 -d all "${ops[@]}" -g 1 -c 1 -n 2 -w 1
    done
    # Buffers registered (-R 1: ncclCommRegister) and as windows (-R 2: ncclCommWindowRegister).
    for reg in 1 2; do
      for c in all_reduce all_gather reduce_scatter alltoall; do
        run "nccl_tests_${c}_R$reg" "${nt_env[@]}" mpirun --allow-run-as-root -np 2 -x LD_PRELOAD \
          -x LD_LIBRARY_PATH -x NCCL_DEBUG -x GICL_SOCKET_IFNAME -x NCCL_NVLS_ENABLE \
          -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST \
          "$nt/build/${c}_perf" -b 8 -e 64M -f 8 -g 1 -c 1 -n 5 -w 2 -R "$reg"
      done
    done
    # Captured in CUDA graphs (-G), PreMulSum included.
    run nccl_tests_all_reduce_graph "${nt_env[@]}" mpirun --allow-run-as-root -np 2 -x LD_PRELOAD \
      -x LD_LIBRARY_PATH -x NCCL_DEBUG -x GICL_SOCKET_IFNAME -x NCCL_NVLS_ENABLE \
      -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST \
      "$nt/build/all_reduce_perf" -b 8 -e 16M -f 8 -g 1 -c 1 -n 5 -w 2 -G 5 -o mulsum
    # One process driving every GPU: from one thread (-g, communicators created in one group and
    # destroyed together) and from a thread per GPU (-t), eager and captured.
    for c in all_reduce all_gather sendrecv; do
      run "nccl_tests_${c}_g$gpus" "${nt_env[@]}" "$nt/build/${c}_perf" -b 8 -e 16M -f 8 -g "$gpus" -c 1 -n 5 -w 2
    done
    run "nccl_tests_all_reduce_t$gpus" "${nt_env[@]}" "$nt/build/all_reduce_perf" -b 8 -e 16M -f 8 -t "$gpus" -g 1 -c 1 -n 5 -w 2
    run "nccl_tests_all_reduce_t${gpus}_graph" "${nt_env[@]}" "$nt/build/all_reduce_perf" -b 8 -e 16M -f 8 -t "$gpus" -g 1 -c 1 -n 5 -w 2 -G 5 -o mulsum
  else
    rows+=("nccl-tests did not build (nccl_tests_build.log)")
  fi
fi

# PyTorch through gicl's libnccl.so.2 (LD_PRELOAD: PyTorch's RPATH points at its own NCCL):
# DDP training steps whose weights must match a run on NCCL's own library, and the
# torch.distributed collectives checked value by value (tests/torch/torch_nccl_shim.py).
tt=$root/tests/torch/torch_nccl_shim.py
if [[ -f $shim ]] && command -v torchrun >/dev/null && python3 -c 'import torch' 2>/dev/null; then
  for n in $(printf '%s\n' 2 "$gpus" | sort -un); do
    (( n > gpus )) && continue
    trun=(torchrun --standalone --nproc_per_node="$n")
    run "torch_ddp_nccl_n$n" "${trun[@]}" "$tt" ddp "$out/torch_ddp_nccl_n$n.pt"
    run "torch_ddp_gicl_n$n" env LD_PRELOAD="$shim" NCCL_DEBUG=VERSION "${trun[@]}" "$tt" ddp \
      "$out/torch_ddp_gicl_n$n.pt"
    run "torch_ddp_same_weights_n$n" python3 "$tt" compare "$out/torch_ddp_nccl_n$n.pt" \
      "$out/torch_ddp_gicl_n$n.pt"
    run "torch_collectives_gicl_n$n" env LD_PRELOAD="$shim" "${trun[@]}" "$tt" collectives
  done
fi

coll_perf=$perf  # the collective benchmarks are never rebuilt with NVSHMEM
if [[ ${PERF:-1} == 1 && ${DEVICE_PERF:-1} == 1 && -x $perf/put_bw ]]; then
  # The same benchmark sources with NVSHMEM columns, built here when NVSHMEM and nvcc exist.
  if command -v nvcc >/dev/null && python3 -c 'import nvidia.nvshmem' 2>/dev/null &&
     nvlib=$("$root/perf/device/build_nvshmem.sh" /tmp/gicl-perf-nvshmem 2>"$out/build_nvshmem.log" | tail -1); then
    perf=/tmp/gicl-perf-nvshmem
    export LD_LIBRARY_PATH=$nvlib:$LD_LIBRARY_PATH NVSHMEM_REMOTE_TRANSPORT=none
    export NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-6G}
    rows+=("(benchmarks built with NVSHMEM: $(basename "$(dirname "$nvlib")"))")
  else
    rows+=("(benchmarks without NVSHMEM columns; see build_nvshmem.log)")
  fi
  j=$out
  run put_bw "$bin/gicl-run" -n 2 -- "$perf/put_bw" -b 1M -e 1G -f 4 --json "$j/put_bw.json"
  run put_bw_bidir "$bin/gicl-run" -n 2 -- "$perf/put_bw" -b 1M -e 1G -f 4 --bidir --json "$j/put_bw_bidir.json"
  run put_bw_warp "$bin/gicl-run" -n 2 -- "$perf/put_bw" -b 1M -e 1G -f 32 --scope warp
  run put_bw_thread "$bin/gicl-run" -n 2 -- "$perf/put_bw" -b 1M -e 1G -f 32 --scope thread
  run get_bw "$bin/gicl-run" -n 2 -- "$perf/get_bw" -b 1M -e 1G -f 4 --json "$j/get_bw.json"
  run p_bw "$bin/gicl-run" -n 2 -- "$perf/p_bw" -b 1M -e 16M -f 4
  run g_bw "$bin/gicl-run" -n 2 -- "$perf/g_bw" -b 1M -e 16M -f 4
  run put_latency "$bin/gicl-run" -n 2 -- "$perf/put_latency" -b 8 -e 64K -f 8
  run signal_latency "$bin/gicl-run" -n 2 -- "$perf/signal_latency"
  run atomic_rate "$bin/gicl-run" -n 2 -- "$perf/atomic_rate"
  run barrier_latency "$bin/gicl-run" -n 2 -- "$perf/barrier_latency"
  # The device API to a peer on the network path (libfabric's tcp;ofi_rxm on loopback): one-way
  # latencies of a signal, a put with signal, a barrier; gets, p, g and atomics through the proxy.
  # gicl's own builds: an NVSHMEM column would be NVLink's.
  for b in signal_latency put_latency barrier_latency get_bw p_bw g_bw atomic_rate; do
    args=()
    [[ $b == put_latency ]] && args=(-b 8 -e 512K -f 8)
    [[ $b == get_bw ]] && args=(-b 8 -e 1M -f 8 -c 1)
    [[ $b == p_bw || $b == g_bw || $b == atomic_rate ]] && args=(-b 4K -e 16K -f 4 -c 8 -t 256 -n 5 -w 1 -r 3)
    run ${b}_net env GICL_P2P_DISABLE=1 GICL_NET=OFI GICL_OFI_PROVIDER='tcp;ofi_rxm' FI_TCP_IFACE=lo \
      "$bin/gicl-run" -n 2 -- "$coll_perf/$b" "${args[@]}"
  done
  # The network proxy's queue alone: descriptors/s from GPU threads and warps into one ring.
  [[ -x $perf/queue_rate ]] && run queue_rate "$perf/queue_rate" --json "$j/queue_rate.json"
  [[ -x $perf/queue_rate ]] && run queue_rate_warp "$perf/queue_rate" --warp -c 8,32,132,264 -n 2048
  # The transport alone between two processes (tcp;ofi_rxm on loopback), by endpoint count.
  [[ -x $coll_perf/transport_bw ]] && run transport_bw "$coll_perf/transport_bw" -E 1,2,4,8
  # Device-side team collectives (one CTA) beside NVSHMEM's; NVSHMEM's block reduce-scatter needs
  # more scratch than its default at 512 KiB.
  for b in reduction_latency reducescatter_latency fcollect_latency bcast_latency alltoall_latency; do
    run $b env NVSHMEM_REDUCE_SCRATCH_SIZE=67108864 "$bin/gicl-run" -n 2 -- "$perf/$b" -b 8 -e 1M -f 4 --json "$j/$b.json"
  done
  run reduction_latency_warp "$bin/gicl-run" -n 2 -- "$perf/reduction_latency" -b 8 -e 1M -f 4 --scope warp
  # Completion::kLocal (NVSHMEM's contract) for the data-movement ones.
  for b in fcollect_latency bcast_latency alltoall_latency; do
    run ${b}_local "$bin/gicl-run" -n 2 -- "$perf/$b" -b 8 -e 1M -f 4 --local
  done
fi

if [[ ${PERF:-1} == 1 && -x $coll_perf/all_reduce_perf ]]; then
  # NCCL side by side (loaded at run time from the Python environment's NCCL, if any), the faster
  # of its symmetric-window and cudaMalloc configurations per size; gicl on symmetric buffers (-R 2), and
  # on cudaMalloc buffers registered (-R 1) and staged (-R 0).
  nccl_lib=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])' 2>/dev/null)/lib
  cmp=""; [[ -e $nccl_lib/libnccl.so.2 ]] && cmp="--compare-nccl"
  crunn() { local name=$1 n=$2; shift 2; run "$name" env LD_LIBRARY_PATH="$nccl_lib:$LD_LIBRARY_PATH" "$bin/gicl-run" -n "$n" -- "$@"; }
  crun() { local name=$1; shift; crunn "$name" 2 "$@"; }
  top=${COLL_MAX:-1G}
  for n in $perf_ranks; do
    sfx=""; [[ $n != 2 ]] && sfx=_n$n
    for c in all_reduce reduce_scatter all_gather broadcast reduce alltoall sendrecv; do
      [[ $c == sendrecv && $n != 2 ]] && continue  # a ring of pairs: 2 ranks say it all
      crunn ${c}_perf$sfx "$n" "$coll_perf/${c}_perf" -b 8 -e "$top" -f 2 -R 2 $cmp --json "$out/${c}_perf$sfx.json"
    done
  done
  crun all_reduce_perf_graph "$coll_perf/all_reduce_perf" -b 8 -e 1M -f 2 -R 2 -G 1 $cmp --json "$out/all_reduce_perf_graph.json"
  # Steady state: the graph's upload at its first launch spread over 10 launches.
  crun all_reduce_perf_graph10 "$coll_perf/all_reduce_perf" -b 8 -e 1M -f 2 -R 2 -G 10 $cmp --json "$out/all_reduce_perf_graph10.json"
  # cudaMalloc buffers, staged: push mode (allreduce, reduce_scatter, alltoall), copy in (the
  # others), in pieces beyond GICL_COLL_SCRATCH_SIZE.
  for c in all_reduce reduce_scatter alltoall all_gather broadcast; do
    crun ${c}_perf_malloc "$coll_perf/${c}_perf" -b 8 -e 256M -f 4 -R 0 $cmp
  done
  crun all_reduce_perf_registered "$coll_perf/all_reduce_perf" -b 8 -e 256M -f 4 -R 1 $cmp
  crun all_gather_perf_registered "$coll_perf/all_gather_perf" -b 8 -e 256M -f 4 -R 1 $cmp
  crun sendrecv_perf_registered "$coll_perf/sendrecv_perf" -b 8 -e 256M -f 4 -R 1 $cmp
  # Several GPUs driven by one thread (-g: grouped rounds, captured together), with the paths
  # that meet on the host first (check mode, the copy-engine exchange); correctness (-c 1).
  run all_reduce_perf_g2 "$coll_perf/all_reduce_perf" -g 2 -b 8 -e 64M -f 8 -R 2 -c 1
  run all_reduce_perf_g2_check env GICL_CHECK_MODE=1 "$coll_perf/all_reduce_perf" -g 2 -b 8 -e 1M -f 16 -c 1
  run all_gather_perf_g2_ce_graph "$coll_perf/all_gather_perf" -g 2 -b 1M -e 64M -f 4 -R 2 --algo copy_engine -c 1 -G 5
  run sendrecv_perf_g2 "$coll_perf/sendrecv_perf" -g 2 -b 8 -e 64M -f 8 -c 1
  # Every type, reduction and root through the harness's checks (nccl-tests' -d/-o/-r all), and
  # grouped calls (-m).
  crun all_reduce_perf_alltypes "$coll_perf/all_reduce_perf" -b 8 -e 4M -f 32 -R 2 -n 5 -w 2 -d all -o all -c 2
  crun reduce_perf_allroots "$coll_perf/reduce_perf" -b 8 -e 4M -f 32 -R 0 -n 5 -w 2 -d all -o all -r all
  crun sendrecv_perf_agg "$coll_perf/sendrecv_perf" -b 8 -e 64M -f 8 -R 2 -m 8 $cmp
  # Alltoall made of grouped gicl_send/gicl_recv beside NCCL's (as nccl-tests runs it), alone and
  # 40 calls a group (160 operations: several batches and launches).
  crun alltoall_perf_p2p "$coll_perf/alltoall_perf" --p2p -b 8 -e 256M -f 4 -R 2 $cmp
  crun alltoall_perf_p2p_agg "$coll_perf/alltoall_perf" --p2p -b 8 -e 16M -f 8 -R 2 -m 40 -c 2 $cmp
  run launch_floor_perf env LD_LIBRARY_PATH="$nccl_lib:$LD_LIBRARY_PATH" "$coll_perf/launch_floor_perf" $cmp
  # Communicator init, split and destroy beside NCCL's (the process's first init separately).
  crun comm_init_perf "$coll_perf/comm_init_perf" -r 10 $cmp
  # The copy-engine collectives, forced: they win from 256 MiB on 2 x H200 but exchange windows on
  # the host at each eager call, so the tuner never picks them (docs/collectives.md).
  for c in alltoall all_gather broadcast; do
    crun ${c}_perf_ce "$coll_perf/${c}_perf" -b 1M -e 1G -f 4 -R 2 --algo copy_engine $cmp
    crun ${c}_perf_ce_graph "$coll_perf/${c}_perf" -b 1M -e 1G -f 4 -R 2 -G 10 --algo copy_engine $cmp
  done
  # Allgather as send/recv (forced: the tuner takes it only for two ranks from 256 MiB), on
  # symmetric and on cudaMalloc buffers, where its receives go through the FIFOs.
  crun all_gather_perf_send_recv "$coll_perf/all_gather_perf" -b 1M -e 1G -f 4 -R 2 --algo send_recv $cmp
  crun all_gather_perf_send_recv_malloc "$coll_perf/all_gather_perf" -b 1M -e 1G -f 4 -R 0 --algo send_recv
  # Alltoall by the SM kernel (forced) beside the tuner's send_recv from 256 MiB, on cudaMalloc
  # buffers too.
  crun alltoall_perf_direct "$coll_perf/alltoall_perf" -b 64M -e 1G -f 2 -R 2 --algo direct $cmp
  crun alltoall_perf_malloc_direct "$coll_perf/alltoall_perf" -b 64M -e 1G -f 2 -R 0 --algo direct
  crun alltoall_perf_malloc_send_recv "$coll_perf/alltoall_perf" -b 64M -e 1G -f 2 -R 0 --algo send_recv
  # Send/recv through the copy-engine proxy at every size, and through the SMs alone, around the
  # default's crossover (GICL_P2P_COPY_ENGINE=128M).
  crun sendrecv_perf_sm env GICL_P2P_COPY_ENGINE=0 "$coll_perf/sendrecv_perf" -b 16M -e 1G -f 2 -R 2 $cmp
  crun sendrecv_perf_ce env GICL_P2P_COPY_ENGINE=256K "$coll_perf/sendrecv_perf" -b 256K -e 1G -f 2 -R 2 $cmp
  crun sendrecv_perf_ce_graph env GICL_P2P_COPY_ENGINE=256K "$coll_perf/sendrecv_perf" -b 256K -e 1G -f 2 -R 2 -G 10 $cmp
  # Copy engine and SMs on one send at once (GICL_P2P_COPY_ENGINE_SHARE percent to the copy engine).
  for share in 25 50 75; do
    crun sendrecv_perf_ce_split$share env GICL_P2P_COPY_ENGINE=256K GICL_P2P_COPY_ENGINE_SHARE=$share "$coll_perf/sendrecv_perf" -b 1M -e 1G -f 4 -R 2 $cmp
  done
  if [[ ${CROSSOVER:-0} == 1 ]]; then
    # Crossover points of the tuner's table: each algorithm alone over the same sweep.
    for a in allreduce:one_shot allreduce:two_shot ring recursive_doubling rabenseifner; do
      crun "all_reduce_${a#allreduce:}" "$coll_perf/all_reduce_perf" -b 8 -e 256M -f 4 -R 2 --algo "$a"
    done
    # LL128 (never picked by the tuner until measured) beside the table's choice and NCCL.
    for c in all_reduce all_gather reduce_scatter broadcast alltoall; do
      crun "${c}_ll128" env GICL_PROTO=LL128 GICL_ALGO=allreduce:one_shot "$coll_perf/${c}_perf" -b 256K -e 8M -f 2 -R 2 $cmp
    done
    # Allreduce 1-16 MiB (the 1.3 x target missed at 2-4 MiB): channel count against algorithm
    # and protocol, to set the table's blocks there.
    for nc in 8 16 24 32 48 64; do
      crun "all_reduce_two_shot_nc$nc" env GICL_NCHANNELS=$nc "$coll_perf/all_reduce_perf" -b 1M -e 16M -f 2 -R 2 --algo allreduce:two_shot
      crun "all_reduce_ll128_nc$nc" env GICL_NCHANNELS=$nc GICL_PROTO=LL128 "$coll_perf/all_reduce_perf" -b 1M -e 4M -f 2 -R 2 --algo allreduce:one_shot
    done
    for a in allgather:direct allgather:ring reduce_scatter:direct reduce_scatter:ring; do
      c=${a%%:*}; b=${c/allgather/all_gather}
      crun "${b}_${a#*:}" "$coll_perf/${b}_perf" -b 1K -e 256M -f 8 -R 2 --algo "$a"
    done
  fi
fi

# column(1) is not on every machine (bsdextrautils): aligned when it is, plain otherwise.
tabulate() { if command -v column >/dev/null; then column -t; else cat; fi; }
echo
echo "== gpu-check summary ($(nvidia-smi -L 2>/dev/null | wc -l) GPU(s); logs in $out) =="
[[ -f $out/gicl-info.log ]] && grep -E "GPUs:|^  [0-9]+: |P2P|RDMA devices|NICs:" "$out/gicl-info.log" | head -12
for b in put_bw put_bw_bidir put_bw_warp put_bw_thread get_bw p_bw g_bw put_latency signal_latency atomic_rate barrier_latency \
    reduction_latency reducescatter_latency fcollect_latency bcast_latency alltoall_latency reduction_latency_warp \
    fcollect_latency_local bcast_latency_local alltoall_latency_local \
    signal_latency_net put_latency_net barrier_latency_net get_bw_net p_bw_net g_bw_net \
    atomic_rate_net; do
  [[ -f $out/$b.log ]] && grep -E '^\[0\] ( *[0-9]+ |#)' "$out/$b.log" | sed 's/^\[0\] //'
done
for f in "$out"/*_perf*.log "$out"/all_reduce_*.log "$out"/all_gather_*.log "$out"/reduce_scatter_*.log; do
  [[ -f $f ]] || continue
  echo "-- $(basename "$f" .log)"
  # Rank 0's rows ("[0] " under gicl-run; unprefixed from a -g run).
  grep -E '^(\[0\] )?( *[0-9]+ )' "$f" | sed 's/^\[0\] //' | awk '{printf "%s %s %s %s %s\n", $1, $6, $8, $9, $(NF-3) " " $(NF-1)}' | tabulate | head -40
done | awk '!seen[$0]++'
printf '%s\n' "${rows[@]}"
! printf '%s\n' "${rows[@]}" | grep -q ' FAIL:'
