# SPDX-License-Identifier: Apache-2.0
# Helpers for a script that runs a batch of GPU tests and benchmarks on a GPU machine (a bundle
# from scripts/make-gpu-bundle.sh in .devinst/): each step under a time limit, logs under one
# folder, a short table last. Not run by CI (no GPU there).
#
#   source scripts/device-call-lib.sh NAME   # logs in /tmp/NAME, a tarball of them in $OUT
#   T test_name 200 cmd...                   # a command with a timeout, its rc in summary.txt
#   P run_name LIBDIR cmd...                 # a benchmark against another libgicl (60 s)
#   mps_on / mps_off                         # an MPS daemon for ranks sharing a GPU (mps.sh)
#   rows LOG                                 # "size oop_us wrong" of rank 0's table
#   finish                                   # the tarball
#
# NVLink multicast stays off in every command: the machine's GPUs are shared.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export GICL_SOCKET_IFNAME=lo
CALL_NAME=${1:?call name}
r=$PWD/.devinst
L=/tmp/$CALL_NAME
mkdir -p "$L"
t0=$(date +%s)
export LD_LIBRARY_PATH=$r/lib
# NCCL for --compare-nccl: the pip wheel's library on the GPU machine.
nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])' 2>/dev/null)/lib
R="$r/bin/gicl-run -n 2 --"
X=$r/libexec/gicl  # the benchmarks

elapsed() { echo $(($(date +%s) - t0)); }

T() {
  local n=$1 s=$2
  shift 2
  echo "=== $n [$(elapsed) s]" >"$L/$n.log"
  timeout -k 5 "$s" "$@" >>"$L/$n.log" 2>&1
  local rc=$?
  echo "$n rc=$rc [$(elapsed) s]" | tee -a "$L/summary.txt"
}

P() {
  local n=$1 lib=$2
  shift 2
  T "$n" 60 env LD_LIBRARY_PATH="$lib:$nccl:$r/lib" "$@"
}

# mps_on / mps_off (scripts/mps.sh, shared with scripts/gpu-check.sh).
source "$PWD/scripts/mps.sh"

rows() { grep -E '^\[0\] +[0-9]+ ' "$1" | sed 's/^\[0\] //' | awk '{print $1, $6, $9}'; }

finish() {
  echo "done [$(elapsed) s]" | tee -a "$L/summary.txt"
  tar cJf "$OUT/${CALL_NAME}_logs.tar.xz" -C /tmp "$CALL_NAME"
}
