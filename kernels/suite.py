#!/usr/bin/env python3
"""The PerfDojo benchmark suite: naive kernels in the text form.

This module generates the naive text-form kernels in ``kernels/*.pd`` (the
paper's Table 3 set at its shapes, plus ``gemm`` and ``log_softmax``) and
holds a float64 numpy reference for each of them. Every kernel can also be
emitted at a reduced shape with the same structure, which the interpreter runs
in well under a second (``test/Kernels/check_reference.py`` uses that).

Usage::

    python3 kernels/suite.py list
    python3 kernels/suite.py write [--out DIR]
    python3 kernels/suite.py emit NAME [--small] [--shape k=v,...]

The kernels are written the way the paper writes naive kernels: one primitive
per line, one top-level scope nest per step, every reduction explicitly
initialized before it is updated, full-size ``heap`` temporaries, ``in``
buffers for inputs and ``out`` buffers for results. Means divide by the
element count. The text is printed in the canonical form of docs/TextForm.md,
so that ``pd-translate --import-pd | pd-translate --export-pd`` reproduces it
byte for byte. See kernels/README.md for the math, layouts and buffer roles.

Only the standard library and numpy are used.
"""

import argparse
import os
import sys

import numpy as np

EPS = 1e-5
GEMM_ALPHA = 1.5
GEMM_BETA = 0.5


# ---------------------------------------------------------------------------
# Text-form rendering
# ---------------------------------------------------------------------------


def num(value):
    """Spells a constant canonically: the shortest C ``%.{p}g`` (p in 1..17)
    that reads back to the same double, or the integer's plain digits when
    those are no longer; ``inf``, ``-inf``, ``nan``."""
    value = float(value)
    if value != value:
        return "nan"
    if value == float("inf"):
        return "inf"
    if value == float("-inf"):
        return "-inf"
    text = "%.17g" % value
    for precision in range(1, 18):
        text = "%.*g" % (precision, value)
        if float(text) == value:
            break
    # An integer written out in full is shorter than its exponent form
    # ("100", not "1e+02"); on a tie the plain digits win.
    if value == int(value) and abs(value) < 1e17:
        plain = "%.0f" % value
        if len(plain) <= len(text):
            return plain
    return text


class Kernel:
    """A naive kernel under construction: buffers, then top-level nests."""

    def __init__(self, name):
        self.name = name
        self.buffers = []  # (role, name, dims)
        self.lines = []  # (sizes, statement)

    def buf(self, role, name, dims):
        assert role in ("in", "out", "tmp")
        assert all(isinstance(d, int) and d >= 1 for d in dims), (name, dims)
        self.buffers.append((role, name, tuple(dims)))
        return self

    def op(self, sizes, statement):
        """Appends one top-level scope nest of ``sizes`` (outermost first)
        holding the single operation ``statement`` (canonical spelling)."""
        assert all(isinstance(s, int) and s >= 1 for s in sizes), sizes
        assert " " not in statement, statement
        self.lines.append((tuple(sizes), statement))
        return self

    def roles(self, role):
        return [(n, d) for r, n, d in self.buffers if r == role]

    def text(self):
        out = ["kernel " + self.name]
        for role, name, dims in self.buffers:
            out.append("%-3s %s f32 [%s] heap"
                       % (role, name, ", ".join(str(d) for d in dims)))
        out.append("")
        for sizes, statement in self.lines:
            out.append(" ".join([str(s) for s in sizes] + [statement]))
        return "\n".join(out) + "\n"


def idx(*vars_):
    """``idx(0, 1)`` -> ``[{0},{1}]``; string items are copied as they are."""
    parts = []
    for v in vars_:
        parts.append("{%d}" % v if isinstance(v, int) else v)
    return "[" + ",".join(parts) + "]"


# ---------------------------------------------------------------------------
# Kernel builders (one per family). Each takes the kernel name and a dict of
# shape parameters and returns a Kernel.
# ---------------------------------------------------------------------------


