#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build into a temporary prefix, then moves the prefix: whatever consumes it after
# this finds everything relative to where it now lies. Also checks that no installed text file
# names the build machine's source or build tree.
# usage: install.sh BUILD_DIR SOURCE_DIR PREFIX
set -euo pipefail
build=$1 src=$2 prefix=$3
rm -rf "$prefix" "$prefix.staged"
cmake --install "$build" --prefix "$prefix.staged" >/dev/null
mv "$prefix.staged" "$prefix"
if grep -rIl -e "$build" -e "$src" "$prefix" ; then
  echo "FAIL: the installed files above name the build machine's trees ($build, $src)"
  exit 1
fi
for bin in "$prefix"/libexec/gicl/* "$prefix"/lib/libgicl_mpi.so; do
  [[ -e $bin ]] || continue
  if ! readelf -d "$bin" | grep -q 'RUNPATH.*\$ORIGIN'; then
    echo "FAIL: $bin has no RUNPATH relative to \$ORIGIN"
    exit 1
  fi
done
echo "install: $(find "$prefix" -type f | wc -l) files in a moved prefix, RUNPATHs relative"
