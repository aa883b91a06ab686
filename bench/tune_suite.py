#!/usr/bin/env python3
"""The heuristics and a search on every suite kernel, against PyTorch.

    python3 bench/tune_suite.py [--kernels softmax,add] [--threads 2]
                                [--budget 1000] [--time-budget 600]
                                [--torch-python PY] [--db FILE] > table.md

For each kernel, at the paper's shape, runs ``pd-tune`` with the naive,
greedy and expert heuristics and then the search (``--strategy``, anneal by
default, starting from the expert's program) with ``--budget`` evaluations
(or ``--time-budget`` seconds, whichever ends first). PyTorch is timed by
the last ``pd-tune`` run (bench/compare_torch.py, the faster of its eager and
``out=`` forms) when ``--torch-python`` imports torch. Prints a Markdown
table: the starting (naive) kernel's time, each heuristic's, the best found,
PyTorch's, the speedup over PyTorch, the share of the machine's limits, the
evaluations after which the best time was within 5% of the final one, and
the wall time of the search; then the geometric mean of the speedups over
PyTorch on the paper's Table 3 kernels (the suite without gemm and
log_softmax). Every run's JSON summary is kept in ``--out-dir``.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOT_TABLE3 = {"gemm", "log_softmax"}
# Kernels whose naive float32 result is itself inaccurate (a variance summed
# over 3.4e7 terms): candidates are checked against the float64 interpreter.
INTERPRETER_CHECKED = {"batchnorm_8x3x2048x2048"}


def tune(args, name, strategy, torch):
    out = os.path.join(args.out_dir, "%s-%s.json" % (name, strategy))
    cmd = [os.path.join(args.build, "bin", "pd-tune"),
           os.path.join(ROOT, "kernels", name + ".pd"),
           "--strategy=" + strategy, "--num-threads=%d" % args.threads,
           "--budget=%d" % args.budget, "--json=" + out, "--quiet",
           "--plot=" + os.path.join(args.out_dir,
                                    "%s-%s.svg" % (name, strategy))]
    if args.time_budget:
        cmd.append("--time-budget=%g" % args.time_budget)
    if name in INTERPRETER_CHECKED:
        cmd.append("--check-against=interpreter")
    if args.db:
        cmd.append("--db=" + args.db)
    else:
        cmd.append("--no-db")
    if torch and args.torch_python:
        cmd.append("--torch-python=" + args.torch_python)
    else:
        cmd.append("--no-torch")
    start = time.time()
    run = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.time() - start
    if run.returncode:
        return {"error": (run.stderr.strip().splitlines() or ["?"])[-1]}
    with open(out) as f:
        result = json.load(f)
    result["wall_s"] = elapsed
    return result


def within(trace, best, share=0.05):
    """Evaluations until the best time so far is within `share` of `best`."""
    for i, t in enumerate(trace):
        if t > 0 and t <= best * (1 + share):
            return i + 1
    return None


def fmt(ms):
    return "-" if ms is None else "%.3g" % ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--strategy", default="anneal")
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--time-budget", type=float, default=600)
    ap.add_argument("--torch-python", default=os.environ.get(
        "PERFDOJO_TORCH_PYTHON", ""))
    ap.add_argument("--db", default="")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out-dir", default="tune-results")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    sys.path.insert(0, os.path.join(ROOT, "kernels"))
    import suite

    names = args.kernels.split(",") if args.kernels else suite.names()
    print("| kernel | naive ms | naive heuristic ms | greedy ms | expert ms "
          "| %s ms | PyTorch ms | speedup over PyTorch | %% of roofline "
          "| evaluations to within 5%% | search time |" % args.strategy)
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    speedups = []
    torch_version = None
    for name in names:
        runs = {s: tune(args, name, s, False)
                for s in ("naive", "greedy", "expert")}
        searched = tune(args, name, args.strategy, True)
        runs[args.strategy] = searched
        ms = {s: r.get("best_ms") for s, r in runs.items()}
        start = next((r["start_ms"] for r in runs.values()
                      if "start_ms" in r), None)
        best = min((v for v in ms.values() if v), default=None)
        torch = searched.get("torch_ms")
        torch_version = searched.get("torch_version", torch_version)
        ratio = torch / best if torch and best else None
        if ratio and name not in NOT_TABLE3:
            speedups.append(ratio)
        roof = "-"
        if "pct_of_best_bandwidth" in searched:
            roof = "%.0f%% DRAM, %.1f%% FMA" % (
                searched["pct_of_best_bandwidth"], searched["pct_of_fma_peak"])
        reach = (within(searched["trace_ms"], searched["best_ms"])
                 if "trace_ms" in searched else None)
        cells = []
        for s in ("naive", "greedy", "expert", args.strategy):
            r = runs[s]
            cells.append(fmt(ms[s]) if "best_ms" in r
                         else "error: " + r.get("error", "?"))
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, fmt(start), cells[0], cells[1], cells[2], cells[3],
            fmt(torch), "%.2fx" % ratio if ratio else "-", roof,
            reach if reach else "-",
            "%.0f s" % searched["wall_s"] if "wall_s" in searched else "-"))
        sys.stdout.flush()
    print()
    if speedups:
        geo = math.exp(sum(math.log(r) for r in speedups) / len(speedups))
        print("Geometric mean speedup over PyTorch on %d Table 3 kernels: "
              "%.2fx" % (len(speedups), geo))
    print("PyTorch %s; %d threads; budget %d evaluations or %g s per search"
          % (torch_version or "not timed", args.threads, args.budget,
             args.time_budget))


if __name__ == "__main__":
    main()