def build_elementwise(name, p, prim):
    m, n = p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [m, n]).buf("in", "y", [m, n]).buf("out", "z", [m, n])
    i = idx(0, 1)
    k.op([m, n], "z%s=x%s%sy%s" % (i, i, prim, i))
    return k


def build_add(name, p):
    return build_elementwise(name, p, "+")


def build_mul(name, p):
    return build_elementwise(name, p, "*")


def build_relu(name, p):
    m, n = p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [m, n]).buf("out", "y", [m, n])
    i = idx(0, 1)
    k.op([m, n], "y%s=max(x%s,0)" % (i, i))
    return k


def build_reducemean(name, p):
    m, n = p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [m, n]).buf("out", "y", [m])
    r = idx(0)
    k.op([m], "y%s=0" % r)
    k.op([m, n], "y%s+=x%s" % (r, idx(0, 1)))
    k.op([m], "y%s=y%s/%s" % (r, r, num(n)))
    return k


def build_matmul(name, p):
    m, kk, n = p["M"], p["K"], p["N"]
    k = Kernel(name)
    k.buf("in", "A", [m, kk]).buf("in", "B", [kk, n]).buf("out", "C", [m, n])
    c = idx(0, 1)
    k.op([m, n], "C%s=0" % c)
    k.op([m, n, kk], "C%s+=A%s*B%s" % (c, idx(0, 2), idx(2, 1)))
    return k


def build_gemm(name, p):
    m, kk, n = p["M"], p["K"], p["N"]
    k = Kernel(name)
    k.buf("in", "A", [m, kk]).buf("in", "B", [kk, n]).buf("in", "C", [m, n])
    k.buf("out", "D", [m, n])
    k.buf("tmp", "p", [m, n]).buf("tmp", "q", [m, n])
    c = idx(0, 1)
    k.op([m, n], "p%s=0" % c)
    k.op([m, n, kk], "p%s+=A%s*B%s" % (c, idx(0, 2), idx(2, 1)))
    k.op([m, n], "q%s=C%s*%s" % (c, c, num(GEMM_BETA)))
    k.op([m, n], "D%s=fma(p%s,%s,q%s)" % (c, c, num(GEMM_ALPHA), c))
    return k


def build_bmm(name, p):
    b, m, kk, n = p["B"], p["M"], p["K"], p["N"]
    k = Kernel(name)
    k.buf("in", "A", [b, m, kk]).buf("in", "B", [b, kk, n])
    k.buf("out", "C", [b, m, n])
    c = idx(0, 1, 2)
    k.op([b, m, n], "C%s=0" % c)
    k.op([b, m, n, kk], "C%s+=A%s*B%s" % (c, idx(0, 1, 3), idx(0, 3, 2)))
    return k


def conv_out(p):
    return p["H"] - p["R"] + 1, p["W"] - p["S"] + 1


def build_conv(name, p):
    n, kk, c, h, w, r, s = (p[x] for x in "NKCHWRS")
    ph, pw = conv_out(p)
    k = Kernel(name)
    k.buf("in", "x", [n, c, h, w]).buf("in", "w", [kk, c, r, s])
    k.buf("out", "y", [n, kk, ph, pw])
    y = idx(0, 1, 2, 3)
    k.op([n, kk, ph, pw], "y%s=0" % y)
    # Depths: 0 n, 1 k, 2 p (output row), 3 q (output column), 4 c, 5 r, 6 s.
    k.op([n, kk, ph, pw, c, r, s],
         "y%s+=x%s*w%s" % (y, idx(0, 4, "{2}+{5}", "{3}+{6}"), idx(1, 4, 5, 6)))
    return k


