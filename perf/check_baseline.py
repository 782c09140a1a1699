#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares fresh benchmark runs with a machine's baseline, or records runs as baseline rows.

    perf/check_baseline.py BASELINE.jsonl RUN.json [RUN.json ...] [--tolerance 0.05]
    perf/check_baseline.py --record BASELINE.jsonl --machine h200x2 --commit 1a2b3c4 \\
        [--date YYYY-MM-DD] [--versions "CUDA 13.0, driver 580.159.04"] RUN.json [...]

RUN.json files are what the benchmarks write with -J (or --json): the collective benchmarks
(all_reduce_perf ... sendrecv_perf) and the device-API benchmarks (put_bw ... alltoall_latency).
Each run becomes rows keyed by (benchmark, config, ranks, bytes); a baseline holds one row per
key (perf/baselines/README.md has the format).

Check: every fresh row that has a baseline row is compared on gicl's figure. A row regresses
when it is worse than the baseline by more than the tolerance (relative) and, for times, by
more than --abs-us as well (a few tenths of a microsecond are noise at small sizes). The table
lists every matched row with the change and the peer's figure from both runs; the exit status is
1 when any row regressed, 2 for bad input, else 0.

Record: the runs' rows replace the baseline's rows of the same key (or are added), with the
machine, date, commit and versions given.
"""
import argparse
import datetime
import json
import sys

# Collective runs: gicl's figure is the out-of-place time, as nccl-tests reports first.
COLLECTIVE_SUFFIX = "_perf"


def collective_config(run, row):
    """The configuration a collective row was measured in: type, reduction, root, buffers
    (-R), graph (-G), a forced algorithm and the network path (net=p2p_off, net=hostid)."""
    parts = [row.get("type", run.get("type")), row.get("op", run.get("op"))]
    if row.get("root", -1) >= 0:
        parts.append(f"root{row['root']}")
    parts.append(f"R{run.get('registration', 0)}")
    if run.get("graph"):
        parts.append(f"G{run['graph']}")
    if run.get("algo"):
        parts.append(f"algo={run['algo']}")
    if run.get("net"):
        parts.append(f"net={run['net']}")
    return " ".join(p for p in parts if p and p != "none")


def rows_of_run(run):
    """Baseline rows (without machine, date, commit) of one --json file."""
    out = []
    bench = run["benchmark"]
    if bench.endswith(COLLECTIVE_SUFFIX):
        peer = run.get("nccl", "none")
        for r in run["rows"]:
            if r["bytes"] <= 0 or r.get("oop_wrong", 0) or r.get("ip_wrong", 0):
                continue  # a wrong result is no figure to keep
            out.append({
                "benchmark": bench, "config": collective_config(run, r), "ranks": run["ranks"],
                "bytes": r["bytes"], "metric": "us", "gicl": r["oop_us"],
                "peer": f"NCCL ({peer})" if r.get("nccl_us", 0) > 0 else "none",
                "peer_value": r.get("nccl_us", 0.0),
            })
        return out
    # Device-API benchmarks: the time per operation (their tables' unit, GB/s or Mops/s, follows
    # from it and rounds small sizes to 0).
    config = f"{run.get('ctas', 0)}x{run.get('threads', 0)}" + (" local" if run.get("local") else "")
    for r in run["rows"]:
        value = r.get("gicl_us", r.get("ccl_us"))
        ref = r.get("nvshmem_us", 0.0)
        out.append({
            "benchmark": bench, "config": config, "ranks": run["ranks"], "bytes": r["bytes"],
            "metric": "us", "gicl": value,
            "peer": "NVSHMEM" if ref and ref > 0 else "none", "peer_value": ref if ref > 0 else 0.0,
        })
    return out


def key(row):
    return (row["benchmark"], row["config"], row["ranks"], row["bytes"])


def load_baseline(path):
    rows = {}
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                row = json.loads(line)
                rows[key(row)] = row
    except FileNotFoundError:
        pass
    except (json.JSONDecodeError, KeyError) as e:
        sys.exit(f"{path}:{n}: not a baseline row: {e}")
    return rows


def load_runs(paths):
    out = []
    for p in paths:
        try:
            with open(p) as f:
                out.extend(rows_of_run(json.load(f)))
        except (OSError, json.JSONDecodeError, KeyError) as e:
            print(f"{p}: not a benchmark --json file: {e}", file=sys.stderr)
            sys.exit(2)
    return out


def lower_is_better(metric):
    return metric == "us"


def regressed(base, fresh, tol, abs_us):
    """The relative change (positive: worse) and whether it is beyond the tolerance."""
    b, f = base["gicl"], fresh["gicl"]
    if b <= 0 or f <= 0:
        return 0.0, False
    if lower_is_better(base["metric"]):
        change = f / b - 1.0
        return change, change > tol and (f - b) > abs_us
    change = b / f - 1.0
    return change, change > tol


def check(args):
    base = load_baseline(args.baseline)
    if not base:
        print(f"{args.baseline}: no baseline rows", file=sys.stderr)
        return 2
    fresh = load_runs(args.runs)
    matched = [(base[key(r)], r) for r in fresh if key(r) in base]
    if not matched:
        print("no fresh row matches a baseline row (benchmark, config, ranks, bytes)",
              file=sys.stderr)
        return 2
    bad = 0
    print(f"{'benchmark':24} {'config':22} {'bytes':>11} {'base':>10} {'now':>10} {'change':>7}"
          f" {'peer base':>10} {'peer now':>10}")
    for b, f in matched:
        change, worse = regressed(b, f, args.tolerance, args.abs_us)
        bad += worse
        print(f"{b['benchmark'][:24]:24} {b['config'][:22]:22} {b['bytes']:>11} {b['gicl']:>10.3f}"
              f" {f['gicl']:>10.3f} {100 * change:>+6.1f}% {b['peer_value']:>10.3f}"
              f" {f['peer_value']:>10.3f}{'  REGRESSED' if worse else ''}")
    unmatched = len(fresh) - len(matched)
    print(f"# {len(matched)} rows compared (change > 0: worse than the baseline), {bad} worse by more"
          f" than {100 * args.tolerance:.0f} % (and {args.abs_us} us for times)"
          + (f"; {unmatched} fresh rows have no baseline row" if unmatched else ""))
    return 1 if bad else 0


def record(args):
    if not args.machine or not args.commit:
        print("--record needs --machine and --commit", file=sys.stderr)
        return 2
    base = load_baseline(args.record)
    added = 0
    for r in load_runs(args.runs):
        r.update({"machine": args.machine, "date": args.date, "commit": args.commit,
                  "versions": args.versions})
        base[key(r)] = r
        added += 1
    with open(args.record, "w") as f:
        for k in sorted(base, key=lambda k: (k[0], k[1], k[2], k[3])):
            f.write(json.dumps(base[k], sort_keys=True) + "\n")
    print(f"{args.record}: {added} rows recorded, {len(base)} in all")
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("baseline", nargs="?", help="baseline .jsonl to check against")
    ap.add_argument("runs", nargs="*", help="benchmark --json files")
    ap.add_argument("--tolerance", type=float, default=0.05, help="relative (default 0.05)")
    ap.add_argument("--abs-us", type=float, default=0.5,
                    help="a time must also be this many us worse (default 0.5)")
    ap.add_argument("--record", metavar="BASELINE", help="record the runs into this baseline")
    ap.add_argument("--machine")
    ap.add_argument("--commit")
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    ap.add_argument("--versions", default="")
    args = ap.parse_args(argv)
    if args.record:
        if args.baseline:
            args.runs.insert(0, args.baseline)
        args.baseline = None
        return record(args)
    if not args.baseline or not args.runs:
        ap.print_usage(sys.stderr)
        return 2
    return check(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
