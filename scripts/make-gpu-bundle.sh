#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds here and packs what the GPU machine runs into .devinst/ (git-ignored, stripped): the
# installed package (bin/, lib/, libexec/gicl/ with the benchmarks, include/, share/) plus the
# test binaries in tests/ and the built examples in examples/. Carry it with the device tool and
# run scripts/gpu-check.sh there (it finds .devinst/ by itself).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GICL_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
dest=$root/.devinst
rm -rf "$dest"
cmake --install "$build" --prefix "$dest" --strip >/dev/null
rm -rf "$dest/share/gicl/examples"  # sources; the built examples follow
mkdir -p "$dest"/{tests,examples}
find "$build/tests" -maxdepth 1 -type f -executable \( -name 'gpu_*' -o -name 'mp_comm' -o -name 'env_rank' \) \
  -exec cp {} "$dest/tests/" \;
find "$build/examples" -maxdepth 1 -type f -executable -exec cp {} "$dest/examples/" \;
strip --strip-unneeded "$dest"/tests/* "$dest"/examples/* 2>/dev/null || true
# The kernels' fat binaries make the folder large (tens of MiB); packed, it is
# about a quarter. scripts/gpu-check.sh unpacks .devpack/devinst.tar.xz where .devinst/ is absent.
mkdir -p "$root/.devpack"
tar cf - -C "$root" .devinst | xz -6 -T0 >"$root/.devpack/devinst.tar.xz"
du -sh "$dest" "$root/.devpack/devinst.tar.xz"