def build_batchnorm(name, p):
    n, c, h, w = p["N"], p["C"], p["H"], p["W"]
    count = n * h * w
    k = Kernel(name)
    k.buf("in", "x", [n, c, h, w]).buf("in", "gamma", [c])
    k.buf("in", "beta", [c]).buf("out", "y", [n, c, h, w])
    k.buf("tmp", "mean", [c]).buf("tmp", "d", [n, c, h, w])
    k.buf("tmp", "var", [c]).buf("tmp", "rstd", [c])
    k.buf("tmp", "xh", [n, c, h, w])
    full = [n, c, h, w]
    e = idx(0, 1, 2, 3)
    ch = idx(1)  # the channel of an element, inside a full nest
    v = idx(0)  # a channel, inside a 1-deep channel nest
    k.op([c], "mean%s=0" % v)
    k.op(full, "mean%s+=x%s" % (ch, e))
    k.op([c], "mean%s=mean%s/%s" % (v, v, num(count)))
    k.op(full, "d%s=x%s-mean%s" % (e, e, ch))
    k.op([c], "var%s=0" % v)
    k.op(full, "var%s+=d%s*d%s" % (ch, e, e))
    k.op([c], "var%s=var%s/%s" % (v, v, num(count)))
    k.op([c], "rstd%s=var%s+%s" % (v, v, num(EPS)))
    k.op([c], "rstd%s=rsqrt(rstd%s)" % (v, v))
    k.op(full, "xh%s=d%s*rstd%s" % (e, e, ch))
    k.op(full, "y%s=fma(xh%s,gamma%s,beta%s)" % (e, e, ch, ch))
    return k


def build_layernorm(name, p):
    m, n = p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [m, n]).buf("in", "gamma", [n]).buf("in", "beta", [n])
    k.buf("out", "y", [m, n])
    k.buf("tmp", "mean", [m]).buf("tmp", "d", [m, n])
    k.buf("tmp", "var", [m]).buf("tmp", "rstd", [m])
    k.buf("tmp", "xh", [m, n])
    e, r, col = idx(0, 1), idx(0), idx(1)
    k.op([m], "mean%s=0" % r)
    k.op([m, n], "mean%s+=x%s" % (r, e))
    k.op([m], "mean%s=mean%s/%s" % (r, r, num(n)))
    k.op([m, n], "d%s=x%s-mean%s" % (e, e, r))
    k.op([m], "var%s=0" % r)
    k.op([m, n], "var%s+=d%s*d%s" % (r, e, e))
    k.op([m], "var%s=var%s/%s" % (r, r, num(n)))
    k.op([m], "rstd%s=var%s+%s" % (r, r, num(EPS)))
    k.op([m], "rstd%s=rsqrt(rstd%s)" % (r, r))
    k.op([m, n], "xh%s=d%s*rstd%s" % (e, e, r))
    k.op([m, n], "y%s=fma(xh%s,gamma%s,beta%s)" % (e, e, col, col))
    return k


def build_rmsnorm(name, p):
    m, n = p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [m, n]).buf("in", "gamma", [n]).buf("out", "y", [m, n])
    k.buf("tmp", "ms", [m]).buf("tmp", "rms", [m]).buf("tmp", "xh", [m, n])
    e, r, col = idx(0, 1), idx(0), idx(1)
    k.op([m], "ms%s=0" % r)
    k.op([m, n], "ms%s+=x%s*x%s" % (r, e, e))
    k.op([m], "ms%s=ms%s/%s" % (r, r, num(n)))
    k.op([m], "rms%s=ms%s+%s" % (r, r, num(EPS)))
    k.op([m], "rms%s=rsqrt(rms%s)" % (r, r))
    k.op([m, n], "xh%s=x%s*rms%s" % (e, e, r))
    k.op([m, n], "y%s=xh%s*gamma%s" % (e, e, col))
    return k


def softmax_prefix(k, m, n):
    """max, shift, exp and sum: the steps softmax and log_softmax share."""
    e, r = idx(0, 1), idx(0)
    k.op([m], "m%s=-inf" % r)
    k.op([m, n], "m%smax=x%s" % (r, e))
    k.op([m, n], "t%s=x%s-m%s" % (e, e, r))
    k.op([m, n], "e%s=exp(t%s)" % (e, e))
    k.op([m], "s%s=0" % r)
    k.op([m, n], "s%s+=e%s" % (r, e))


