#!/usr/bin/env python3
"""The PerfDojo benchmark suite: naive kernels in the text form.

This module generates the naive text-form kernels in ``kernels/*.pd`` (the
paper's Table 3 set at its shapes, plus ``gemm`` and ``log_softmax``) and
holds a float64 numpy reference for each of them. Every kernel can also be
emitted at a reduced shape with the same structure, which the interpreter runs
in well under a second (``test/Kernels/check_reference.py`` uses that).

It also holds a second set, the unseen set (``UNSEEN``, written to
``kernels/unseen/*.pd``): kernels written under the same conventions that are
never used to tune the optimization heuristics, only to judge whether they
generalize (report their results separately). Every subcommand takes
``--set suite|unseen`` (default ``suite``).

Usage::

    python3 kernels/suite.py list [--set unseen]
    python3 kernels/suite.py write [--set unseen] [--out DIR]
    python3 kernels/suite.py emit NAME [--set unseen] [--small] [--shape k=v,...]
    python3 kernels/suite.py params [--set unseen]
    python3 kernels/suite.py selftest [--set unseen]

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


def add_normalization(k, stats, full, e, stat_of, stat, chan, count):
    """Appends the normalization steps shared by batch, group and instance
    norms: ``stats`` the sizes of a nest over the statistics, ``stat`` one
    statistic inside it, ``full`` the sizes of a nest over the elements,
    ``e`` an element inside it and ``stat_of`` its statistic, ``chan`` its
    channel (gamma and beta), ``count`` the elements per statistic."""
    k.op(stats, "mean%s=0" % stat)
    k.op(full, "mean%s+=x%s" % (stat_of, e))
    k.op(stats, "mean%s=mean%s/%s" % (stat, stat, num(count)))
    k.op(full, "d%s=x%s-mean%s" % (e, e, stat_of))
    k.op(stats, "var%s=0" % stat)
    k.op(full, "var%s+=d%s*d%s" % (stat_of, e, e))
    k.op(stats, "var%s=var%s/%s" % (stat, stat, num(count)))
    k.op(stats, "rstd%s=var%s+%s" % (stat, stat, num(EPS)))
    k.op(stats, "rstd%s=rsqrt(rstd%s)" % (stat, stat))
    k.op(full, "xh%s=d%s*rstd%s" % (e, e, stat_of))
    k.op(full, "y%s=fma(xh%s,gamma%s,beta%s)" % (e, e, chan, chan))


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
    add_normalization(k, [c], full, e, ch, v, ch, count)
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
# The unseen set: kernels written like the suite's, never used to tune the
# optimization heuristics (kernels/unseen/*.pd; see kernels/README.md).
# ---------------------------------------------------------------------------

GELU_C = 0.7978845608  # sqrt(2/pi), as the tanh approximation writes it
GELU_A = 0.044715


def build_gelu(name, p):
    m, n = p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [m, n]).buf("out", "y", [m, n])
    for t in ("x2", "x3", "u", "v", "t", "h"):
        k.buf("tmp", t, [m, n])
    e = idx(0, 1)
    k.op([m, n], "x2%s=x%s*x%s" % (e, e, e))
    k.op([m, n], "x3%s=x2%s*x%s" % (e, e, e))
    k.op([m, n], "u%s=fma(x3%s,%s,x%s)" % (e, e, num(GELU_A), e))
    k.op([m, n], "v%s=u%s*%s" % (e, e, num(GELU_C)))
    k.op([m, n], "t%s=tanh(v%s)" % (e, e))
    k.op([m, n], "h%s=fma(t%s,0.5,0.5)" % (e, e))
    k.op([m, n], "y%s=x%s*h%s" % (e, e, e))
    return k


def build_silu(name, p):
    m, n = p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [m, n]).buf("out", "y", [m, n]).buf("tmp", "g", [m, n])
    e = idx(0, 1)
    k.op([m, n], "g%s=sigmoid(x%s)" % (e, e))
    k.op([m, n], "y%s=x%s*g%s" % (e, e, e))
    return k


def build_bias_relu(name, p):
    n, c, h, w = p["N"], p["C"], p["H"], p["W"]
    k = Kernel(name)
    k.buf("in", "x", [n, c, h, w]).buf("in", "b", [c])
    k.buf("out", "y", [n, c, h, w]).buf("tmp", "t", [n, c, h, w])
    e = idx(0, 1, 2, 3)
    k.op([n, c, h, w], "t%s=x%s+b%s" % (e, e, idx(1)))
    k.op([n, c, h, w], "y%s=max(t%s,0)" % (e, e))
    return k


def build_transpose(name, p):
    m, n = p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [m, n]).buf("out", "y", [n, m])
    # Depths: 0 j (a row of y), 1 i (a column of y).
    k.op([n, m], "y%s=x%s" % (idx(0, 1), idx(1, 0)))
    return k


def build_transpose_add(name, p):
    m, n = p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [m, n]).buf("in", "y", [n, m]).buf("out", "z", [m, n])
    e = idx(0, 1)
    k.op([m, n], "z%s=x%s+y%s" % (e, e, idx(1, 0)))
    return k


def pool_out(p, window, stride):
    return ((p["H"] - window) // stride + 1, (p["W"] - window) // stride + 1)


def build_maxpool2x2(name, p):
    n, c = p["N"], p["C"]
    ph, pw = pool_out(p, 2, 2)
    k = Kernel(name)
    k.buf("in", "x", [n, c, p["H"], p["W"]]).buf("out", "y", [n, c, ph, pw])
    y = idx(0, 1, 2, 3)
    k.op([n, c, ph, pw], "y%s=-inf" % y)
    # Depths: 0 n, 1 c, 2 p (output row), 3 q (output column), 4 r, 5 s.
    k.op([n, c, ph, pw, 2, 2],
         "y%smax=x%s" % (y, idx(0, 1, "{2}*2+{4}", "{3}*2+{5}")))
    return k


def build_avgpool3x3(name, p):
    n, c = p["N"], p["C"]
    ph, pw = pool_out(p, 3, 1)
    k = Kernel(name)
    k.buf("in", "x", [n, c, p["H"], p["W"]]).buf("out", "y", [n, c, ph, pw])
    y = idx(0, 1, 2, 3)
    k.op([n, c, ph, pw], "y%s=0" % y)
    # Depths: 0 n, 1 c, 2 p (output row), 3 q (output column), 4 r, 5 s.
    k.op([n, c, ph, pw, 3, 3],
         "y%s+=x%s" % (y, idx(0, 1, "{2}+{4}", "{3}+{5}")))
    k.op([n, c, ph, pw], "y%s=y%s/9" % (y, y))
    return k


def build_groupnorm(name, p):
    n, c, g, h, w = p["N"], p["C"], p["G"], p["H"], p["W"]
    cg = c // g
    count = cg * h * w
    k = Kernel(name)
    k.buf("in", "x", [n, c, h, w]).buf("in", "gamma", [c])
    k.buf("in", "beta", [c]).buf("out", "y", [n, c, h, w])
    k.buf("tmp", "mean", [n, g]).buf("tmp", "d", [n, c, h, w])
    k.buf("tmp", "var", [n, g]).buf("tmp", "rstd", [n, g])
    k.buf("tmp", "xh", [n, c, h, w])
    # Full steps: depths 0 n, 1 g (group), 2 c (channel in the group), 3 h,
    # 4 w; the channel is g*(C/G)+c.
    full = [n, g, cg, h, w]
    ch = "{1}*%d+{2}" % cg if cg > 1 else "{1}+{2}"
    e = idx(0, ch, 3, 4)
    grp = idx(0, 1)  # the (n, group) of an element, inside a full nest
    chan = idx(ch)  # its channel
    s = idx(0, 1)  # an (n, group), inside a 2-deep nest
    add_normalization(k, [n, g], full, e, grp, s, chan, count)
    return k


def build_instancenorm(name, p):
    n, c, h, w = p["N"], p["C"], p["H"], p["W"]
    count = h * w
    k = Kernel(name)
    k.buf("in", "x", [n, c, h, w]).buf("in", "gamma", [c])
    k.buf("in", "beta", [c]).buf("out", "y", [n, c, h, w])
    k.buf("tmp", "mean", [n, c]).buf("tmp", "d", [n, c, h, w])
    k.buf("tmp", "var", [n, c]).buf("tmp", "rstd", [n, c])
    k.buf("tmp", "xh", [n, c, h, w])
    full = [n, c, h, w]
    e = idx(0, 1, 2, 3)
    nc = idx(0, 1)  # the (n, c) of an element, inside a full nest, and an
    #                 (n, c) inside a 2-deep nest
    ch = idx(1)
    add_normalization(k, [n, c], full, e, nc, nc, ch, count)
    return k


def build_depthwise_conv(name, p):
    n, c, h, w, r, s = (p[x] for x in "NCHWRS")
    ph, pw = conv_out(p)
    k = Kernel(name)
    k.buf("in", "x", [n, c, h, w]).buf("in", "w", [c, r, s])
    k.buf("out", "y", [n, c, ph, pw])
    y = idx(0, 1, 2, 3)
    k.op([n, c, ph, pw], "y%s=0" % y)
    # Depths: 0 n, 1 c, 2 p (output row), 3 q (output column), 4 r, 5 s.
    k.op([n, c, ph, pw, r, s],
         "y%s+=x%s*w%s" % (y, idx(0, 1, "{2}+{4}", "{3}+{5}"), idx(1, 4, 5)))
    return k


def build_attention(name, p):
    b, l, d = p["B"], p["L"], p["D"]
    k = Kernel(name)
    k.buf("in", "Q", [b, l, d]).buf("in", "K", [b, l, d])
    k.buf("in", "V", [b, l, d]).buf("out", "O", [b, l, d])
    k.buf("tmp", "qk", [b, l, l]).buf("tmp", "a", [b, l, l])
    k.buf("tmp", "m", [b, l]).buf("tmp", "t", [b, l, l])
    k.buf("tmp", "e", [b, l, l]).buf("tmp", "s", [b, l])
    k.buf("tmp", "pr", [b, l, l])
    sc, r, o = idx(0, 1, 2), idx(0, 1), idx(0, 1, 2)
    # Scores: depths 0 b, 1 i (query), 2 j (key), 3 d.
    k.op([b, l, l], "qk%s=0" % sc)
    k.op([b, l, l, d], "qk%s+=Q%s*K%s" % (sc, idx(0, 1, 3), idx(0, 2, 3)))
    k.op([b, l, l], "a%s=qk%s*%s" % (sc, sc, num(1.0 / np.sqrt(d))))
    # Softmax over j, as the suite's softmax.
    k.op([b, l], "m%s=-inf" % r)
    k.op([b, l, l], "m%smax=a%s" % (r, sc))
    k.op([b, l, l], "t%s=a%s-m%s" % (sc, sc, r))
    k.op([b, l, l], "e%s=exp(t%s)" % (sc, sc))
    k.op([b, l], "s%s=0" % r)
    k.op([b, l, l], "s%s+=e%s" % (r, sc))
    k.op([b, l, l], "pr%s=e%s/s%s" % (sc, sc, r))
    # Output: depths 0 b, 1 i, 2 d, 3 j.
    k.op([b, l, d], "O%s=0" % o)
    k.op([b, l, d, l], "O%s+=pr%s*V%s" % (o, idx(0, 1, 3), idx(0, 3, 2)))
    return k


def build_l2norm(name, p):
    m, n = p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [m, n]).buf("out", "y", [m, n])
    k.buf("tmp", "ss", [m]).buf("tmp", "rn", [m])
    e, r = idx(0, 1), idx(0)
    k.op([m], "ss%s=0" % r)
    k.op([m, n], "ss%s+=x%s*x%s" % (r, e, e))
    k.op([m], "rn%s=ss%s+%s" % (r, r, num(EPS)))
    k.op([m], "rn%s=rsqrt(rn%s)" % (r, r))
    k.op([m, n], "y%s=x%s*rn%s" % (e, e, r))
    return k


def build_colsum(name, p):
    b, m, n = p["B"], p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "x", [b, m, n]).buf("out", "y", [b, n])
    y = idx(0, 1)
    k.op([b, n], "y%s=0" % y)
    # Depths: 0 b, 1 n (the kept column), 2 m (the summed axis).
    k.op([b, n, m], "y%s+=x%s" % (y, idx(0, 2, 1)))
    return k


def build_gemv(name, p):
    m, n = p["M"], p["N"]
    k = Kernel(name)
    k.buf("in", "A", [m, n]).buf("in", "x", [n]).buf("out", "y", [m])
    k.op([m], "y%s=0" % idx(0))
    k.op([m, n], "y%s+=A%s*x%s" % (idx(0), idx(0, 1), idx(1)))
    return k


def ref_gelu(i, p):
    x = i["x"]
    return {"y": 0.5 * x * (1.0 + np.tanh(GELU_C * (x + GELU_A * x ** 3)))}


def ref_silu(i, p):
    x = i["x"]
    return {"y": x / (1.0 + np.exp(-x))}


def ref_bias_relu(i, p):
    return {"y": np.maximum(i["x"] + i["b"].reshape(1, -1, 1, 1), 0.0)}


def ref_transpose(i, p):
    return {"y": i["x"].T.copy()}


def ref_transpose_add(i, p):
    return {"z": i["x"] + i["y"].T}


def ref_maxpool2x2(i, p):
    x = i["x"]
    ph, pw = pool_out(p, 2, 2)
    x = x[:, :, :2 * ph, :2 * pw]
    n, c = x.shape[:2]
    return {"y": x.reshape(n, c, ph, 2, pw, 2).max(axis=(3, 5))}


def ref_avgpool3x3(i, p):
    x = i["x"]
    ph, pw = pool_out(p, 3, 1)
    y = np.zeros(x.shape[:2] + (ph, pw))
    for r in range(3):
        for s in range(3):
            y += x[:, :, r:r + ph, s:s + pw]
    return {"y": y / 9.0}


def ref_groupnorm(i, p):
    x = i["x"]
    n, c, h, w = x.shape
    xg = x.reshape(n, p["G"], c // p["G"], h, w)
    mean = xg.mean(axis=(2, 3, 4), keepdims=True)
    var = ((xg - mean) ** 2).mean(axis=(2, 3, 4), keepdims=True)
    xh = ((xg - mean) / np.sqrt(var + EPS)).reshape(n, c, h, w)
    g = i["gamma"].reshape(1, -1, 1, 1)
    b = i["beta"].reshape(1, -1, 1, 1)
    return {"y": xh * g + b}


def ref_instancenorm(i, p):
    x = i["x"]
    mean = x.mean(axis=(2, 3), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=(2, 3), keepdims=True)
    g = i["gamma"].reshape(1, -1, 1, 1)
    b = i["beta"].reshape(1, -1, 1, 1)
    return {"y": (x - mean) / np.sqrt(var + EPS) * g + b}


def ref_depthwise_conv(i, p):
    x, w = i["x"], i["w"]
    ph, pw = conv_out(p)
    y = np.zeros(x.shape[:2] + (ph, pw))
    for r in range(p["R"]):
        for s in range(p["S"]):
            y += x[:, :, r:r + ph, s:s + pw] * w[:, r, s].reshape(1, -1, 1, 1)
    return {"y": y}


def ref_attention(i, p):
    q, k, v = i["Q"], i["K"], i["V"]
    a = np.matmul(q, k.transpose(0, 2, 1)) * (1.0 / np.sqrt(p["D"]))
    e = np.exp(a - a.max(axis=2, keepdims=True))
    return {"O": np.matmul(e / e.sum(axis=2, keepdims=True), v)}


def ref_l2norm(i, p):
    x = i["x"]
    return {"y": x / np.sqrt((x * x).sum(axis=1, keepdims=True) + EPS)}


def ref_colsum(i, p):
    return {"y": i["x"].sum(axis=1)}


def ref_gemv(i, p):
    return {"y": i["A"] @ i["x"]}


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

# The unseen set: the same conventions, never used to tune the heuristics
# (judges whether they generalize). Small shapes use a different size per
# axis, so that a swapped axis shows up.
UNSEEN = [
    Entry("gelu", build_gelu, ref_gelu,
          _shape("MN", (4096, 4096)), _shape("MN", (5, 8))),
    Entry("silu", build_silu, ref_silu,
          _shape("MN", (4096, 4096)), _shape("MN", (6, 7))),
    Entry("bias_relu", build_bias_relu, ref_bias_relu,
          _shape("NCHW", (8, 64, 112, 112)), _shape("NCHW", (2, 3, 4, 5))),
    Entry("transpose", build_transpose, ref_transpose,
          _shape("MN", (4096, 4096)), _shape("MN", (5, 7))),
    Entry("transpose_add", build_transpose_add, ref_transpose_add,
          _shape("MN", (4096, 4096)), _shape("MN", (6, 4))),
    Entry("maxpool2x2", build_maxpool2x2, ref_maxpool2x2,
          _shape("NCHW", (8, 64, 112, 112)), _shape("NCHW", (2, 3, 8, 10))),
    Entry("avgpool3x3", build_avgpool3x3, ref_avgpool3x3,
          _shape("NCHW", (8, 64, 56, 56)), _shape("NCHW", (2, 3, 7, 6))),
    Entry("groupnorm", build_groupnorm, ref_groupnorm,
          _shape("NCGHW", (8, 64, 8, 56, 56)),
          _shape("NCGHW", (2, 12, 3, 5, 6))),
    Entry("depthwise_conv", build_depthwise_conv, ref_depthwise_conv,
          _shape("NCHWRS", (8, 64, 112, 112, 3, 3)),
          _shape("NCHWRS", (2, 4, 8, 6, 3, 2))),
    Entry("attention", build_attention, ref_attention,
          _shape("BLD", (16, 512, 64)), _shape("BLD", (2, 5, 3))),
    Entry("l2norm", build_l2norm, ref_l2norm,
          _shape("MN", (4096, 1024)), _shape("MN", (5, 9))),
    Entry("colsum", build_colsum, ref_colsum,
          _shape("BMN", (64, 1024, 256)), _shape("BMN", (3, 5, 4))),
    Entry("gemv", build_gemv, ref_gemv,
          _shape("MN", (8192, 4096)), _shape("MN", (5, 7))),
    Entry("instancenorm", build_instancenorm, ref_instancenorm,
          _shape("NCHW", (8, 64, 56, 56)), _shape("NCHW", (2, 3, 5, 4))),
]

SETS = {"suite": SUITE, "unseen": UNSEEN}
BY_NAME = {e.name: e for e in SUITE}
BY_SET = {s: {e.name: e for e in table} for s, table in SETS.items()}
assert not set(BY_SET["suite"]) & set(BY_SET["unseen"])


def table(kernel_set="suite"):
    """The Entry list of ``kernel_set`` (``suite`` or ``unseen``)."""
    if kernel_set not in SETS:
        raise KeyError("unknown kernel set '%s' (known: %s)"
                       % (kernel_set, ", ".join(SETS)))
    return SETS[kernel_set]


def names(kernel_set="suite"):
    return [e.name for e in table(kernel_set)]


def entry(name, kernel_set="suite"):
    table(kernel_set)
    if name not in BY_SET[kernel_set]:
        raise KeyError("unknown kernel '%s' (known: %s)"
                       % (name, ", ".join(names(kernel_set))))
    return BY_SET[kernel_set][name]


def params(name, small=False, overrides=None, kernel_set="suite"):
    """The shape parameters of kernel ``name`` (full or small), with
    ``overrides`` (a dict or a ``k=v,...`` string) applied."""
    e = entry(name, kernel_set)
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
    if e.build is build_maxpool2x2 and (p["H"] < 2 or p["W"] < 2):
        raise ValueError("2x2 pooling window larger than its input: %s" % p)
    if e.build is build_avgpool3x3 and (p["H"] < 3 or p["W"] < 3):
        raise ValueError("3x3 pooling window larger than its input: %s" % p)
    if "G" in p and p["C"] % p["G"]:
        raise ValueError("C is not a multiple of G: %s" % p)
    return p


def parse_shape(text):
    out = {}
    for item in filter(None, text.split(",")):
        if "=" not in item:
            raise ValueError("expected k=v in --shape, found '%s'" % item)
        key, value = item.split("=", 1)
        out[key.strip()] = int(value)
    return out


def kernel(name, small=False, overrides=None, kernel_set="suite"):
    """The Kernel object of ``name`` at the given shape."""
    return entry(name, kernel_set).build(
        name, params(name, small, overrides, kernel_set))


def emit(name, small=False, overrides=None, kernel_set="suite"):
    """The canonical text form of kernel ``name``."""
    return kernel(name, small, overrides, kernel_set).text()


def reference(name, inputs, small=False, overrides=None, p=None,
              kernel_set="suite"):
    """float64 outputs of kernel ``name`` from ``inputs`` (buffer name ->
    array in the logical shape), as a dict buffer name -> array."""
    if p is None:
        p = params(name, small, overrides, kernel_set)
    inputs = {k: np.asarray(v, dtype=np.float64) for k, v in inputs.items()}
    return entry(name, kernel_set).ref(inputs, p)


def default_dir(kernel_set="suite"):
    """Where the .pd files of ``kernel_set`` live: kernels/ for the suite,
    kernels/unseen/ for the unseen set."""
    here = os.path.dirname(os.path.abspath(__file__))
    table(kernel_set)
    return here if kernel_set == "suite" else os.path.join(here, kernel_set)


def write(out_dir, kernel_set="suite"):
    os.makedirs(out_dir, exist_ok=True)
    for name in names(kernel_set):
        path = os.path.join(out_dir, name + ".pd")
        with open(path, "w", newline="\n") as f:
            f.write(emit(name, kernel_set=kernel_set))
    return [os.path.join(out_dir, n + ".pd") for n in names(kernel_set)]


def _selftest(kernel_set="suite"):
    """Checks each builder against its reference on random data with a
    tiny pure-numpy evaluation of the text (independent of the C++ tools).
    Returns the number of mismatches."""
    rng = np.random.default_rng(0)
    mismatches = 0
    for name in names(kernel_set):
        k = kernel(name, small=True, kernel_set=kernel_set)
        arrays = {}
        for role, bname, dims in k.buffers:
            if role == "in":
                arrays[bname] = rng.uniform(-1, 1, dims)
            else:
                arrays[bname] = np.full(dims, np.nan)
        _evaluate(k, arrays)
        ref = reference(name, {n: arrays[n] for n, _ in k.roles("in")},
                        small=True, kernel_set=kernel_set)
        for oname, _ in k.roles("out"):
            err = np.max(np.abs(arrays[oname] - ref[oname]))
            scale = max(np.max(np.abs(ref[oname])), 1e-30)
            status = "ok" if err <= 1e-12 * scale else "MISMATCH"
            mismatches += status != "ok"
            print("%-26s %-3s rel_err=%.3g %s" % (name, oname, err / scale,
                                                   status))
    return mismatches


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
    # Every subcommand works on one kernel set: the suite (the default) or
    # the unseen set, which is never used to tune the heuristics.
    sets = argparse.ArgumentParser(add_help=False)
    sets.add_argument("--set", dest="kernel_set", default="suite",
                      choices=sorted(SETS),
                      help="the kernel set (default: suite)")
    sub.add_parser("list", parents=[sets], help="print the kernel names")
    w = sub.add_parser("write", parents=[sets],
                       help="regenerate the full-shape .pd files")
    w.add_argument("--out", default=None,
                   help="output directory (default: the kernels/ folder, "
                        "kernels/unseen/ for --set unseen)")
    e = sub.add_parser("emit", parents=[sets],
                       help="print one kernel's text form")
    e.add_argument("name")
    e.add_argument("--small", action="store_true",
                   help="reduced shape with the same structure")
    e.add_argument("--shape", default="",
                   help="override shape parameters, e.g. M=8,N=16")
    sub.add_parser("params", parents=[sets],
                   help="print each kernel's full and small shape")
    sub.add_parser("selftest", parents=[sets],
                   help="evaluate each small kernel in Python vs its reference")
    args = ap.parse_args(argv)
    kset = args.kernel_set
    try:
        if args.cmd == "list":
            print("\n".join(names(kset)))
        elif args.cmd == "write":
            out = args.out if args.out is not None else default_dir(kset)
            for path in write(out, kset):
                print(path)
        elif args.cmd == "emit":
            sys.stdout.write(emit(args.name, args.small, args.shape, kset))
        elif args.cmd == "params":
            for x in table(kset):
                print("%-26s full %s small %s" % (x.name, x.full, x.small))
        elif args.cmd == "selftest":
            if _selftest(kset):
                return 1
    except (KeyError, ValueError) as err:
        msg = err.args[0] if err.args else str(err)
        print("suite.py: error: %s" % msg, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
