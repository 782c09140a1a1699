#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds here and packs what the GPU machine runs into .devinst/ (git-ignored, ~10 MB, stripped):
# tools in bin/, test and benchmark binaries in tests/ and perf/, libgicl in lib/. Carry it with
# the device tool and run scripts/gpu-check.sh there (it finds .devinst/ by itself).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GICL_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
dest=$root/.devinst
rm -rf "$dest"
mkdir -p "$dest"/{bin,tests,lib,perf,examples,include/gicl}
cp "$build"/include/gicl/version.h "$dest/include/gicl/"  # generated; the rest of include/ travels as source
cp "$build"/src/tools/gicl-info "$build"/src/tools/gicl-run "$dest/bin/"
cp -P "$build"/src/libgicl.so* "$dest/lib/"
find "$build/tests" -maxdepth 1 -type f -executable \( -name 'gpu_*' -o -name 'mp_comm' -o -name 'env_rank' \) \
  -exec cp {} "$dest/tests/" \;
find "$build/examples" -maxdepth 1 -type f -executable -exec cp {} "$dest/examples/" \;
if [[ -d $build/perf ]]; then
  find "$build/perf" -maxdepth 1 -type f -executable -exec cp {} "$dest/perf/" \;
fi
strip --strip-unneeded "$dest"/bin/* "$dest"/tests/* "$dest"/lib/libgicl.so.*.* 2>/dev/null || true
find "$dest/perf" "$dest/examples" -type f -exec strip --strip-unneeded {} \; 2>/dev/null || true
du -sh "$dest"