def build_softmax(name, p):
    m, n = p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [m, n]).buf("out", "y", [m, n])
    k.buf("tmp", "m", [m]).buf("tmp", "t", [m, n])
    k.buf("tmp", "e", [m, n]).buf("tmp", "s", [m])
    softmax_prefix(k, m, n)
    e, r = idx(0, 1), idx(0)
    k.op([m, n], "y%s=e%s/s%s" % (e, e, r))
    return k


def build_log_softmax(name, p):
    m, n = p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [m, n]).buf("out", "y", [m, n])
    k.buf("tmp", "m", [m]).buf("tmp", "t", [m, n])
    k.buf("tmp", "e", [m, n]).buf("tmp", "s", [m]).buf("tmp", "l", [m])
    softmax_prefix(k, m, n)
    e, r = idx(0, 1), idx(0)
    k.op([m], "l%s=log(s%s)" % (r, r))
    k.op([m, n], "y%s=t%s-l%s" % (e, e, r))
    return k


def build_relu_ffn(name, p):
    n, c, h, w, o = p["N"], p["C"], p["H"], p["W"], p["O"]
    k = Kernel(name)
    k.buf("in", "x", [n, c, h, w]).buf("in", "w", [o, w]).buf("in", "b", [o])
    k.buf("out", "y", [n, c, h, o]).buf("tmp", "r", [n, c, h, w])
    e, y = idx(0, 1, 2, 3), idx(0, 1, 2, 3)
    k.op([n, c, h, w], "r%s=max(x%s,0)" % (e, e))
    k.op([n, c, h, o], "y%s=b%s" % (y, idx(3)))
    # Depths: 0 n, 1 c, 2 h, 3 o (output feature), 4 w (input feature).
    k.op([n, c, h, o, w], "y%s+=r%s*w%s" % (y, idx(0, 1, 2, 4), idx(3, 4)))
    return k


def build_swiglu(name, p):
    m, kk, n = p["M"], p["K"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [m, kk]).buf("in", "w1", [kk, n]).buf("in", "w3", [kk, n])
    k.buf("out", "y", [m, n])
    k.buf("tmp", "a", [m, n]).buf("tmp", "b", [m, n])
    k.buf("tmp", "g", [m, n]).buf("tmp", "h", [m, n])
    c = idx(0, 1)
    k.op([m, n], "a%s=0" % c)
    k.op([m, n, kk], "a%s+=x%s*w1%s" % (c, idx(0, 2), idx(2, 1)))
    k.op([m, n], "b%s=0" % c)
    k.op([m, n, kk], "b%s+=x%s*w3%s" % (c, idx(0, 2), idx(2, 1)))
    k.op([m, n], "g%s=sigmoid(a%s)" % (c, c))
    k.op([m, n], "h%s=a%s*g%s" % (c, c, c))
    k.op([m, n], "y%s=h%s*b%s" % (c, c, c))
    return k


# ---------------------------------------------------------------------------
# float64 numpy references: inputs dict (by buffer name) -> outputs dict.
# ---------------------------------------------------------------------------


def ref_add(i, p):
    return {"z": i["x"] + i["y"]}


def ref_mul(i, p):
    return {"z": i["x"] * i["y"]}


def ref_relu(i, p):
    return {"y": np.maximum(i["x"], 0.0)}


def ref_reducemean(i, p):
    return {"y": i["x"].mean(axis=1)}


def ref_matmul(i, p):
    return {"C": i["A"] @ i["B"]}


def ref_gemm(i, p):
    return {"D": GEMM_ALPHA * (i["A"] @ i["B"]) + GEMM_BETA * i["C"]}


def ref_bmm(i, p):
    return {"C": np.matmul(i["A"], i["B"])}


def ref_conv(i, p):
    x, w = i["x"], i["w"]
    ph, pw = conv_out(p)
    y = np.zeros((p["N"], p["K"], ph, pw))
    for r in range(p["R"]):
        for s in range(p["S"]):
            patch = x[:, :, r:r + ph, s:s + pw]  # [N, C, P, Q]
            y += np.einsum("ncpq,kc->nkpq", patch, w[:, :, r, s])
    return {"y": y}


