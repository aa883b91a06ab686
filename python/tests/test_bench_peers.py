"""bench/peers/pd_to_te.py: what it reads of the text form (no TVM needed).

The translation itself (needing TVM) is checked against the interpreter on
every kernel by bench/peers/check_te.py; here, the parser that feeds it:
it takes every naive kernel of both sets and refuses, naming the line,
what it cannot translate.
"""

import glob
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import pd_to_te  # noqa: E402


@pytest.mark.parametrize("path", sorted(
    glob.glob(os.path.join(ROOT, "kernels", "*.pd")) +
    glob.glob(os.path.join(ROOT, "kernels", "unseen", "*.pd"))))
def test_reads_every_naive_kernel(path):
    kernel = pd_to_te.parse(open(path).read(), path)
    assert kernel.statements
    assert any(role == "out" for role, _, _ in kernel.buffers.values())


def test_reads_buffers_and_statements():
    kernel = pd_to_te.parse(
        "kernel k\nin x f32 [4, 8] heap\nout y f32 [4] heap\n"
        "4 y[{0}]=0\n4 8 y[{0}]+=x[{0},{1}]*2\n", "k.pd")
    assert kernel.buffers["x"] == ("in", "float32", [4, 8])
    assert kernel.statements[1] == (5, [4, 8], "y", ["{0}"], "+=",
                                    "x[{0},{1}]*2")


@pytest.mark.parametrize("text, message", [
    ("kernel k\nin x f32 [4] heap\nout y f32 [4] heap\n4:p y[{0}]=x[{0}]\n",
     "k.pd:4: '4:p': only naive kernels"),
    ("kernel k\nin x f32 [4] heap\nout y f32 [4] heap\n4 y[{0}]=x[{0}]\n| y[{0}]=2\n",
     "k.pd:5: '|': only naive kernels"),
    ("kernel k\nin x f32 [4] heap\nout y f32 [4:1] heap\n4 y[{0}]=x[{0}]\n",
     "k.pd:3: buffer y is not a plain heap buffer"),
    ("kernel k\nin x f32 [4] heap\nout y f32 [4] heap\n4 z[{0}]=x[{0}]\n",
     "k.pd:4: unknown buffer 'z'"),
    ("in x f32 [4] heap\n", "k.pd:1: expected 'kernel NAME' first"),
    ("", "k.pd: no kernel"),
])
def test_refuses_with_the_place(text, message):
    with pytest.raises(pd_to_te.Unsupported) as e:
        pd_to_te.parse(text, "k.pd")
    assert message in str(e.value)


@pytest.mark.parametrize("index, sizes, dim, digits", [
    ("{0}", [4], 4, [(0, 1)]),
    ("{1}*8+{2}", [8, 8, 8], 64, [(2, 1), (1, 8)]),
    ("{2}+{1}*3", [5, 2, 3], 6, [(2, 1), (1, 3)]),
])
def test_radix_digits(index, sizes, dim, digits):
    assert pd_to_te.radix_digits(index, sizes, dim, "k.pd:1", "y") == digits


@pytest.mark.parametrize("index, sizes, dim", [
    ("{0}", [4], 5),              # does not cover the dimension
    ("{0}*2", [4], 8),            # every other element
    ("{1}*4+{2}", [8, 8, 8], 64),  # overlapping digits
    ("{0}+1", [4], 5),            # a constant
])
def test_radix_digits_refuses(index, sizes, dim):
    with pytest.raises(pd_to_te.Unsupported):
        pd_to_te.radix_digits(index, sizes, dim, "k.pd:1", "y")
