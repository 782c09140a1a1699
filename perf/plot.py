#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Draws busbw and latency against message size, gicl beside NCCL, from the --json files of the
collective benchmarks (all_reduce_perf ... sendrecv_perf).

    perf/plot.py OUT.png FILE.json [FILE.json ...]

One column per file and sweep (a run with -d/-o/-r all has one sweep per type, reduction and
root): busbw (GB/s, top) and time (us, bottom, log scale) against size, gicl's out-of-place and
in-place runs and, when the run had --compare-nccl, NCCL's.
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def sweeps(run):
    """(title, rows) per sweep of a run, in the run's order; files written before rows named
    their type, reduction and root hold one sweep."""
    title = run["benchmark"] + (" (graph)" if run.get("graph") else "")
    groups = {}
    for r in run["rows"]:
        if r["bytes"] > 0:
            groups.setdefault((r.get("type"), r.get("op"), r.get("root")), []).append(r)
    if len(groups) <= 1:
        return [(title, rows) for rows in groups.values()]
    out = []
    for (dtype, op, root), rows in groups.items():
        parts = [dtype] + ([op] if op != "none" else []) + ([f"root {root}"] if root >= 0 else [])
        out.append((f"{title}: {' '.join(parts)}", rows))
    return out


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("perf/plot.py needs matplotlib (apt-get install python3-matplotlib)", file=sys.stderr)
        return 2
    columns = [c for p in argv[2:] for c in sweeps(load(p))]
    fig, axes = plt.subplots(2, len(columns), figsize=(4.2 * len(columns), 7), squeeze=False)
    for col, (title, rows) in enumerate(columns):
        size = [r["bytes"] for r in rows]
        bw, lat = axes[0][col], axes[1][col]
        bw.plot(size, [r["oop_busbw"] for r in rows], "o-", label="gicl out-of-place")
        ip = [r for r in rows if r["ip_us"] > 0]  # point to point has no in-place run
        if ip:
            bw.plot([r["bytes"] for r in ip], [r["ip_busbw"] for r in ip], "s--",
                    label="gicl in-place", alpha=0.7)
        lat.plot(size, [r["oop_us"] for r in rows], "o-", label="gicl")
        if any(r["nccl_us"] > 0 for r in rows):
            bw.plot(size, [r["nccl_busbw"] for r in rows], "^-", label="NCCL")
            lat.plot(size, [r["nccl_us"] for r in rows], "^-", label="NCCL")
        for ax in (bw, lat):
            ax.set_xscale("log", base=2)
            ax.grid(True, which="both", alpha=0.3)
        lat.set_yscale("log")
        bw.set_title(title)
        bw.set_ylabel("busbw (GB/s)")
        lat.set_ylabel("time (us)")
        lat.set_xlabel("size (bytes)")
        bw.legend(fontsize=7)
        lat.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(argv[1], dpi=110)
    print(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