def ref_batchnorm(i, p):
    x = i["x"]
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True)
    g = i["gamma"].reshape(1, -1, 1, 1)
    b = i["beta"].reshape(1, -1, 1, 1)
    return {"y": (x - mean) / np.sqrt(var + EPS) * g + b}


def ref_layernorm(i, p):
    x = i["x"]
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return {"y": (x - mean) / np.sqrt(var + EPS) * i["gamma"] + i["beta"]}


def ref_rmsnorm(i, p):
    x = i["x"]
    ms = (x * x).mean(axis=1, keepdims=True)
    return {"y": x / np.sqrt(ms + EPS) * i["gamma"]}


def ref_softmax(i, p):
    t = i["x"] - i["x"].max(axis=1, keepdims=True)
    e = np.exp(t)
    return {"y": e / e.sum(axis=1, keepdims=True)}


def ref_log_softmax(i, p):
    t = i["x"] - i["x"].max(axis=1, keepdims=True)
    return {"y": t - np.log(np.exp(t).sum(axis=1, keepdims=True))}


def ref_relu_ffn(i, p):
    r = np.maximum(i["x"], 0.0)
    return {"y": np.einsum("nchw,ow->ncho", r, i["w"]) + i["b"]}


def ref_swiglu(i, p):
    a = i["x"] @ i["w1"]
    b = i["x"] @ i["w3"]
    return {"y": a / (1.0 + np.exp(-a)) * b}


# ---------------------------------------------------------------------------
# The suite
# ---------------------------------------------------------------------------


class Entry:
    def __init__(self, name, build, ref, full, small):
        self.name = name
        self.build = build
        self.ref = ref
        self.full = dict(full)
        self.small = dict(small)


def _shape(keys, values):
    return dict(zip(keys, values))


SUITE = [
    Entry("add", build_add, ref_add,
          _shape("MN", (3072, 4096)), _shape("MN", (5, 7))),
    Entry("batchnorm_8x3x2048x2048", build_batchnorm, ref_batchnorm,
          _shape("NCHW", (8, 3, 2048, 2048)), _shape("NCHW", (2, 3, 4, 5))),
    Entry("batchnorm_8x64x300x300", build_batchnorm, ref_batchnorm,
          _shape("NCHW", (8, 64, 300, 300)), _shape("NCHW", (3, 4, 5, 2))),
    Entry("bmm", build_bmm, ref_bmm,
          _shape("BMKN", (192, 256, 128, 256)), _shape("BMKN", (3, 4, 5, 6))),
    Entry("conv_8x10x3x512x512x5", build_conv, ref_conv,
          _shape("NKCHWRS", (8, 10, 3, 512, 512, 5, 5)),
          _shape("NKCHWRS", (2, 3, 2, 7, 8, 3, 2))),
    Entry("conv_8x64x64x56x56x3", build_conv, ref_conv,
          _shape("NKCHWRS", (8, 64, 64, 56, 56, 3, 3)),
          _shape("NKCHWRS", (2, 4, 3, 6, 5, 2, 3))),
    Entry("layernorm_16384x1024", build_layernorm, ref_layernorm,
          _shape("MN", (16384, 1024)), _shape("MN", (6, 10))),
    Entry("layernorm_4096x4096", build_layernorm, ref_layernorm,
          _shape("MN", (4096, 4096)), _shape("MN", (5, 12))),
    Entry("matmul", build_matmul, ref_matmul,
          _shape("MKN", (768, 1024, 1024)), _shape("MKN", (4, 6, 5))),
    Entry("mul", build_mul, ref_mul,
          _shape("MN", (6, 14336)), _shape("MN", (3, 11))),
    Entry("reducemean", build_reducemean, ref_reducemean,
          _shape("MN", (4096, 4096)), _shape("MN", (5, 8))),
    Entry("relu", build_relu, ref_relu,
          _shape("MN", (4096, 4096)), _shape("MN", (6, 9))),
    Entry("relu_ffn", build_relu_ffn, ref_relu_ffn,
          _shape("NCHWO", (8, 64, 112, 112, 112)),
          _shape("NCHWO", (2, 3, 4, 5, 6))),
    Entry("rmsnorm", build_rmsnorm, ref_rmsnorm,
          _shape("MN", (3072, 4096)), _shape("MN", (5, 9))),
    Entry("softmax", build_softmax, ref_softmax,
          _shape("MN", (24576, 512)), _shape("MN", (6, 10))),
    Entry("swiglu", build_swiglu, ref_swiglu,
          _shape("MKN", (256, 4096, 448)), _shape("MKN", (4, 6, 5))),
    Entry("gemm", build_gemm, ref_gemm,
          _shape("MKN", (1024, 1024, 1024)), _shape("MKN", (5, 4, 6))),
    Entry("log_softmax", build_log_softmax, ref_log_softmax,
          _shape("MN", (24576, 512)), _shape("MN", (7, 10))),
]

