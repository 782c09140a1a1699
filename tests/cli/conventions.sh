#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every tool and benchmark follows the command-line habits users bring from nccl-tests: -h and
# --help print a usage and exit 0, an unknown flag prints the usage on stderr and exits 2, and a
# size (where the binary takes one) goes through the library's one parser. None needs a GPU for
# this: parsing comes first.
# usage: conventions.sh BINARY...
set -uo pipefail
fail=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
check() {  # check NAME EXPECTED_RC STREAM_FILE -- command...
  local name=$1 want=$2 stream=$3; shift 4
  "$@" >"$out" 2>"$err"
  local rc=$?
  if [[ $rc -ne $want ]] || ! grep -q '^usage: ' "$stream"; then
    local where=stdout; [[ $stream == "$err" ]] && where=stderr
    echo "FAIL: $name: exit $rc (want $want) with a 'usage:' line on $where; it printed:"
    head -c 300 "$out" "$err"
    fail=1
  fi
}
for bin in "$@"; do
  name=$(basename "$bin")
  check "$name -h" 0 "$out" -- "$bin" -h
  check "$name --help" 0 "$out" -- "$bin" --help
  check "$name --no-such-flag" 2 "$err" -- "$bin" --no-such-flag
  # Benchmarks that sweep sizes: the library's parser takes 1M and refuses 1X.
  if grep -q -- '--minbytes' "$out" 2>/dev/null || "$bin" -h 2>/dev/null | grep -q -- '--minbytes'; then
    check "$name -b 1X" 2 "$err" -- "$bin" -b 1X
  fi
done
[[ $fail -eq 0 ]] && echo "conventions: $# binaries: -h, --help, unknown flags and sizes as expected"
exit $fail
