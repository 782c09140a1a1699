# SPDX-License-Identifier: Apache-2.0
# A private MPS daemon for ranks that share a GPU, so that their kernels run at once
# (docs/collectives.md, "Ranks sharing a GPU"). Sourced by scripts/gpu-check.sh and
# scripts/device-call-lib.sh.

# Starts it; non-zero (and the client variables unset) when it did not start.
mps_on() {
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/gicl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/gicl-mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if ! nvidia-cuda-mps-control -d; then
    echo "MPS daemon did not start" >&2
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    return 1
  fi
  sleep 1
}

mps_off() {
  echo quit | nvidia-cuda-mps-control
  sleep 1
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
}
