"""Checks the inputs `pd-gpu-run --dump-inputs` wrote for a package.

Usage: check_inputs.py PACKAGE_DIR DUMP_DIR

Draws the inputs again from the package's seed with an independent Python
copy of PerfDojo's InputGenerator (splitmix64; include/PerfDojo/Support/
InputGenerator.h), rounds them with Python's own conversions (struct's
'e' and 'f' formats, which round to nearest even) or, for bfloat16, with
exact rational arithmetic, and compares every element's bits with the .npy
files. Prints one line per input and exits 1 on the first difference.
Needs no NumPy.
"""

import ast
import fractions
import json
import math
import os
import struct
import sys

MASK = (1 << 64) - 1


class InputGenerator:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def next_float(self):
        return math.ldexp(float(self.next() >> 11), -52) - 1.0

    def next_int(self):
        return self.next() % 17 - 8


def bfloat16_bits(value):
    """The bits of `value` rounded to bfloat16, ties to even, computed as a
    multiple of the format's quantum with exact fractions."""
    if value == 0:
        return 0x8000 if math.copysign(1, value) < 0 else 0
    sign = 0x8000 if value < 0 else 0
    exact = fractions.Fraction(abs(value))
    exponent = math.frexp(abs(value))[1] - 1  # 2^exponent <= |value|
    quantum = fractions.Fraction(2) ** (max(exponent, -126) - 7)
    rounded = round(exact / quantum) * quantum  # round() ties to even
    if rounded >= 2**128:
        return sign | 0x7F80
    # A bfloat16 value is a float32 with 16 zero low bits: exact.
    bits = struct.unpack("<I", struct.pack("<f", float(rounded)))[0]
    assert bits & 0xFFFF == 0
    return sign | (bits >> 16)


def expected_element(dtype, generator):
    """The bytes of the next element of a buffer of type `dtype`."""
    if dtype in ("i8", "i16", "i32", "i64"):
        fmt = {"i8": "<b", "i16": "<h", "i32": "<i", "i64": "<q"}[dtype]
        return struct.pack(fmt, generator.next_int())
    value = generator.next_float()
    if dtype == "f16":
        return struct.pack("<e", value)
    if dtype == "bf16":
        # Dumped as float32 (NumPy has no bfloat16).
        return struct.pack("<I", bfloat16_bits(value) << 16)
    if dtype == "f32":
        return struct.pack("<f", value)
    return struct.pack("<d", value)


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", path
    length = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10 : 10 + length].decode("latin1"))
    return header, data[10 + length :]


def main():
    package_dir, dump_dir = sys.argv[1], sys.argv[2]
    with open(os.path.join(package_dir, "package.json")) as f:
        package = json.load(f)
    generator = InputGenerator(package["seed"])
    descrs = {"f16": "<f2", "bf16": "<f4", "f32": "<f4", "f64": "<f8",
              "i8": "|i1", "i16": "<i2", "i32": "<i4", "i64": "<i8"}
    for buffer in package["buffers"]:
        if buffer["role"] != "in":
            continue
        name, dtype = buffer["name"], buffer["dtype"]
        header, data = read_npy(os.path.join(dump_dir, name + ".npy"))
        if header["descr"] != descrs[dtype] or list(header["shape"]) != buffer["shape"]:
            print("%s: header %r" % (name, header))
            return 1
        size = len(expected_element(dtype, InputGenerator(0)))
        subnormal = 0
        for i in range(buffer["elements"]):
            want = expected_element(dtype, generator)
            got = data[i * size : (i + 1) * size]
            if got != want:
                print("%s: element %d is %s, expected %s" % (name, i, got.hex(), want.hex()))
                return 1
            if dtype == "f16" and struct.unpack("<H", got)[0] & 0x7C00 == 0:
                subnormal += 1
        extra = " (%d subnormal or zero)" % subnormal if dtype == "f16" else ""
        print("%s %s: %d elements match%s" % (name, dtype, buffer["elements"], extra))
    return 0


if __name__ == "__main__":
    sys.exit(main())