BY_NAME = {e.name: e for e in SUITE}


def names():
    return [e.name for e in SUITE]


def entry(name):
    if name not in BY_NAME:
        raise KeyError("unknown kernel '%s' (known: %s)"
                       % (name, ", ".join(names())))
    return BY_NAME[name]


def params(name, small=False, overrides=None):
    """The shape parameters of kernel ``name`` (full or small), with
    ``overrides`` (a dict or a ``k=v,...`` string) applied."""
    e = entry(name)
    p = dict(e.small if small else e.full)
    if isinstance(overrides, str):
        overrides = parse_shape(overrides)
    for key, value in (overrides or {}).items():
        if key not in p:
            raise KeyError("kernel '%s' has no shape parameter '%s' (has: %s)"
                           % (name, key, ", ".join(p)))
        p[key] = int(value)
    if "R" in p and (p["R"] > p["H"] or p["S"] > p["W"]):
        raise ValueError("conv filter larger than its input: %s" % p)
    return p


def parse_shape(text):
    out = {}
    for item in filter(None, text.split(",")):
        if "=" not in item:
            raise ValueError("expected k=v in --shape, found '%s'" % item)
        key, value = item.split("=", 1)
        out[key.strip()] = int(value)
    return out


def kernel(name, small=False, overrides=None):
    """The Kernel object of ``name`` at the given shape."""
    return entry(name).build(name, params(name, small, overrides))


def emit(name, small=False, overrides=None):
    """The canonical text form of kernel ``name``."""
    return kernel(name, small, overrides).text()


def reference(name, inputs, small=False, overrides=None, p=None):
    """float64 outputs of kernel ``name`` from ``inputs`` (buffer name ->
    array in the logical shape), as a dict buffer name -> array."""
    if p is None:
        p = params(name, small, overrides)
    inputs = {k: np.asarray(v, dtype=np.float64) for k, v in inputs.items()}
    return entry(name).ref(inputs, p)


