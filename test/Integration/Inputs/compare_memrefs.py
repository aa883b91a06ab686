#!/usr/bin/env python3
"""Compares two outputs of printMemrefF32 calls (mlir-runner).

Usage: compare_memrefs.py EXPECTED ACTUAL --values N [--rtol R] [--atol A]

Both files must print the same memrefs (rank, offset, sizes, strides, in
order; the base addresses may differ), N values in all, and each value of
ACTUAL must lie within atol + rtol * |expected| of EXPECTED's. Prints the
first difference and exits with 1 otherwise.
"""
import argparse
import math
import re
import sys

HEADER = re.compile(r"Unranked Memref base@ = 0x[0-9a-fA-F]+ (rank = .*?) data =")
NUMBER = re.compile(r"-?(?:inf|nan|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")


def parse(path):
    with open(path) as f:
        text = f.read()
    headers = HEADER.findall(text)
    values = [float(v) for v in NUMBER.findall(HEADER.sub("", text))]
    return headers, values


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("expected")
    parser.add_argument("actual")
    parser.add_argument("--values", type=int, required=True,
                        help="how many values both files must print")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--atol", type=float, default=1e-6)
    args = parser.parse_args()
    expected_headers, expected = parse(args.expected)
    actual_headers, actual = parse(args.actual)
    if expected_headers != actual_headers:
        sys.exit("memrefs differ: %s expected, %s found" %
                 (expected_headers, actual_headers))
    for name, values in (("expected", expected), ("actual", actual)):
        if len(values) != args.values:
            sys.exit("%s output has %d values, expected %d" %
                     (name, len(values), args.values))
    for i, (e, a) in enumerate(zip(expected, actual)):
        same = (math.isnan(e) and math.isnan(a)) or \
            abs(a - e) <= args.atol + args.rtol * abs(e)
        if not same:
            sys.exit("value #%d differs: %r expected, %r found" % (i, e, a))
    print("%d values match" % len(expected))


if __name__ == "__main__":
    main()
