"""Building kernels in the PerfDojo text form (docs/TextForm.md).

A :class:`KernelBuilder` collects buffer declarations and statements
symbolically and renders the text only at the end, so that decisions that
affect every access of a tensor (its *flat* layout, see :meth:`Buffer.flat`,
or the role and name of a result buffer that turns out to be a graph output)
can be taken after the statements that use it were emitted.

Every statement is one primitive (the text form's rule) over its own loop
nest; composite ONNX operators are sequences of statements that go through
``tmp`` buffers.  Values that a statement reads are :class:`Operand` s:
array accesses, literals, or iteration variables.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

RESERVED = {"in", "out", "tmp", "kernel", "inf", "nan"}
FLOAT_DTYPES = ("f16", "bf16", "f32", "f64")
INT_DTYPES = ("i8", "i16", "i32", "i64")


# --------------------------------------------------------------------------
# Linear index expressions
# --------------------------------------------------------------------------
class Lin:
    """An index: ``sum(coeff * {depth}) + const`` (linear in loop variables)."""

    __slots__ = ("terms", "const")

    def __init__(self, terms: Optional[Dict[int, int]] = None, const: int = 0):
        self.terms = {d: c for d, c in (terms or {}).items() if c != 0}
        self.const = int(const)

    @staticmethod
    def var(depth: int, coeff: int = 1) -> "Lin":
        return Lin({depth: coeff})

    @staticmethod
    def of(x: Union["Lin", int]) -> "Lin":
        return x if isinstance(x, Lin) else Lin(const=int(x))

    def __add__(self, other: Union["Lin", int]) -> "Lin":
        o = Lin.of(other)
        t = dict(self.terms)
        for d, c in o.terms.items():
            t[d] = t.get(d, 0) + c
        return Lin(t, self.const + o.const)

    __radd__ = __add__

    def __sub__(self, other: Union["Lin", int]) -> "Lin":
        return self + Lin.of(other) * -1

    def __mul__(self, k: int) -> "Lin":
        k = int(k)
        return Lin({d: c * k for d, c in self.terms.items()}, self.const * k)

    __rmul__ = __mul__

    def render(self) -> str:
        parts: List[Tuple[int, str]] = []
        for d in sorted(self.terms):
            c = self.terms[d]
            body = "{%d}" % d if abs(c) == 1 else "{%d}*%d" % (d, abs(c))
            parts.append((1 if c > 0 else -1, body))
        if self.const or not parts:
            parts.append((1 if self.const >= 0 else -1, str(abs(self.const))))
        out = ""
        for i, (sign, body) in enumerate(parts):
            if i == 0:
                out = body if sign > 0 else "-" + body
            else:
                out += ("+" if sign > 0 else "-") + body
        return out


def linearize(idx: Sequence[Lin], shape: Sequence[int]) -> Lin:
    """Row-major linear offset of a multi-index into ``shape``."""
    off = Lin()
    stride = 1
    for i, n in zip(reversed(list(idx)), reversed(list(shape))):
        off = off + Lin.of(i) * stride
        stride *= n
    return off


# --------------------------------------------------------------------------
# Buffers, operands, statements
# --------------------------------------------------------------------------
@dataclass(eq=False)
class Buffer:
    """One declared buffer.  ``shape`` is the logical (ONNX) shape; a 0-D
    tensor is declared ``[1]``.  A *flat* buffer is declared 1-D and every
    access to it is linearized (used for reshapes whose index boundaries do
    not nest, see ``ops.reshape``)."""

    name: str
    role: str
    dtype: str
    shape: Tuple[int, ...]
    flat: bool = False
    onnx_name: Optional[str] = None  # the ONNX tensor this buffer holds
    owner: Optional[str] = None  # graph-level: bound to an ONNX tensor?

    @property
    def decl_shape(self) -> Tuple[int, ...]:
        if self.flat:
            return (int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1,)
        return tuple(self.shape) if self.shape else (1,)

    def declaration(self) -> str:
        dims = ", ".join(str(d) for d in self.decl_shape)
        return f"{self.role:<3} {self.name} {self.dtype} [{dims}] heap"


@dataclass(eq=False)
class Access:
    buffer: Buffer
    index: Tuple[Lin, ...]

    def render(self) -> str:
        b = self.buffer
        if not b.shape:
            idx: Sequence[Lin] = [Lin()]
        elif b.flat:
            idx = [linearize(self.index, b.shape)]
        else:
            idx = self.index
        return "%s[%s]" % (b.name, ",".join(i.render() for i in idx))


@dataclass(frozen=True)
class Literal:
    value: float
    dtype: str  # the type the literal is used in

    def render(self) -> str:
        return format_literal(self.value, self.dtype)


@dataclass(frozen=True)
class IterVar:
    depth: int

    def render(self) -> str:
        return "{%d}" % self.depth


Operand = Union[Access, Literal, IterVar]


def format_literal(v, dtype: str) -> str:
    """A literal that the parser reads back to exactly the value the ONNX
    constant has in ``dtype`` (as a double)."""
    if dtype in INT_DTYPES:
        return str(int(v))
    v = float(v)
    if dtype == "f32":
        v = float(np.float32(v))
    elif dtype == "f16":
        v = float(np.float16(v))
    elif dtype == "bf16":
        bits = np.array([v], dtype=np.float32).view(np.uint32)
        # round to nearest even on the upper 16 bits
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
        v = float(bits.view(np.float32)[0])
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0.0:
        return "0"  # -0 and 0 are the same constant for every primitive used
    if v == int(v) and abs(v) < 2**53:
        return str(int(v))
    return repr(v)


# Primitive name -> (text template, numpy implementation for folding).
PRIMITIVES = {
    "copy": ("{0}", lambda a: a),
    "neg": ("-{0}", lambda a: -a),
    "add": ("{0}+{1}", lambda a, b: a + b),
    "sub": ("{0}-{1}", lambda a, b: a - b),
    "mul": ("{0}*{1}", lambda a, b: a * b),
    "div": ("{0}/{1}", lambda a, b: a / b),
    "lt": ("{0}<{1}", lambda a, b: a < b),
    "le": ("{0}<={1}", lambda a, b: a <= b),
    "gt": ("{0}>{1}", lambda a, b: a > b),
    "ge": ("{0}>={1}", lambda a, b: a >= b),
    "eq": ("{0}=={1}", lambda a, b: a == b),
    "ne": ("{0}!={1}", lambda a, b: a != b),
    "max": ("max({0},{1})", lambda a, b: np.maximum(a, b)),
    "min": ("min({0},{1})", lambda a, b: np.minimum(a, b)),
    "abs": ("abs({0})", np.abs),
    "exp": ("exp({0})", np.exp),
    "log": ("log({0})", np.log),
    "sqrt": ("sqrt({0})", np.sqrt),
    "rsqrt": ("rsqrt({0})", lambda a: 1 / np.sqrt(a)),
    "tanh": ("tanh({0})", np.tanh),
    "sigmoid": ("sigmoid({0})", lambda a: 1 / (1 + np.exp(-a))),
    "cast": ("cast({0})", lambda a: a),
    "fma": ("fma({0},{1},{2})", lambda a, b, c: a * b + c),
    "select": ("select({0},{1},{2})", lambda c, a, b: np.where(c != 0, a, b)),
    "erf": ("erf({0})", np.vectorize(math.erf, otypes=[np.float64])),
    "floor": ("floor({0})", np.floor),
    "ceil": ("ceil({0})", np.ceil),
    "round": ("round({0})", np.round),  # halves to even, as the text form
    "sign": ("sign({0})", np.sign),
    "sin": ("sin({0})", np.sin),
    "cos": ("cos({0})", np.cos),
    "tan": ("tan({0})", np.tan),
    "asin": ("asin({0})", np.arcsin),
    "acos": ("acos({0})", np.arccos),
    "atan": ("atan({0})", np.arctan),
    "sinh": ("sinh({0})", np.sinh),
    "cosh": ("cosh({0})", np.cosh),
    "asinh": ("asinh({0})", np.arcsinh),
    "acosh": ("acosh({0})", np.arccosh),
    "atanh": ("atanh({0})", np.arctanh),
    "pow": ("pow({0},{1})", np.power),
    "fmod": ("fmod({0},{1})", np.fmod),  # the sign of the dividend (C fmod)
    "mod": ("mod({0},{1})", np.mod),  # the sign of the divisor (Python %)
}
COMPARISONS = {"lt", "le", "gt", "ge", "eq", "ne"}
REDUCE_ASSIGN = {"add": "+=", "mul": "*=", "max": "max=", "min": "min="}


@dataclass(eq=False)
class Stmt:
    loops: Tuple[int, ...]
    target: Access
    assign: str  # '=', '+=', '*=', 'max=', 'min='
    prim: str
    args: Tuple[Operand, ...]

    def render(self) -> str:
        expr = PRIMITIVES[self.prim][0].format(*(a.render() for a in self.args))
        stmt = f"{self.target.render()}{self.assign}{expr}"
        return " ".join([str(n) for n in self.loops] + [stmt])


# --------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------
class Namer:
    """Sanitizes arbitrary ONNX names into unique text-form identifiers."""

    def __init__(self) -> None:
        self.used: set = set()

    def __call__(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint or "t")
        if not re.match(r"[A-Za-z_]", base):
            base = "t_" + base
        if base in RESERVED:
            base += "_"
        name, k = base, 1
        while name in self.used:
            name = f"{base}_{k}"
            k += 1
        self.used.add(name)
        return name


# --------------------------------------------------------------------------
# The builder
# --------------------------------------------------------------------------
class KernelBuilder:
    """Collects the buffers and statements of one kernel."""

    def __init__(self, name: str):
        self.name = name
        self.namer = Namer()
        self.buffers: List[Buffer] = []
        self.stmts: List[Stmt] = []

    def buffer(self, hint: str, role: str, dtype: str, shape: Sequence[int],
               onnx_name: Optional[str] = None) -> Buffer:
        b = Buffer(self.namer(hint), role, dtype, tuple(int(s) for s in shape),
                   onnx_name=onnx_name)
        self.buffers.append(b)
        return b

    def rename(self, buf: Buffer, hint: str) -> None:
        self.namer.used.discard(buf.name)
        buf.name = self.namer(hint)

    def emit(self, loops: Sequence[int], target: Access, prim: str,
             args: Sequence[Operand], assign: str = "=") -> None:
        loops = tuple(int(n) for n in loops)
        assert all(n >= 1 for n in loops), loops
        self.stmts.append(Stmt(loops, target, assign, prim, tuple(args)))

    def render(self) -> str:
        order = {"in": 0, "out": 1, "tmp": 2}
        bufs = sorted(self.buffers, key=lambda b: order[b.role])
        lines = [f"kernel {self.name}"]
        lines += [b.declaration() for b in bufs]
        lines.append("")
        lines += [s.render() for s in self.stmts]
        return "\n".join(lines) + "\n"
