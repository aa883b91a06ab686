#!/usr/bin/env python3
"""The error in ulp of a compiled f32 function, against numpy in float64.

Runs `y = f(x)` (vectors of 16, as the expert compiles element-wise
functions) through PerfDojo's CPU lowering on this machine, over every
`stride`-th float32 between `--low` and `--high` (by bit pattern, so every
binade is sampled alike), and prints the largest error in units of the
float32 spacing of the exact result, where it occurs, and how many results
are more than 1 ulp off. Results below the smallest normal float32 are
left out (their spacing is fixed), and so are infinite ones, which must
come out infinite.

  .venv/bin/python bench/math/ulp.py --function exp --low -104 --high 89
"""
import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "build", "python_packages"))
import perfdojo  # noqa: E402

REFERENCES = {
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
    "sinh": np.sinh, "cosh": np.cosh, "sqrt": np.sqrt, "atan": np.arctan,
}
CHUNK = 1 << 22


def floats_between(low, high, stride):
    """Every stride-th float32 in [low, high], by bit pattern, with both ends."""
    def run(a, b):  # a <= b, both >= 0
        bits = np.arange(np.float32(a).view(np.int32), np.float32(b).view(np.int32) + 1,
                         stride, dtype=np.int64)
        return bits.astype(np.int32).view(np.float32)
    parts = [np.array([low, high], np.float32)]
    if high > 0:
        parts.append(run(max(low, 0.0), high))
    if low < 0:
        parts.append(-run(max(-high, 0.0), -low))
    return np.unique(np.concatenate(parts))


class Mismatch(Exception):
    """A result that should be infinite came out finite, or the reverse."""


def measure(function, low, high, stride):
    """(largest error in ulp, its x, results counted, results over 1 ulp)."""
    kernel = perfdojo.Kernel.parse(
        "kernel ulp\nin  x f32 [%d] heap\nout y f32 [%d] heap\n\n"
        "%d 16:v y[{0}*16+{1}]=%s(x[{0}*16+{1}])\n"
        % (CHUNK, CHUNK, CHUNK // 16, function))
    reference = REFERENCES[function]
    xs = floats_between(low, high, stride)
    worst, worst_x, counted, over_one = 0.0, None, 0, 0
    tiny = np.finfo(np.float32).tiny
    for start in range(0, len(xs), CHUNK):
        chunk = xs[start:start + CHUNK]
        x = np.zeros(CHUNK, np.float32)
        x[:len(chunk)] = chunk
        y = kernel.run({"x": x})["y"].astype(np.float32)[:len(chunk)]
        with np.errstate(all="ignore"):
            exact = reference(chunk.astype(np.float64))
            rounded = exact.astype(np.float32)
        infinite = np.isinf(rounded) | np.isinf(y)
        wrong = infinite & (y != rounded)
        if wrong.any():
            i = np.flatnonzero(wrong)[0]
            raise Mismatch("%s(%r): expected %r, got %r"
                           % (function, float(chunk[i]), float(rounded[i]),
                              float(y[i])))
        normal = np.isfinite(rounded) & (np.abs(rounded) >= tiny)
        spacing = np.spacing(np.abs(rounded[normal])).astype(np.float64)
        error = np.abs(y[normal].astype(np.float64) - exact[normal]) / spacing
        counted += int(normal.sum())
        over_one += int((error > 1).sum())
        if error.size and error.max() > worst:
            worst = float(error.max())
            worst_x = float(chunk[normal][np.argmax(error)])
    return worst, worst_x, counted, over_one


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--function", default="exp", choices=sorted(REFERENCES))
    ap.add_argument("--low", type=float, default=-104.0)
    ap.add_argument("--high", type=float, default=89.0)
    ap.add_argument("--stride", type=int, default=97,
                    help="take every stride-th float32 (1: all of them)")
    args = ap.parse_args()
    if args.low > args.high or args.stride < 1:
        ap.error("need --low <= --high and --stride >= 1")
    try:
        worst, worst_x, counted, over_one = measure(
            args.function, args.low, args.high, args.stride)
    except Mismatch as error:
        sys.exit("ulp.py: %s" % error)
    print("%s over %d float32 in [%g, %g] (every %d-th): largest error %.3f ulp "
          "at x = %r; %d results more than 1 ulp off"
          % (args.function, counted, args.low, args.high, args.stride, worst,
             worst_x, over_one))


if __name__ == "__main__":
    main()
