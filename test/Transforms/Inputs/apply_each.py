#!/usr/bin/env python3
"""Applies, one at a time, every move that --pd-list-moves lists for a kernel.

    apply_each.py --pd-opt PD-OPT [--pd-run PD-RUN] KERNEL.mlir

Each listed line is applied alone to the original kernel with
`pd-opt --pd-apply=<line>`, which must succeed. With --pd-run, the
interpreter must also give the same output summaries (the `out ...` lines)
before and after the move; numbers may differ by a relative 1e-9, since
moves may reorder the updates of a floating-point reduction.

Prints `applied N of M` and exits with 1 if any move failed, naming each
failure on stderr.
"""

import argparse
import concurrent.futures
import math
import os
import re
import subprocess
import sys
import tempfile


def out_lines(pd_run, path):
    """The `out ...` lines that pd-run prints for `path`."""
    result = subprocess.run([pd_run, path], capture_output=True, text=True)
    if result.returncode != 0:
        return None, result.stderr.strip()
    return [l for l in result.stdout.splitlines() if l.startswith("out ")], ""


def same_summary(a, b):
    """Whether two `out ...` lines agree, numbers within a relative 1e-9."""
    ta, tb = re.split(r"([\s,=\[\]:]+)", a), re.split(r"([\s,=\[\]:]+)", b)
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb):
        if x == y:
            continue
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            return False
        if not math.isclose(fx, fy, rel_tol=1e-9, abs_tol=1e-9):
            return False
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pd-opt", required=True)
    parser.add_argument("--pd-run")
    parser.add_argument("kernel")
    args = parser.parse_args()

    listed = subprocess.run(
        [args.pd_opt, args.kernel, "--pd-list-moves", "-o", os.devnull],
        capture_output=True, text=True)
    if listed.returncode != 0:
        sys.stderr.write(listed.stderr)
        return 1
    moves = [line for line in listed.stdout.splitlines() if line.strip()]

    expected = None
    if args.pd_run:
        expected, error = out_lines(args.pd_run, args.kernel)
        if expected is None:
            sys.stderr.write(f"pd-run fails on the original kernel: {error}\n")
            return 1

    with tempfile.TemporaryDirectory() as tmp:

        def apply(index_move):
            index, move = index_move
            out = os.path.join(tmp, f"{index}.mlir")
            result = subprocess.run(
                [args.pd_opt, args.kernel, f"--pd-apply={move}", "-o", out],
                capture_output=True, text=True)
            if result.returncode != 0:
                return f"{move}: {result.stderr.strip()}"
            if expected is not None:
                got, error = out_lines(args.pd_run, out)
                if got is None:
                    return f"{move}: pd-run fails: {error}"
                if len(got) != len(expected) or not all(
                        same_summary(a, b) for a, b in zip(expected, got)):
                    return (f"{move}: outputs differ:\n  before: " +
                            "\n          ".join(expected) + "\n  after:  " +
                            "\n          ".join(got))
            return None

        with concurrent.futures.ThreadPoolExecutor(
                max_workers=os.cpu_count() or 2) as pool:
            failures = [f for f in pool.map(apply, enumerate(moves)) if f]

    for failure in failures:
        sys.stderr.write(f"FAILED {failure}\n")
    print(f"applied {len(moves) - len(failures)} of {len(moves)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