def write(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for name in names():
        path = os.path.join(out_dir, name + ".pd")
        with open(path, "w", newline="\n") as f:
            f.write(emit(name))
    return [os.path.join(out_dir, n + ".pd") for n in names()]


def _selftest():
    """Checks each builder against its reference on random data with a
    tiny pure-numpy evaluation of the text (independent of the C++ tools)."""
    rng = np.random.default_rng(0)
    for name in names():
        k = kernel(name, small=True)
        arrays = {}
        for role, bname, dims in k.buffers:
            if role == "in":
                arrays[bname] = rng.uniform(-1, 1, dims)
            else:
                arrays[bname] = np.full(dims, np.nan)
        _evaluate(k, arrays)
        ref = reference(name, {n: arrays[n] for n, _ in k.roles("in")},
                        small=True)
        for oname, _ in k.roles("out"):
            err = np.max(np.abs(arrays[oname] - ref[oname]))
            scale = max(np.max(np.abs(ref[oname])), 1e-30)
            status = "ok" if err <= 1e-12 * scale else "MISMATCH"
            print("%-26s %-3s rel_err=%.3g %s" % (name, oname, err / scale,
                                                   status))


def _evaluate(k, arrays):
    """A slow scalar evaluator for the subset of the text form suite.py emits
    (top-level nests, one statement each). Only used by ``selftest``."""
    import itertools
    import math
    import re

    def index_value(expr, iv):
        return eval(re.sub(r"\{(\d+)\}", lambda m: str(iv[int(m.group(1))]),
                           expr))

    def access(text, iv):
        m = re.fullmatch(r"([A-Za-z_]\w*)\[(.*)\]", text)
        name, parts = m.group(1), m.group(2).split(",")
        return name, tuple(index_value(x, iv) for x in parts)

    def operand(text, iv):
        if "[" in text:
            name, ix = access(text, iv)
            v = arrays[name][ix]
            assert v == v, "read of unwritten %s%s" % (name, ix)
            return v
        if text.startswith("{"):
            return float(iv[int(text[1:-1])])
        return float(text)

    funcs = {"max": max, "min": min, "exp": math.exp, "log": math.log,
             "rsqrt": lambda a: 1.0 / math.sqrt(a), "sqrt": math.sqrt,
             "sigmoid": lambda a: 1.0 / (1.0 + math.exp(-a)),
             "fma": lambda a, b, c: a * b + c, "abs": abs, "tanh": math.tanh}
    binops = {"+": lambda a, b: a + b, "-": lambda a, b: a - b,
              "*": lambda a, b: a * b, "/": lambda a, b: a / b}
    stmt_re = re.compile(r"([A-Za-z_]\w*\[[^\]]*\])(\+=|\*=|max=|min=|=)(.*)")
    for sizes, stmt in k.lines:
        lhs, assign, rhs = stmt_re.fullmatch(stmt).groups()
        fm = re.fullmatch(r"(\w+)\((.*)\)", rhs)
        if fm:
            args = re.findall(r"[A-Za-z_]\w*\[[^\]]*\]|[^,]+", fm.group(2))
            fn = lambda iv: funcs[fm.group(1)](*(operand(a, iv) for a in args))
        else:
            m = re.fullmatch(r"(-?(?:[A-Za-z_]\w*\[[^\]]*\]|[^-+*/]+))"
                             r"(?:([-+*/])(.*))?", rhs)
            a, op, b = m.groups()
            if op is None:
                fn = lambda iv, a=a: operand(a, iv)
            else:
                fn = lambda iv, a=a, b=b, op=op: binops[op](operand(a, iv),
                                                             operand(b, iv))
        for iv in itertools.product(*(range(s) for s in sizes)):
            name, ix = access(lhs, iv)
            v = fn(iv)
            if assign == "=":
                arrays[name][ix] = v
            else:
                old = arrays[name][ix]
                assert old == old, "update of unwritten %s%s" % (name, ix)
                arrays[name][ix] = {"+=": old + v, "*=": old * v,
                                    "max=": max(old, v),
                                    "min=": min(old, v)}[assign]


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="The PerfDojo naive kernel suite (text form).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="print the kernel names")
    w = sub.add_parser("write", help="regenerate the full-shape .pd files")
    w.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)),
                   help="output directory (default: the kernels/ folder)")
    e = sub.add_parser("emit", help="print one kernel's text form")
    e.add_argument("name")
    e.add_argument("--small", action="store_true",
                   help="reduced shape with the same structure")
    e.add_argument("--shape", default="",
                   help="override shape parameters, e.g. M=8,N=16")
    sub.add_parser("params", help="print each kernel's full and small shape")
    sub.add_parser("selftest",
                   help="evaluate each small kernel in Python vs its reference")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "list":
            print("\n".join(names()))
        elif args.cmd == "write":
            for path in write(args.out):
                print(path)
        elif args.cmd == "emit":
            sys.stdout.write(emit(args.name, args.small, args.shape))
        elif args.cmd == "params":
            for x in SUITE:
                print("%-26s full %s small %s" % (x.name, x.full, x.small))
        elif args.cmd == "selftest":
            _selftest()
    except (KeyError, ValueError) as err:
        msg = err.args[0] if err.args else str(err)
        print("suite.py: error: %s" % msg, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
