#!/usr/bin/env python3
"""The CPU expert on the unseen kernel set (kernels/unseen), which its rules
were never tuned on.

    .venv/bin/python bench/expert_unseen.py [--kernels gelu,transpose]
        [--threads 2] [--build build] [--out-dir DIR] > table.md

For each kernel, at its full shape, runs ``pd-tune --strategy=expert`` (no
search): the naive kernel and the expert's program are measured in the same
run and checked against each other. Prints a Markdown table: the naive
time, the expert's, the speedup, the share of the machine's best DRAM
bandwidth and of its FP32 FMA peak (``pd-machine``'s numbers, as pd-tune
reports them), and the geometric mean of the speedups. A kernel whose expert
program is slower than the naive one is marked, and counted as it is; one
whose program fails its check against the float32 kernel is checked again
against the float64 interpreter (a long float32 sum is itself inaccurate),
and marked so.
Every run's JSON summary is kept in ``--out-dir``.
"""

import argparse
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="",
                    help="comma-separated names (default: every unseen kernel)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out-dir", default="/tmp/perfdojo-expert-unseen")
    ap.add_argument("--folder", default=os.path.join(ROOT, "kernels", "unseen"),
                    help="the kernels' folder (default: kernels/unseen; "
                         "bench/probe for the probe set)")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    folder = args.folder
    if not os.path.isdir(folder):
        sys.exit("expert_unseen.py: no folder '%s'" % folder)
    names = (args.kernels.split(",") if args.kernels else sorted(
        f[:-3] for f in os.listdir(folder) if f.endswith(".pd")))

    print("| kernel | naive ms | expert ms | speedup | % of DRAM | % of FMA peak |")
    print("|---|---|---|---|---|---|")
    logs = []
    for name in names:
        out = os.path.join(args.out_dir, name + ".json")
        cmd = [os.path.join(args.build, "bin", "pd-tune"),
               os.path.join(folder, name + ".pd"), "--strategy=expert",
               "--num-threads=%d" % args.threads, "--no-db", "--no-torch",
               "--plot=-", "--quiet", "--json=" + out]
        run = subprocess.run(cmd, capture_output=True, text=True)
        note = ""
        # An expert program that failed its check against the float32
        # kernel (a long float32 sum, itself inaccurate) is checked again
        # against the float64 interpreter, and the row says so.
        if not run.returncode and load(out).get("failures"):
            run = subprocess.run(cmd + ["--check-against=interpreter"],
                                 capture_output=True, text=True)
            note = " (checked against float64)"
        if run.returncode:
            reason = (run.stderr.strip().splitlines() or ["?"])[-1]
            print("| %s | error: %s | | | | |" % (name, reason))
            continue
        r = load(out)
        if r.get("failures"):
            note = " (the expert's program failed its check: naive kept)"
        speedup = r["start_ms"] / r["best_ms"]
        logs.append(math.log(speedup))
        print("| %s | %.3g | %.3g | %.2fx%s%s | %.0f%% | %.1f%% |" % (
            name, r["start_ms"], r["best_ms"], speedup,
            " (slower)" if speedup < 1 else "", note,
            r.get("pct_of_best_bandwidth", 0), r.get("pct_of_fma_peak", 0)))
        sys.stdout.flush()
    if logs:
        print("\nGeometric mean speedup of the expert over the naive kernel "
              "on %d kernels of %s: %.2fx (%d threads)"
              % (len(logs), os.path.relpath(folder, ROOT),
                 math.exp(sum(logs) / len(logs)), args.threads))


if __name__ == "__main__":
    main()
