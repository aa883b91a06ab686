"""Writes the .npy files of the GPU runner's tests of expected values.

Usage:
  make_npy.py write OUT DESCR SHAPE [VALUE...]
      an array of DESCR ('<f8', '<i8', '<i4', ...) and SHAPE (sizes joined
      by commas: "2,3"; "0" for an empty 1-D array; "" for a scalar) whose
      row-major elements are the VALUEs (as many as the shape holds)
  make_npy.py sample IN VALUES INDICES ELEMENT...
      a sample of the .npy file IN (say, an input that pd-gpu-run
      --dump-inputs wrote, which a copy kernel copies to an output): the
      ELEMENTs (row-major element numbers) of IN as a 1-D '<f8' array (for
      floats) or '<i8' array (for integers) in VALUES, the element numbers
      as a 1-D '<i8' array in INDICES; prints the largest finite |value| of
      the whole of IN (the sample's scale)
  make_npy.py widen IN OUT
      every element of IN, with its shape, as '<f8' or '<i8' in OUT

Needs no NumPy: the header is written as NumPy writes version 1.0 files.
"""

import ast
import math
import struct
import sys

FORMATS = {"f2": "e", "f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i",
           "i8": "q"}


def header(descr, shape):
    dims = "(%d,)" % shape[0] if len(shape) == 1 else "(%s)" % ", ".join(
        str(s) for s in shape)
    text = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (
        descr, dims)
    total = 10 + len(text) + 1
    text += " " * ((64 - total % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode()


def write(path, descr, shape, values):
    code = FORMATS[descr[1:]]
    with open(path, "wb") as f:
        f.write(header(descr, shape))
        for v in values:
            f.write(struct.pack("<" + code, v))


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY" and data[6] == 1, path
    length = struct.unpack("<H", data[8:10])[0]
    meta = ast.literal_eval(data[10:10 + length].decode())
    descr, shape = meta["descr"], list(meta["shape"])
    code = FORMATS[descr[1:]]
    count = math.prod(shape)
    values = struct.unpack_from("<%d%s" % (count, code), data, 10 + length)
    return descr, shape, list(values)


def parse_value(descr, text):
    return float(text) if descr[1] == "f" else int(text, 0)


def main(argv):
    if argv[1] == "write":
        out, descr, shape_text = argv[2:5]
        shape = [int(s) for s in shape_text.split(",")] if shape_text else []
        values = [parse_value(descr, v) for v in argv[5:]]
        assert len(values) == math.prod(shape), "expected %d values" % (
            math.prod(shape))
        write(out, descr, shape, values)
    elif argv[1] == "sample":
        source, values_path, indices_path = argv[2:5]
        descr, _, values = read(source)
        elements = [int(e) for e in argv[5:]]
        is_float = descr[1] == "f"
        write(values_path, "<f8" if is_float else "<i8", [len(elements)],
              [values[e] for e in elements])
        write(indices_path, "<i8", [len(elements)], elements)
        finite = [abs(v) for v in values if math.isfinite(v)]
        print(repr(float(max(finite, default=0))))
    elif argv[1] == "widen":
        descr, shape, values = read(argv[2])
        write(argv[3], "<f8" if descr[1] == "f" else "<i8", shape, values)
    else:
        sys.exit("make_npy.py: expected 'write', 'sample' or 'widen', found '"
                 + argv[1] + "'")


if __name__ == "__main__":
    main(sys.argv)
