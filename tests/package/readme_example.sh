#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's host example compiles as printed: the first ```c block under "## A host example"
# is extracted and built against the installed package with pkg-config, warnings as errors.
# usage: readme_example.sh PREFIX SOURCE_DIR WORK_DIR
set -euo pipefail
prefix=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
awk '/^## A host example/ {section = 1} section && /^```c$/ {code = 1; next}
     code && /^```$/ {exit} code {print}' "$src/README.md" >"$work/example.c"
if [[ ! -s $work/example.c ]]; then
  echo "FAIL: no \`\`\`c block under '## A host example' in README.md"
  exit 1
fi
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
gcc -std=c11 -Wall -Wextra -pedantic -Werror "$work/example.c" -o "$work/example" \
  $(pkg-config --cflags --libs gicl)
echo "readme_example: $(wc -l <"$work/example.c") lines built against the installed package"
