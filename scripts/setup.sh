#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what gicl needs on Debian 12 / Ubuntu 24.04 (apt-get), then configures and builds into
# $GICL_BUILD_DIR (default: build/). Safe to run again: it installs only what is missing.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GICL_BUILD_DIR:-$root/build}

packages=(cmake ninja-build g++ pkg-config libhwloc-dev libfabric-dev libibverbs-dev
          libopenmpi-dev openmpi-bin libgtest-dev libssl-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then sudo=""; elif command -v sudo >/dev/null; then sudo="sudo"; else
    echo "setup: missing packages (${missing[*]}) and no root or sudo to install them" >&2
    exit 1
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

nvcc=${CUDACXX:-}
[[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
[[ -z $nvcc ]] && nvcc=$(command -v nvcc || true)
if [[ -z $nvcc ]]; then
  echo "setup: no CUDA compiler: install the CUDA toolkit (12.4 or newer) under /usr/local/cuda," >&2
  echo "       or point CUDACXX at nvcc. A GPU is not needed to build." >&2
  exit 1
fi

jobs=${GICL_BUILD_JOBS:-$(nproc)}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" \
  ${GICL_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$jobs"
echo "setup: built into $build"
