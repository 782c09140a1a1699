#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Draws gicl beside its peer (NCCL or NVSHMEM) against message size, from baseline rows or from
benchmark --json files.

    perf/plot.py OUT.png perf/baselines/h200x2.jsonl [--benchmark all_reduce_perf] [--config R2]
    perf/plot.py OUT.png RUN.json [RUN.json ...]

One panel per (benchmark, configuration, ranks), each a log-log plot of gicl's figure and the
peer's (time in us, or the benchmark's unit: GB/s, Mops/s). --benchmark and --config keep the
panels whose names contain the given text.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_baseline import rows_of_run  # noqa: E402  (one conversion of runs into rows)


def load_rows(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            if p.endswith(".jsonl"):
                rows.extend(json.loads(line) for line in f if line.strip())
            else:
                rows.extend(rows_of_run(json.load(f)))
    return rows


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--benchmark", default="")
    ap.add_argument("--config", default="")
    args = ap.parse_args(argv)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("perf/plot.py needs matplotlib (apt-get install python3-matplotlib)", file=sys.stderr)
        return 2
    panels = {}
    for r in load_rows(args.inputs):
        if args.benchmark in r["benchmark"] and args.config in r["config"]:
            panels.setdefault((r["benchmark"], r["config"], r["ranks"]), []).append(r)
    if not panels:
        print("no rows match", file=sys.stderr)
        return 2
    cols = min(4, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.4 * cols, 3.4 * nrows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, ((bench, config, ranks), rows) in zip(axes.flat, sorted(panels.items())):
        rows.sort(key=lambda r: r["bytes"])
        size = [max(r["bytes"], 1) for r in rows]
        ax.plot(size, [r["gicl"] for r in rows], "o-", label="gicl")
        peer = [r for r in rows if r.get("peer_value", 0) > 0]
        if peer:
            ax.plot([max(r["bytes"], 1) for r in peer], [r["peer_value"] for r in peer], "^-",
                    label=peer[0]["peer"][:40])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"{bench[:34]}\n{config}, {ranks} ranks", fontsize=8)
        ax.set_xlabel("bytes", fontsize=8)
        ax.set_ylabel(rows[0]["metric"], fontsize=8)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
