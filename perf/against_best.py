#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares the collective benchmarks' --json results with a table of NCCL's best times per size,
taken over every configuration NCCL was run in (a "## all_reduce" line per collective, then rows
"bytes time_us busbw from"), for the bar "no size more than 3 % slower than NCCL's best".

    perf/against_best.py BEST.txt FILE.json [FILE.json ...] [--all]

Per collective and size that both have: gicl's faster of out-of-place and in-place, NCCL's best,
their ratio (best / gicl: above 1 gicl is faster), the same run's NCCL ratio when the run had
--compare-nccl, and a mark where gicl is more than 3 % behind the best. Without --all only the
marked rows print (and a count per file).
"""
import json
import sys


def load_best(path):
    best, cur = {}, None
    with open(path) as f:
        for line in f:
            p = line.split()
            if line.startswith("## ") and len(p) >= 2:
                cur = best.setdefault(p[1], {})
            elif cur is not None and len(p) >= 2 and p[0].isdigit():
                cur[int(p[0])] = float(p[1])
    return best


def main(argv):
    show_all = "--all" in argv
    args = [a for a in argv if a != "--all"]
    if len(args) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    best = load_best(args[0])
    for path in args[1:]:
        with open(path) as f:
            run = json.load(f)
        name = run["benchmark"].removesuffix("_perf")
        table = best.get(name, {})
        behind = 0
        print(f"-- {run['benchmark']}{' (graph)' if run.get('graph') else ''}: {path}")
        print(f"{'bytes':>12} {'gicl_us':>9} {'best_us':>9} {'vs_best':>8} {'vs_run':>7}")
        for r in run["rows"]:
            b = table.get(r["bytes"])
            if b is None:
                continue
            times = [t for t in (r.get("oop_us"), r.get("ip_us")) if t and t > 0]
            if not times:
                continue
            t = min(times)
            slow = t > 1.03 * b
            behind += slow
            if show_all or slow:
                run_ratio = r["nccl_us"] / r["oop_us"] if r.get("nccl_us") and r.get("oop_us") else 0
                print(f"{r['bytes']:>12} {t:>9.2f} {b:>9.2f} {b / t:>8.3f} "
                      f"{run_ratio:>7.3f}{'  <- more than 3 % behind' if slow else ''}")
        print(f"({behind} size(s) more than 3 % behind NCCL's best)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
