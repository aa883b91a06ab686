"""The operator table: ONNX op type -> emitter.

An emitter takes a :class:`~perfdojo.onnx.emit.Ctx`, reads the node's
inputs and attributes, emits statements and sets the node's outputs
(``ctx.set_out``).  It refuses (``ctx.refuse``) whatever the text form cannot
express.  To support a new operator add one entry to :data:`OPS`; element-wise
ones are one line in :data:`UNARY` / :data:`BINARY` (or a small function over
the ``Ctx`` shorthands).
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .emit import (Ctx, Shape, Val, bcast_index, broadcast_shapes, is_float,
                   loop_vars, loops_of, NUMPY_DTYPES)
from .kernel import REDUCE_ASSIGN, IterVar, Lin, Literal, linearize

Emitter = Callable[[Ctx], None]
OPS: Dict[str, Emitter] = {}


def op(*names: str):
    def deco(fn: Emitter) -> Emitter:
        for n in names:
            OPS[n] = fn
        return fn
    return deco


def need_float(ctx: Ctx, v: Val) -> None:
    if not is_float(v.dtype):
        ctx.refuse(f"{ctx.node.op_type} on {v.dtype} tensors is not supported "
                   "(the text form's function needs a floating-point type)")


# --------------------------------------------------------------------------
# Element-wise operators
# --------------------------------------------------------------------------
def _leaky(c, x):
    return c.select(c.ew("lt", x, 0.0), c.mul(x, c.attr("alpha", 0.01)), x)


def _elu(c, x):
    a = c.attr("alpha", 1.0)
    neg = c.mul(c.sub(c.ew("exp", x), 1.0), a)
    return c.select(c.ew("lt", x, 0.0), neg, x)


def _selu(c, x):
    a, g = c.attr("alpha", 1.67326319217681884765625), c.attr("gamma", 1.05070102214813232421875)
    neg = c.sub(c.mul(c.ew("exp", x), a * g), a * g)
    return c.select(c.ew("gt", x, 0.0), c.mul(x, g), neg)


def _celu(c, x):
    a = c.attr("alpha", 1.0)
    e = c.mul(c.sub(c.ew("exp", c.div(x, a)), 1.0), a)
    return c.add(c.ew("max", x, 0.0), c.ew("min", e, 0.0))


def _hard_sigmoid(c, x, alpha=None, beta=None):
    alpha = c.attr("alpha", 0.2) if alpha is None else alpha
    beta = c.attr("beta", 0.5) if beta is None else beta
    t = c.ew("fma", x, alpha, beta)
    return c.ew("max", c.ew("min", t, 1.0), 0.0)


def _softplus(c, x):
    return c.ew("log", c.add(c.ew("exp", x), 1.0))


def _shrink(c, x):
    lam, bias = c.attr("lambd", 0.5), c.attr("bias", 0.0)
    hi = c.select(c.ew("gt", x, lam), c.sub(x, bias), 0.0)
    return c.select(c.ew("lt", x, -lam), c.add(x, bias), hi)


def _gelu(c, x):
    if c.attr("approximate", "none") != "tanh":
        # x/2 * (1 + erf(x/sqrt(2)))
        e = c.ew("erf", c.mul(x, 1 / math.sqrt(2)))
        return c.mul(c.mul(x, 0.5), c.add(e, 1.0))
    inner = c.mul(c.ew("fma", c.mul(c.mul(x, x), x), 0.044715, x), math.sqrt(2 / math.pi))
    return c.mul(c.mul(x, 0.5), c.add(c.ew("tanh", inner), 1.0))


def _isinf(c, x):
    pos, neg = c.attr("detect_positive", 1), c.attr("detect_negative", 1)
    if pos and neg:
        return c.ew("eq", c.ew("abs", x), math.inf)
    if pos:
        return c.ew("eq", x, math.inf)
    if neg:
        return c.ew("eq", x, -math.inf)
    return c.mul(c.ew("ne", x, x), 0.0)


def _prim(name):
    return lambda c, x: c.ew(name, x)


# op -> (float only?, builder(ctx, x) -> Val)
UNARY: Dict[str, Tuple[bool, Callable]] = {
    "Identity": (False, lambda c, x: x),
    "Neg": (False, lambda c, x: c.ew("neg", x)),
    "Abs": (False, _prim("abs")),
    "Exp": (True, _prim("exp")),
    "Log": (True, _prim("log")),
    "Sqrt": (True, _prim("sqrt")),
    "Tanh": (True, _prim("tanh")),
    "Sigmoid": (True, _prim("sigmoid")),
    "Reciprocal": (True, lambda c, x: c.div(1.0, x)),
    "Relu": (False, lambda c, x: c.ew("max", x, 0)),
    "LeakyRelu": (True, _leaky),
    "Elu": (True, _elu),
    "Selu": (True, _selu),
    "Celu": (True, _celu),
    "HardSigmoid": (True, _hard_sigmoid),
    "HardSwish": (True, lambda c, x: c.mul(x, _hard_sigmoid(c, x, 1 / 6, 0.5))),
    "Softplus": (True, _softplus),
    "Softsign": (True, lambda c, x: c.div(x, c.add(c.ew("abs", x), 1.0))),
    "ThresholdedRelu": (True, lambda c, x: c.select(c.ew("gt", x, c.attr("alpha", 1.0)), x, 0.0)),
    "Shrink": (True, _shrink),
    "Mish": (True, lambda c, x: c.mul(x, c.ew("tanh", _softplus(c, x)))),
    "Swish": (True, lambda c, x: c.mul(x, c.ew("sigmoid", c.mul(x, c.attr("alpha", 1.0))))),
    "Gelu": (True, _gelu),
    "Sign": (False, _prim("sign")),
    "Erf": (True, _prim("erf")),
    "Floor": (True, _prim("floor")),
    "Ceil": (True, _prim("ceil")),
    "Round": (True, _prim("round")),
    **{op: (True, _prim(op.lower())) for op in (
        "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
        "Sinh", "Cosh", "Asinh", "Acosh", "Atanh")},
    "Not": (False, lambda c, x: c.ew("eq", x, 0.0)),
    "IsNaN": (True, lambda c, x: c.ew("ne", x, x)),
    "IsInf": (True, _isinf),
}

# op -> builder(ctx, a, b) -> Val  (NumPy broadcasting)
BINARY: Dict[str, Callable] = {
    "Add": lambda c, a, b: c.add(a, b),
    "Sub": lambda c, a, b: c.sub(a, b),
    "Mul": lambda c, a, b: c.mul(a, b),
    "Div": lambda c, a, b: c.div(a, b),
    "Equal": lambda c, a, b: c.ew("eq", a, b),
    "Less": lambda c, a, b: c.ew("lt", a, b),
    "LessOrEqual": lambda c, a, b: c.ew("le", a, b),
    "Greater": lambda c, a, b: c.ew("gt", a, b),
    "GreaterOrEqual": lambda c, a, b: c.ew("ge", a, b),
    "And": lambda c, a, b: c.ew("min", a, b),  # bools are 0/1
    "Or": lambda c, a, b: c.ew("max", a, b),
    "Xor": lambda c, a, b: c.ew("ne", a, b),
    "PRelu": lambda c, x, s: c.select(c.ew("lt", x, 0.0), c.mul(x, s), x),
    # fmod=1: C fmod (the sign of the dividend); 0: Python's % (the divisor's)
    "Mod": lambda c, a, b: c.ew("fmod" if c.attr("fmod", 0) else "mod", a, b),
}

# variadic op -> (pairwise primitive, divide by count?)
VARIADIC = {"Sum": ("add", False), "Mean": ("add", True), "Max": ("max", False),
            "Min": ("min", False)}


def _unary_op(name: str) -> Emitter:
    float_only, fn = UNARY[name]

    def emit(ctx: Ctx) -> None:
        x = ctx.inp(0)
        if float_only:
            need_float(ctx, x)
        ctx.set_out(0, fn(ctx, x))
    return emit


def _binary_op(name: str) -> Emitter:
    fn = BINARY[name]

    def emit(ctx: Ctx) -> None:
        a, b = ctx.inp(0), ctx.inp(1)
        if name == "Div" and not is_float(a.dtype):
            ctx.refuse("integer Div is not supported (the text form truncates, ONNX floors)")
        ctx.set_out(0, fn(ctx, a, b))
    return emit


for _n in UNARY:
    OPS[_n] = _unary_op(_n)
for _n in BINARY:
    OPS[_n] = _binary_op(_n)


@op(*VARIADIC)
def variadic(ctx: Ctx) -> None:
    prim, average = VARIADIC[ctx.node.op_type]
    vals = [v for v in ctx.inputs if v is not None]
    acc = vals[0]
    for v in vals[1:]:
        acc = ctx.ew(prim, acc, v)
    if average and len(vals) > 1:
        acc = ctx.div(acc, float(len(vals)))
    ctx.set_out(0, acc)


@op("Dropout")
def dropout(ctx: Ctx) -> None:
    if ctx.has_input(2):
        tm = ctx.const_input(2, "training_mode")
        if tm.reshape(-1)[0]:
            ctx.refuse("Dropout in training mode is random")
    ctx.set_out(0, ctx.inp(0))
    if ctx.wants_output(1):
        ones = ctx.tmp(ctx.out_shape(1), "f32")
        ctx.fill(ones, 1.0)
        ctx.set_out(1, ones)


@op("Clip")
def clip(ctx: Ctx) -> None:
    x = ctx.inp(0)
    if ctx.opset < 11:
        lo, hi = ctx.attr("min", None), ctx.attr("max", None)
    else:
        lo = ctx.inp(1) if ctx.has_input(1) else None
        hi = ctx.inp(2) if ctx.has_input(2) else None
    if lo is not None:
        x = ctx.ew("max", x, lo)
    if hi is not None:
        x = ctx.ew("min", x, hi)
    ctx.set_out(0, x)


@op("Where")
def where(ctx: Ctx) -> None:
    c, a, b = ctx.inp(0), ctx.inp(1), ctx.inp(2)
    if c.const is not None and a.const is None and b.const is None and c.size == 1:
        ctx.set_out(0, a if c.scalar() else b)
        return
    ctx.set_out(0, ctx.select(c, a, b))


@op("Pow")
def power(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    y = ctx.inp(1)
    if y.const is None or y.const.size != 1:
        if not is_float(y.dtype):
            ctx.refuse("Pow with a run-time integer exponent is not supported")
        ctx.set_out(0, ctx.ew("pow", x, y))
        return
    p = float(y.scalar())
    if p == 0.5:
        r = ctx.ew("sqrt", x)
    elif p == -0.5:
        r = ctx.ew("rsqrt", x)
    elif p == int(p) and abs(p) <= 16:
        r = _int_power(ctx, x, abs(int(p)))
        if p < 0:
            r = ctx.div(1.0, r)
    else:
        r = ctx.ew("pow", x, p)
    if r.shape != ctx.out_shape():
        r = ctx.copy(r, out=ctx.tmp(ctx.out_shape(), r.dtype))
    ctx.set_out(0, r)


def _int_power(ctx: Ctx, x: Val, n: int) -> Val:
    """x**n by square-and-multiply (n >= 0)."""
    if n == 0:  # x**0 is 1 for every x, NaN and inf included
        ones = ctx.tmp(x.shape, x.dtype)
        ctx.fill(ones, 1.0)
        return ones
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else ctx.mul(result, base)
        n >>= 1
        if n:
            base = ctx.mul(base, base)
    return result


@op("Cast", "CastLike")
def cast(ctx: Ctx) -> None:
    x = ctx.inp(0)
    to = ctx.out_dtype(0)
    to_bool = ctx.node_output_is_bool(0)
    from_bool = ctx.node_input_is_bool(0)
    if to_bool and not from_bool:
        ctx.set_out(0, ctx.ew("ne", x, 0.0 if is_float(x.dtype) else 0))
    elif x.dtype == to:
        ctx.set_out(0, x)
    else:
        ctx.set_out(0, ctx.cast(x, to))


# --------------------------------------------------------------------------
# Shape manipulation
# --------------------------------------------------------------------------
def _suffix_products(shape: Shape) -> List[int]:
    out, p = [], 1
    for n in reversed(shape):
        p *= n
        out.append(p)
    return out


def reshape_copy(ctx: Ctx, x: Val, shape: Shape) -> Val:
    """Copy ``x`` into a new tensor of ``shape`` (same element count).

    The common refinement of the two shapes (the union of their suffix
    products, when it forms a divisibility chain) gives a loop nest in which
    both tensors' indices are linear; otherwise the input is declared flat.
    """
    shape = tuple(shape)
    if x.const is not None:
        return Val(shape, x.dtype, const=x.const.reshape(shape))
    out = ctx.tmp(shape, x.dtype)
    total = x.size
    if total == 0:
        ctx.refuse("zero-size tensor")
    sp = sorted(set(_suffix_products(x.shape)) | set(_suffix_products(shape)) | {1})
    chain = all(b % a == 0 for a, b in zip(sp, sp[1:]))
    if not chain:
        # flat: loop over the output shape, read the input linearized
        if x.buf is None:
            x.buf = ctx._materialize(x)
        x.buf.flat = True
        idx = loop_vars(len(shape))
        ctx.gather_copy(x, out, shape, idx, idx_from_linear(x.shape, linearize(idx, shape)))
        return out
    # loops of the refinement, outermost first: sizes sp[k+1]/sp[k] reversed
    loops = [sp[k + 1] // sp[k] for k in range(len(sp) - 1)][::-1] or [1]
    strides = sp[:-1][::-1]  # stride (in elements) of each refinement loop

    def index_for(s: Shape) -> List[Lin]:
        idx = []
        suffix = _suffix_products(s)[::-1] + [1]  # suffix[d] = prod(s[d:])
        for d in range(len(s)):
            hi, lo = suffix[d], suffix[d + 1]  # dimension d spans strides [lo, hi)
            e = Lin()
            for k, st in enumerate(strides):
                if lo <= st < hi:
                    e = e + Lin.var(k) * (st // lo)
            idx.append(e)
        return idx
    ctx.gather_copy(x, out, loops, index_for(shape), index_for(x.shape))
    return out


def idx_from_linear(shape: Shape, off: Lin) -> List[Lin]:
    """An index into a *flat* buffer of logical ``shape`` at offset ``off``:
    put the offset on the last dimension, zeros elsewhere (linearization
    then gives back ``off``)."""
    if not shape:
        return []
    return [Lin()] * (len(shape) - 1) + [off]


@op("Reshape", "Flatten", "Squeeze", "Unsqueeze")
def reshape(ctx: Ctx) -> None:
    x = ctx.inp(0)
    shape = ctx.out_shape()
    if int(np.prod(shape, dtype=np.int64)) != x.size:
        ctx.refuse(f"reshape from {list(x.shape)} to {list(shape)} changes the element count")
    if tuple(shape) == tuple(x.shape):
        ctx.set_out(0, x)
    else:
        ctx.set_out(0, reshape_copy(ctx, x, shape))


@op("Expand")
def expand(ctx: Ctx) -> None:
    x = ctx.inp(0)
    shape = ctx.out_shape()
    if tuple(shape) == tuple(x.shape):
        ctx.set_out(0, x)
        return
    if x.const is not None:
        ctx.set_out(0, Val(shape, x.dtype, const=np.broadcast_to(x.const, shape).copy()))
        return
    ctx.set_out(0, ctx.copy(x, out=ctx.tmp(shape, x.dtype)))


def permute(ctx: Ctx, x: Val, perm: Sequence[int]) -> Val:
    """Transpose: result dimension j is x's dimension perm[j]."""
    shape = tuple(x.shape[p] for p in perm)
    if x.const is not None:
        return Val(shape, x.dtype, const=np.transpose(x.const, perm))
    out = ctx.tmp(shape, x.dtype)
    idx = loop_vars(len(perm))
    src = [None] * len(perm)
    for j, p in enumerate(perm):
        src[p] = idx[j]
    ctx.gather_copy(x, out, shape, idx, src)
    return out


@op("Transpose")
def transpose(ctx: Ctx) -> None:
    x = ctx.inp(0)
    ctx.set_out(0, permute(ctx, x, ctx.attr("perm", list(range(len(x.shape)))[::-1])))


def _place(ctx: Ctx, src: Val, out: Val, axis_offsets: Dict[int, Tuple[int, int]]) -> None:
    """Copy all of ``src`` into ``out``: along each axis ``a`` of
    ``axis_offsets`` = {a: (offset, step)} element i goes to offset + step*i,
    along the other axes to i."""
    loops = tuple(src.shape)
    idx = loop_vars(len(loops))
    out_idx = [idx[d] * axis_offsets[d][1] + axis_offsets[d][0] if d in axis_offsets else idx[d]
               for d in range(len(loops))]
    ctx.gather_copy(src, out, loops, out_idx, idx)


@op("Concat")
def concat(ctx: Ctx) -> None:
    vals = [v for v in ctx.inputs if v is not None and v.size > 0]
    axis = ctx.attr("axis") % len(ctx.out_shape())
    if all(v.const is not None for v in vals):
        ctx.set_out(0, Val(ctx.out_shape(), vals[0].dtype,
                           const=np.concatenate([v.const for v in vals], axis)))
        return
    out = ctx.tmp(ctx.out_shape(), vals[0].dtype)
    off = 0
    for v in vals:
        _place(ctx, v, out, {axis: (off, 1)})
        off += v.shape[axis]
    ctx.set_out(0, out)


def _slice_copy(ctx: Ctx, x: Val, starts: Dict[int, Tuple[int, int, int]]) -> Val:
    """out[i] = x[start + i*step] along each axis in ``starts`` = {axis: (start, step, count)}."""
    shape = tuple(starts[d][2] if d in starts else n for d, n in enumerate(x.shape))
    if any(n == 0 for n in shape):  # empty: a constant without elements
        return Val(shape, x.dtype, const=np.zeros(shape, NUMPY_DTYPES.get(x.dtype, np.float32)))
    if x.const is not None:
        c = _np_slice(x.const, starts)
        return Val(shape, x.dtype, const=c)
    out = ctx.tmp(shape, x.dtype)
    idx = loop_vars(len(shape))
    src = [idx[d] * starts[d][1] + starts[d][0] if d in starts else idx[d]
           for d in range(len(shape))]
    ctx.gather_copy(x, out, shape, idx, src)
    return out


def _np_slice(a: np.ndarray, starts) -> np.ndarray:
    for d, (s, st, n) in starts.items():
        a = np.take(a, s + st * np.arange(n), axis=d)
    return a


@op("Slice")
def slice_(ctx: Ctx) -> None:
    x = ctx.inp(0)
    r = len(x.shape)
    if ctx.opset < 10:
        starts, ends = ctx.attr("starts"), ctx.attr("ends")
        axes = ctx.attr("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = ctx.const_input(1, "starts").tolist()
        ends = ctx.const_input(2, "ends").tolist()
        axes = ctx.const_input(3, "axes").tolist() if ctx.has_input(3) else list(range(len(starts)))
        steps = ctx.const_input(4, "steps").tolist() if ctx.has_input(4) else [1] * len(starts)
    spec = {}
    for s, e, a, st in zip(starts, ends, axes, steps):
        a %= r
        rng = range(*slice(int(s), int(e), int(st)).indices(x.shape[a]))
        spec[a] = (rng.start, rng.step, len(rng))
    ctx.set_out(0, _slice_copy(ctx, x, spec))


@op("Split")
def split(ctx: Ctx) -> None:
    x = ctx.inp(0)
    axis = ctx.attr("axis", 0) % len(x.shape)
    off = 0
    for i in range(len(ctx.node.output)):
        n = ctx.out_shape(i)[axis]
        if ctx.wants_output(i):
            ctx.set_out(i, _slice_copy(ctx, x, {axis: (off, 1, n)}))
        off += n


@op("Pad")
def pad(ctx: Ctx) -> None:
    x = ctx.inp(0)
    r = len(x.shape)
    mode = ctx.attr("mode", "constant")
    if ctx.opset < 11:
        pads, value = ctx.attr("pads"), ctx.attr("value", 0.0)
        axes = list(range(r))
    else:
        pads = ctx.const_input(1, "pads").tolist()
        value = ctx.const_input(2, "constant_value").reshape(-1)[0].item() \
            if ctx.has_input(2) else 0
        axes = [a % r for a in ctx.const_input(3, "axes").tolist()] if ctx.has_input(3) \
            else list(range(r))
    k = len(axes)
    before = {a: int(pads[i]) for i, a in enumerate(axes)}
    after = {a: int(pads[i + k]) for i, a in enumerate(axes)}
    ctx.set_out(0, pad_tensor(ctx, x, before, after, mode, value))


def pad_tensor(ctx: Ctx, x: Val, before: Dict[int, int], after: Dict[int, int],
               mode: str = "constant", value: float = 0.0) -> Val:
    """Pad (or crop, for negative amounts) ``x``.  Constant mode fills the
    result then copies the interior; edge/reflect/wrap pad one axis at a
    time, each border region one statement with a linear index."""
    r = len(x.shape)
    # crop first (negative pads)
    crop = {d: (-before.get(d, 0) if before.get(d, 0) < 0 else 0,
                1, x.shape[d] - max(0, -before.get(d, 0)) - max(0, -after.get(d, 0)))
            for d in range(r) if before.get(d, 0) < 0 or after.get(d, 0) < 0}
    if crop:
        x = _slice_copy(ctx, x, crop)
    b = {d: max(0, before.get(d, 0)) for d in range(r)}
    a = {d: max(0, after.get(d, 0)) for d in range(r)}
    if not any(b.values()) and not any(a.values()):
        return x
    if mode == "constant":
        shape = tuple(x.shape[d] + b[d] + a[d] for d in range(r))
        out = ctx.tmp(shape, x.dtype)
        ctx.fill(out, value)
        _place(ctx, x, out, {d: (b[d], 1) for d in range(r) if b[d]})
        return out
    if mode not in ("edge", "reflect", "wrap"):
        ctx.refuse(f"Pad mode '{mode}' is not supported")
    for d in range(r):
        if not (b[d] or a[d]):
            continue
        n = x.shape[d]
        if mode == "reflect" and (b[d] >= n or a[d] >= n):
            ctx.refuse("reflect padding wider than the tensor")
        if mode == "wrap" and (b[d] > n or a[d] > n):
            ctx.refuse("wrap padding wider than the tensor")
        shape = tuple(x.shape[k] + (b[d] + a[d] if k == d else 0) for k in range(r))
        out = ctx.tmp(shape, x.dtype)
        _place(ctx, x, out, {d: (b[d], 1)})
        for region, width in (("before", b[d]), ("after", a[d])):
            if not width:
                continue
            loops = tuple(width if k == d else x.shape[k] for k in range(r))
            idx = loop_vars(r)
            j = idx[d]
            base = 0 if region == "before" else b[d] + n
            # source index along d for border position j (0 <= j < width)
            src_d = {("edge", "before"): Lin(), ("edge", "after"): Lin(const=n - 1),
                     ("reflect", "before"): j * -1 + b[d],
                     ("reflect", "after"): j * -1 + (n - 2),
                     ("wrap", "before"): j + (n - b[d]),
                     ("wrap", "after"): j}[(mode, region)]
            out_idx = [j + base if k == d else idx[k] for k in range(r)]
            src_idx = [src_d if k == d else idx[k] for k in range(r)]
            ctx.gather_copy(x, out, loops, out_idx, src_idx)
        x = out
    return x


def _block_shuffle(ctx: Ctx, to_depth: bool) -> None:
    """SpaceToDepth / DepthToSpace (DCR and CRD) as one index-mapped copy
    over (n, c, h, i, w, j): the space tensor [N, C, H*b, W*b] at
    (n, c, h*b+i, w*b+j), the depth tensor [N, C*b*b, H, W] at (n, ch, h, w)
    with ch = (i*b+j)*C + c (DCR) or c*b*b + i*b + j (CRD)."""
    x = ctx.inp(0)
    b = ctx.attr("blocksize")
    depth_shape = ctx.out_shape() if to_depth else x.shape
    N, C, H, W = depth_shape[0], depth_shape[1] // (b * b), depth_shape[2], depth_shape[3]
    out = ctx.tmp(ctx.out_shape(), x.dtype)
    n, c, h, i, w, j = loop_vars(6)
    space_idx = [n, c, h * b + i, w * b + j]
    ch = (c * (b * b) + i * b + j) if ctx.attr("mode", "DCR") == "CRD" else ((i * b + j) * C + c)
    depth_idx = [n, ch, h, w]
    loops = (N, C, H, b, W, b)
    if to_depth:
        ctx.gather_copy(x, out, loops, depth_idx, space_idx)
    else:
        ctx.gather_copy(x, out, loops, space_idx, depth_idx)
    ctx.set_out(0, out)


OPS["SpaceToDepth"] = lambda ctx: _block_shuffle(ctx, True)
OPS["DepthToSpace"] = lambda ctx: _block_shuffle(ctx, False)


@op("Tile")
def tile(ctx: Ctx) -> None:
    x = ctx.inp(0)
    reps = [int(v) for v in ctx.const_input(1, "repeats").tolist()]
    out = ctx.tmp(ctx.out_shape(), x.dtype)
    r = len(x.shape)
    loops = []
    for d in range(r):
        loops += [reps[d], x.shape[d]]
    v = loop_vars(2 * r)
    ctx.gather_copy(x, out, loops, [v[2 * d] * x.shape[d] + v[2 * d + 1] for d in range(r)],
                    [v[2 * d + 1] for d in range(r)])
    ctx.set_out(0, out)


@op("Gather")
def gather(ctx: Ctx) -> None:
    x = ctx.inp(0)
    ind = ctx.const_input(1, "indices").astype(np.int64)
    axis = ctx.attr("axis", 0) % len(x.shape)
    n = x.shape[axis]
    flat = np.where(ind < 0, ind + n, ind).reshape(-1)
    if x.const is not None:
        ctx.set_out(0, Val(ctx.out_shape(), x.dtype, const=np.take(x.const, flat.reshape(ind.shape), axis=axis)))
        return
    if flat.size > 64:
        ctx.refuse(f"Gather with {flat.size} constant indices (at most 64 are unrolled)")
    out_shape = ctx.out_shape()
    out = ctx.tmp(out_shape, x.dtype)
    q = ind.ndim
    outer = x.shape[:axis]
    inner = x.shape[axis + 1:]
    loops = outer + inner
    v = loop_vars(len(loops))
    for p, k in enumerate(flat):
        pos = np.unravel_index(p, ind.shape) if q else ()
        out_idx = v[:axis] + [Lin(const=int(t)) for t in pos] + v[axis:]
        src_idx = v[:axis] + [Lin(const=int(k))] + v[axis:]
        ctx.gather_copy(x, out, loops or (1,), out_idx, src_idx)
    ctx.set_out(0, out)


# --------------------------------------------------------------------------
# Contractions
# --------------------------------------------------------------------------
def matmul_vals(ctx: Ctx, a: Val, b: Val, out: Optional[Val] = None) -> Val:
    """NumPy matmul semantics: 1-D operands promoted, batch broadcasting."""
    a_vec, b_vec = len(a.shape) == 1, len(b.shape) == 1
    ash = (1,) + a.shape if a_vec else a.shape
    bsh = b.shape + (1,) if b_vec else b.shape
    batch = broadcast_shapes(ash[:-2], bsh[:-2])
    M, K, N = ash[-2], ash[-1], bsh[-1]
    if bsh[-2] != K:
        ctx.refuse(f"MatMul inner dimensions differ ({K} and {bsh[-2]})")
    full = batch + (M, N)
    res_shape = batch + ((M,) if not a_vec else ()) + ((N,) if not b_vec else ())
    if out is None:
        out = ctx.tmp(res_shape, a.dtype)
    nb = len(batch)

    def out_index(v):
        idx = list(v[:nb])
        if not a_vec:
            idx.append(v[nb])
        if not b_vec:
            idx.append(v[nb + 1])
        return idx
    v = loop_vars(nb + 3)
    ctx.kb.emit(loops_of(full), ctx.target(out, out_index(v)), "copy", [_lit(0, out)])
    k = v[nb + 2]
    ai = bcast_index(ash[:-2], batch, v[:nb]) + [v[nb], k]
    bi = bcast_index(bsh[:-2], batch, v[:nb]) + [k, v[nb + 1]]
    if a_vec:
        ai = ai[1:]
    if b_vec:
        bi = bi[:-1]
    ctx.kb.emit(full + (K,), ctx.target(out, out_index(v)), "mul",
                [ctx.access(a, ai), ctx.access(b, bi)], assign="+=")
    return out


def _lit(v, val: Val) -> Literal:
    return Literal(v, val.dtype)


@op("MatMul")
def matmul(ctx: Ctx) -> None:
    a, b = ctx.inp(0), ctx.inp(1)
    need_float(ctx, a)
    ctx.set_out(0, matmul_vals(ctx, a, b))


@op("Gemm")
def gemm(ctx: Ctx) -> None:
    a, b = ctx.inp(0), ctx.inp(1)
    need_float(ctx, a)
    if ctx.attr("transA", 0):
        a = _transposed(ctx, a)
    if ctx.attr("transB", 0):
        b = _transposed(ctx, b)
    y = matmul_vals(ctx, a, b)
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    if alpha != 1.0:
        y = ctx.mul(y, alpha)
    if ctx.has_input(2) and beta != 0.0:
        c = ctx.inp(2)
        y = ctx.add(y, ctx.mul(c, beta) if beta != 1.0 else c)
    ctx.set_out(0, y)


def _transposed(ctx: Ctx, x: Val) -> Val:
    """A 2-D transpose as a view-free copy (moves can remove it)."""
    if x.const is not None:
        return Val(x.shape[::-1], x.dtype, const=x.const.T.copy())
    out = ctx.tmp(x.shape[::-1], x.dtype)
    v = loop_vars(2)
    ctx.gather_copy(x, out, out.shape, v, v[::-1])
    return out


def _spatial_attrs(ctx: Ctx, x_shape: Shape, kernel: Sequence[int]):
    """strides, dilations, pads (begin, end) of a Conv/pool node, auto_pad
    resolved; output spatial sizes come from shape inference."""
    ns = len(kernel)
    strides = ctx.attr("strides", [1] * ns)
    dil = ctx.attr("dilations", [1] * ns)
    pads = ctx.attr("pads", [0] * (2 * ns))
    auto = ctx.attr("auto_pad", "NOTSET")
    out_sp = ctx.out_shape(0)[2:]
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * ns)
        for d in range(ns):
            need = max(0, (out_sp[d] - 1) * strides[d] + (kernel[d] - 1) * dil[d] + 1 - x_shape[2 + d])
            lo = need // 2 if auto == "SAME_UPPER" else need - need // 2
            pads[d], pads[d + ns] = lo, need - lo
    elif auto == "VALID":
        pads = [0] * (2 * ns)
    return list(strides), list(dil), [int(p) for p in pads], tuple(out_sp)


def _padded_for_window(ctx: Ctx, x: Val, pads, out_sp, strides, dil, kernel, fill):
    """Pad the spatial dims of ``x`` (N, C, spatial...) so that every window
    of every output position is inside; extra room for ceil_mode windows."""
    ns = len(kernel)
    before, after = {}, {}
    for d in range(ns):
        need = (out_sp[d] - 1) * strides[d] + (kernel[d] - 1) * dil[d] + 1
        b = pads[d]
        a = max(need - x.shape[2 + d] - b, 0)
        if b:
            before[2 + d] = b
        if a:
            after[2 + d] = a
    if not before and not after:
        return x
    return pad_tensor(ctx, x, before, after, "constant", fill)


@op("Conv")
def conv(ctx: Ctx) -> None:
    x, w = ctx.inp(0), ctx.inp(1)
    need_float(ctx, x)
    ns = len(x.shape) - 2
    kernel = list(w.shape[2:])
    strides, dil, pads, out_sp = _spatial_attrs(ctx, x.shape, kernel)
    g = ctx.attr("group", 1)
    N, C = x.shape[:2]
    M = w.shape[0]
    cin, cout = C // g, M // g
    xp = _padded_for_window(ctx, x, pads, out_sp, strides, dil, kernel, 0.0)
    out = ctx.tmp(ctx.out_shape(), x.dtype)
    # loops: n, g, co, out spatial..., ci, kernel spatial...
    v = loop_vars(3 + 2 * ns + 1)
    n, gg, co = v[0], v[1], v[2]
    o = v[3:3 + ns]
    ci = v[3 + ns]
    kk = v[4 + ns:]
    loops = (N, g, cout) + tuple(out_sp)
    out_idx = [n, gg * cout + co] + o
    ctx.kb.emit(loops, ctx.target(out, out_idx), "copy", [_lit(0, out)])
    x_idx = [n, gg * cin + ci] + [o[d] * strides[d] + kk[d] * dil[d] for d in range(ns)]
    w_idx = [gg * cout + co, ci] + kk
    ctx.kb.emit(loops + (cin,) + tuple(kernel), ctx.target(out, out_idx), "mul",
                [ctx.access(xp, x_idx), ctx.access(w, w_idx)], assign="+=")
    if ctx.has_input(2):
        bias = ctx.inp(2)
        v2 = loop_vars(2 + ns)
        ctx.kb.emit(out.shape, ctx.target(out, v2), "add",
                    [ctx.access(out, v2), ctx.access(bias, [v2[1]])])
    ctx.set_out(0, out)


def _window_reduce(ctx: Ctx, xp: Val, out: Val, kernel, strides, dil, op_: str,
                   pre: Optional[str] = None) -> None:
    """out[n,c,o...] op= pre(xp[n,c,o*s+k*d...]) over the window (init first)."""
    ns = len(kernel)
    init = {"add": 0.0, "max": -math.inf}[op_]
    ctx.fill(out, init)
    v = loop_vars(2 + 2 * ns)
    o, kk = v[2:2 + ns], v[2 + ns:]
    x_idx = v[:2] + [o[d] * strides[d] + kk[d] * dil[d] for d in range(ns)]
    xa = ctx.access(xp, x_idx)
    prim, args = {None: ("copy", [xa]), "abs": ("abs", [xa]), "square": ("mul", [xa, xa])}[pre]
    ctx.kb.emit(out.shape + tuple(kernel), ctx.target(out, v[:2 + ns]), prim, args,
                assign=REDUCE_ASSIGN[op_])


def _pool_geometry(ctx: Ctx, x: Val):
    kernel = ctx.attr("kernel_shape")
    strides, dil, pads, out_sp = _spatial_attrs(ctx, x.shape, kernel)
    return kernel, strides, dil, pads, out_sp


@op("MaxPool")
def max_pool(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    if ctx.wants_output(1):
        ctx.refuse("MaxPool's Indices output (int64 argmax positions) is not supported")
    kernel, strides, dil, pads, out_sp = _pool_geometry(ctx, x)
    xp = _padded_for_window(ctx, x, pads, out_sp, strides, dil, kernel, -math.inf)
    out = ctx.tmp(ctx.out_shape(), x.dtype)
    _window_reduce(ctx, xp, out, kernel, strides, dil, "max")
    ctx.set_out(0, out)


def _window_counts(x_sp, kernel, strides, dil, pads, out_sp, include_pad) -> np.ndarray:
    """How many elements each window averages over (ONNX AveragePool)."""
    ns = len(kernel)
    counts = np.ones(out_sp, dtype=np.float64)
    for d in range(ns):
        c = np.zeros(out_sp[d])
        for o in range(out_sp[d]):
            pos = o * strides[d] - pads[d] + np.arange(kernel[d]) * dil[d]
            lim_lo, lim_hi = (-pads[d], x_sp[d] + pads[ns + d]) if include_pad else (0, x_sp[d])
            c[o] = np.count_nonzero((pos >= lim_lo) & (pos < lim_hi))
        shape = [1] * ns
        shape[d] = out_sp[d]
        counts = counts * c.reshape(shape)
    return counts


@op("AveragePool", "LpPool")
def avg_pool(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    kernel, strides, dil, pads, out_sp = _pool_geometry(ctx, x)
    xp = _padded_for_window(ctx, x, pads, out_sp, strides, dil, kernel, 0.0)
    out = ctx.tmp(ctx.out_shape(), x.dtype)
    if ctx.node.op_type == "LpPool":
        p = int(ctx.attr("p", 2))
        _lp_finish(ctx, xp, out, kernel, strides, dil, p)
        return
    _window_reduce(ctx, xp, out, kernel, strides, dil, "add")
    counts = _window_counts(x.shape[2:], kernel, strides, dil, pads, out_sp,
                            bool(ctx.attr("count_include_pad", 0)))
    cval = Val(tuple(out_sp), x.dtype, const=counts.astype(NUMPY_DTYPES[x.dtype]))
    if np.all(counts == counts.reshape(-1)[0]):
        cval = Val((), x.dtype, const=np.asarray(counts.reshape(-1)[0], NUMPY_DTYPES[x.dtype]))
    ctx.set_out(0, ctx.div(out, cval, out=out))


def _lp_finish(ctx, xp, out, kernel, strides, dil, p):
    """LpPool: (sum |x|^p)^(1/p); p=1, 2 directly, other p through exp/log."""
    if p == 1:
        _window_reduce(ctx, xp, out, kernel, strides, dil, "add", "abs")
    elif p == 2:
        _window_reduce(ctx, xp, out, kernel, strides, dil, "add", "square")
        ctx.ew("sqrt", out, out=out)
    else:
        powed = _int_power(ctx, ctx.ew("abs", xp), p)
        _window_reduce(ctx, powed, out, kernel, strides, dil, "add")
        ctx.ew("exp", ctx.div(ctx.ew("log", out), float(p)), out=out)
    ctx.set_out(0, out)


@op("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def global_pool(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    axes = list(range(2, len(x.shape)))
    kind = ctx.node.op_type
    if kind == "GlobalAveragePool":
        ctx.set_out(0, ctx.mean(x, axes))
    elif kind == "GlobalMaxPool":
        ctx.set_out(0, ctx.reduce(x, axes, "max"))
    else:
        p = int(ctx.attr("p", 2))
        ctx.set_out(0, _lp_norm(ctx, x, axes, p, True))


# --------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------
def _reduce_axes(ctx: Ctx, x: Val) -> Optional[List[int]]:
    """The axes of a Reduce* node (attribute before opset 18, input after,
    ReduceSum from 13); None means 'no reduction' (noop_with_empty_axes)."""
    from_input = ctx.opset >= 18 or (ctx.node.op_type == "ReduceSum" and ctx.opset >= 13)
    if from_input:
        axes = ctx.const_input(1, "axes").astype(np.int64).tolist() if ctx.has_input(1) else []
    else:
        axes = ctx.attr("axes", [])
    if not axes:
        if ctx.attr("noop_with_empty_axes", 0):
            return None
        axes = list(range(len(x.shape)))
    return [a % max(len(x.shape), 1) for a in axes]


def _lp_norm(ctx: Ctx, x: Val, axes, p: int, keepdims: bool) -> Val:
    if p == 1:
        return ctx.reduce(x, axes, "add", keepdims, "abs")
    if p == 2:
        return ctx.ew("sqrt", ctx.reduce(x, axes, "add", keepdims, "square"))
    s = ctx.reduce(_int_power(ctx, ctx.ew("abs", x), p), axes, "add", keepdims)
    return ctx.ew("exp", ctx.div(ctx.ew("log", s), float(p)))


def _log_sum_exp(ctx: Ctx, x: Val, axes, keepdims: bool) -> Val:
    m = ctx.reduce(x, axes, "max", True)
    # a row of -inf has max -inf: subtract 0 there instead (x - m would be NaN)
    m0 = ctx.select(ctx.ew("eq", ctx.ew("abs", m), math.inf), 0.0, m)
    s = ctx.reduce(ctx.ew("exp", ctx.sub(x, m0)), axes, "add", True)
    r = ctx.add(ctx.ew("log", s), m0)
    return r if keepdims else reshape_copy(ctx, r, tuple(n for d, n in enumerate(r.shape) if d not in axes))


# op -> builder(ctx, x, axes, keepdims)
REDUCTIONS: Dict[str, Callable] = {
    "ReduceSum": lambda c, x, ax, k: c.reduce(x, ax, "add", k),
    "ReduceMean": lambda c, x, ax, k: c.mean(x, ax, k),
    "ReduceMax": lambda c, x, ax, k: c.reduce(x, ax, "max", k),
    "ReduceMin": lambda c, x, ax, k: c.reduce(x, ax, "min", k),
    "ReduceProd": lambda c, x, ax, k: c.reduce(x, ax, "mul", k),
    "ReduceL1": lambda c, x, ax, k: c.reduce(x, ax, "add", k, "abs"),
    "ReduceL2": lambda c, x, ax, k: _lp_norm(c, x, ax, 2, k),
    "ReduceSumSquare": lambda c, x, ax, k: c.reduce(x, ax, "add", k, "square"),
    "ReduceLogSum": lambda c, x, ax, k: c.ew("log", c.reduce(x, ax, "add", k)),
    "ReduceLogSumExp": _log_sum_exp,
}


@op(*REDUCTIONS)
def reduction(ctx: Ctx) -> None:
    x = ctx.inp(0)
    axes = _reduce_axes(ctx, x)
    if any(n == 0 for n in x.shape):
        ctx.refuse("reduction of an empty tensor")
    if axes is None:
        ctx.set_out(0, x)
        return
    keep = bool(ctx.attr("keepdims", 1))
    if ctx.node.op_type not in ("ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"):
        need_float(ctx, x)
    ctx.set_out(0, REDUCTIONS[ctx.node.op_type](ctx, x, axes, keep))


# --------------------------------------------------------------------------
# Softmax family and normalizations
# --------------------------------------------------------------------------
def _softmax_axes(ctx: Ctx, x: Val) -> List[int]:
    r = len(x.shape)
    if ctx.opset >= 13:
        return [ctx.attr("axis", -1) % r]
    return list(range(ctx.attr("axis", 1) % r, r))  # coerced to 2-D


@op("Softmax", "LogSoftmax")
def softmax(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    axes = _softmax_axes(ctx, x)
    m = ctx.reduce(x, axes, "max")
    d = ctx.sub(x, m)
    e = ctx.ew("exp", d)
    s = ctx.reduce(e, axes, "add")
    if ctx.node.op_type == "Softmax":
        ctx.set_out(0, ctx.div(e, s))
    else:
        ctx.set_out(0, ctx.sub(d, ctx.ew("log", s)))


@op("Hardmax")
def hardmax(ctx: Ctx) -> None:
    """1 at the first maximum along the axis: first = min over the axis of
    (x == max ? index : inf), then y = (index == first)."""
    x = ctx.inp(0)
    need_float(ctx, x)
    axes = _softmax_axes(ctx, x)
    if len(axes) != 1:
        # coerced 2-D form: hardmax over a flattened suffix
        lead = x.shape[:axes[0]]
        flat = reshape_copy(ctx, x, lead + (int(np.prod(x.shape[axes[0]:])),))
        y = _hardmax_axis(ctx, flat, len(lead))
        ctx.set_out(0, reshape_copy(ctx, y, x.shape))
    else:
        ctx.set_out(0, _hardmax_axis(ctx, x, axes[0]))


def _hardmax_axis(ctx: Ctx, x: Val, axis: int) -> Val:
    m = ctx.reduce(x, [axis], "max")
    is_max = ctx.ew("eq", x, m)
    pos = ctx.select(is_max, IterVar(axis), math.inf)
    first = ctx.reduce(pos, [axis], "min")
    return ctx.ew("eq", IterVar(axis), first, dtype=x.dtype, out=ctx.tmp(x.shape, "f32"))


def _norm_stats(ctx: Ctx, x: Val, axes, eps: float, biased=True):
    """mean, x - mean, 1/sqrt(var + eps) over ``axes`` (kept dims)."""
    mean = ctx.mean(x, axes)
    d = ctx.sub(x, mean)
    var = ctx.mean(d, axes, pre="square")
    rstd = ctx.ew("rsqrt", ctx.add(var, eps))
    return mean, d, rstd


def _stash(ctx: Ctx, x: Val) -> Val:
    """LayerNormalization's stash_type: compute in f32 (1) or f64 (11)."""
    st = ctx.attr("stash_type", 1)
    want = {1: "f32", 11: "f64", 10: "f16", 16: "bf16"}.get(st)
    if want is None:
        ctx.refuse(f"stash_type {st} is not supported")
    return ctx.cast(x, want)


@op("LayerNormalization")
def layer_norm(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    r = len(x.shape)
    axes = list(range(ctx.attr("axis", -1) % r, r))
    xs = _stash(ctx, x)
    mean, d, rstd = _norm_stats(ctx, xs, axes, ctx.attr("epsilon", 1e-5))
    y = ctx.cast(ctx.mul(d, rstd), x.dtype)
    y = ctx.mul(y, ctx.inp(1))
    if ctx.has_input(2):
        y = ctx.add(y, ctx.inp(2))
    ctx.set_out(0, y)
    if ctx.wants_output(1):
        ctx.set_out(1, mean)
    if ctx.wants_output(2):
        ctx.set_out(2, rstd)


@op("RMSNormalization")
def rms_norm(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    r = len(x.shape)
    axes = list(range(ctx.attr("axis", -1) % r, r))
    xs = _stash(ctx, x)
    ms = ctx.mean(xs, axes, pre="square")
    y = ctx.cast(ctx.mul(xs, ctx.ew("rsqrt", ctx.add(ms, ctx.attr("epsilon", 1e-5)))), x.dtype)
    ctx.set_out(0, ctx.mul(y, ctx.inp(1)))


def _per_channel(ctx: Ctx, v: Val, rank: int) -> Val:
    """A [C] tensor as [C, 1, ...] so that it broadcasts along axis 1."""
    shape = v.shape + (1,) * (rank - 2)
    return reshape_copy(ctx, v, shape) if shape != v.shape else v


@op("BatchNormalization")
def batch_norm(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    r = len(x.shape)
    scale, bias, mean, var = (_per_channel(ctx, ctx.inp(i), r) for i in (1, 2, 3, 4))
    eps = ctx.attr("epsilon", 1e-5)
    training = ctx.attr("training_mode", 0) or (ctx.opset < 14 and ctx.wants_output(1))
    if training:
        if ctx.opset < 14:
            ctx.refuse("BatchNormalization training outputs before opset 14 are not supported")
        # statistics of this batch (population variance); running averages
        axes = [0] + list(range(2, r))
        bmean, d, rstd = _norm_stats(ctx, x, axes, eps)
        ctx.set_out(0, ctx.add(ctx.mul(ctx.mul(d, rstd), scale), bias))
        mom = ctx.attr("momentum", 0.9)
        bvar = ctx.mean(d, axes, pre="square")
        for i, (run, cur) in ((1, (mean, bmean)), (2, (var, bvar))):
            if ctx.wants_output(i):
                upd = ctx.add(ctx.mul(run, mom), ctx.mul(cur, 1.0 - mom))
                ctx.set_out(i, reshape_copy(ctx, upd, ctx.out_shape(i)))
        return
    rstd = ctx.ew("rsqrt", ctx.add(var, eps))
    y = ctx.mul(ctx.sub(x, mean), ctx.mul(rstd, scale))
    ctx.set_out(0, ctx.add(y, bias))


@op("InstanceNormalization")
def instance_norm(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    r = len(x.shape)
    _, d, rstd = _norm_stats(ctx, x, list(range(2, r)), ctx.attr("epsilon", 1e-5))
    y = ctx.mul(ctx.mul(d, rstd), _per_channel(ctx, ctx.inp(1), r))
    ctx.set_out(0, ctx.add(y, _per_channel(ctx, ctx.inp(2), r)))


@op("GroupNormalization")
def group_norm(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    G = ctx.attr("num_groups")
    N, C = x.shape[:2]
    rest = x.shape[2:]
    xg = reshape_copy(ctx, _stash(ctx, x), (N, G, C // G) + rest)
    axes = list(range(2, len(xg.shape)))
    _, d, rstd = _norm_stats(ctx, xg, axes, ctx.attr("epsilon", 1e-5))
    y = reshape_copy(ctx, ctx.cast(ctx.mul(d, rstd), x.dtype), x.shape)
    scale, bias = ctx.inp(1), ctx.inp(2)
    if scale.shape[0] != C:  # opset 18: per group
        scale = _group_to_channel(ctx, scale, C // G)
        bias = _group_to_channel(ctx, bias, C // G)
    r = len(x.shape)
    ctx.set_out(0, ctx.add(ctx.mul(y, _per_channel(ctx, scale, r)), _per_channel(ctx, bias, r)))


def _group_to_channel(ctx: Ctx, v: Val, per: int) -> Val:
    wide = ctx.copy(reshape_copy(ctx, v, v.shape + (1,)), out=ctx.tmp((v.shape[0], per), v.dtype))
    return reshape_copy(ctx, wide, (v.shape[0] * per,))


@op("LpNormalization")
def lp_normalization(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    axis = ctx.attr("axis", -1) % len(x.shape)
    n = _lp_norm(ctx, x, [axis], int(ctx.attr("p", 2)), True)
    ctx.set_out(0, ctx.select(ctx.ew("eq", n, 0.0), 0.0, ctx.div(x, n)))


@op("MeanVarianceNormalization")
def mvn(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    axes = [a % len(x.shape) for a in ctx.attr("axes", [0, 2, 3])]
    mean = ctx.mean(x, axes)
    var = ctx.sub(ctx.mean(x, axes, pre="square"), ctx.mul(mean, mean))
    ctx.set_out(0, ctx.div(ctx.sub(x, mean), ctx.add(ctx.ew("sqrt", var), 1e-9)))


@op("LRN")
def lrn(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    size = ctx.attr("size")
    alpha, beta, bias = ctx.attr("alpha", 1e-4), ctx.attr("beta", 0.75), ctx.attr("bias", 1.0)
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = ctx.mul(x, x)
    sqp = pad_tensor(ctx, sq, {1: lo}, {1: hi})
    s = ctx.tmp(x.shape, x.dtype)
    ctx.fill(s, 0.0)
    v = loop_vars(len(x.shape) + 1)
    k = v[-1]
    src = [v[0], v[1] + k] + v[2:-1]
    ctx.kb.emit(x.shape + (size,), ctx.target(s, v[:-1]), "copy", [ctx.access(sqp, src)], assign="+=")
    base = ctx.ew("fma", s, alpha / size, bias)
    den = ctx.ew("exp", ctx.mul(ctx.ew("log", base), beta))
    ctx.set_out(0, ctx.div(x, den))


@op("ConvTranspose")
def conv_transpose(ctx: Ctx) -> None:
    """Scatter form: full[n, g*M'+co, i*s + k*d] += x[n, g*C'+ci, i] * w[g*C'+ci, co, k]
    into the uncropped result (every index in bounds), then the crop by the
    begin pads and the bias."""
    x, w = ctx.inp(0), ctx.inp(1)
    need_float(ctx, x)
    ns = len(x.shape) - 2
    kernel = list(w.shape[2:])
    strides = ctx.attr("strides", [1] * ns)
    dil = ctx.attr("dilations", [1] * ns)
    opad = ctx.attr("output_padding", [0] * ns)
    g = ctx.attr("group", 1)
    N, C = x.shape[:2]
    cin, cout = C // g, w.shape[1]
    out_shape = ctx.out_shape()
    full_sp = [(x.shape[2 + d] - 1) * strides[d] + (kernel[d] - 1) * dil[d] + 1 + opad[d]
               for d in range(ns)]
    auto = ctx.attr("auto_pad", "NOTSET")
    if ctx.attr("output_shape", None) is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        begin = []
        for d in range(ns):
            total = full_sp[d] - out_shape[2 + d]
            begin.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
    else:
        begin = list(ctx.attr("pads", [0] * (2 * ns))[:ns]) if auto != "VALID" else [0] * ns
    # an output_shape beyond the scattered extent reads zeros there: widen
    shift = [max(0, -begin[d]) for d in range(ns)]
    size = [max(full_sp[d] + shift[d], shift[d] + begin[d] + out_shape[2 + d]) for d in range(ns)]
    full = ctx.tmp((N, g * cout) + tuple(size), x.dtype)
    ctx.fill(full, 0.0)
    v = loop_vars(4 + 2 * ns)
    n, gg, ci, co = v[0], v[1], v[2], v[3]
    i, k = v[4:4 + ns], v[4 + ns:]
    full_idx = [n, gg * cout + co] + [i[d] * strides[d] + k[d] * dil[d] + shift[d] for d in range(ns)]
    ctx.kb.emit((N, g, cin, cout) + tuple(x.shape[2:]) + tuple(kernel), ctx.target(full, full_idx),
                "mul", [ctx.access(x, [n, gg * cin + ci] + i), ctx.access(w, [gg * cin + ci, co] + k)],
                assign="+=")
    y = _slice_copy(ctx, full, {2 + d: (begin[d] + shift[d], 1, out_shape[2 + d]) for d in range(ns)})
    if ctx.has_input(2):
        y = ctx.add(y, _per_channel(ctx, ctx.inp(2), len(out_shape)), out=y)
    ctx.set_out(0, y)


# --------------------------------------------------------------------------
# Recurrent layers (time steps unrolled: static sequence length)
# --------------------------------------------------------------------------
RNN_ACTIVATIONS = {"Sigmoid": "sigmoid", "Tanh": "tanh"}
RNN_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
RNN_DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def _take(ctx: Ctx, x: Val, axis: int, start: int, count: int) -> Val:
    """x[..., start:start+count, ...] along ``axis`` (a copy)."""
    return _slice_copy(ctx, x, {axis: (start, 1, count)})


def _row(ctx: Ctx, x: Val, i: int) -> Val:
    """x[i] (the leading dimension dropped)."""
    return reshape_copy(ctx, _take(ctx, x, 0, i, 1), x.shape[1:])


@op("RNN", "GRU", "LSTM")
def recurrent(ctx: Ctx) -> None:
    """RNN/GRU/LSTM with the time loop unrolled: X @ W^T for every step at
    once, then per step the recurrent product, gates and state update."""
    kind = ctx.node.op_type
    G = RNN_GATES[kind]
    X, W, R = ctx.inp(0), ctx.inp(1), ctx.inp(2)
    need_float(ctx, X)
    layout = ctx.attr("layout", 0)
    if layout:
        X = permute(ctx, X, (1, 0, 2))
    seq, batch, _ = X.shape
    dirs, H = W.shape[0], W.shape[1] // G
    if ctx.has_input(4):
        lens = ctx.const_input(4, "sequence_lens")
        if np.any(lens != seq):
            ctx.refuse("sequence_lens shorter than the sequence (ragged batches) are not supported")
    if kind == "LSTM" and ctx.attr("input_forget", 0):
        ctx.refuse("LSTM input_forget=1 is not supported")
    acts = ctx.attr("activations", None) or RNN_DEFAULT_ACTS[kind] * dirs
    acts = [a.decode() if isinstance(a, bytes) else a for a in acts]
    if any(a not in RNN_ACTIVATIONS for a in acts):
        ctx.refuse(f"activations {acts}: only Sigmoid and Tanh are supported")
    clip = ctx.attr("clip", None)
    direction = ctx.attr("direction", "forward")
    lbr = ctx.attr("linear_before_reset", 0)
    B = ctx.inp(3) if ctx.has_input(3) else None
    nacts = len(RNN_DEFAULT_ACTS[kind])

    def act(k, d, v):
        if clip is not None:
            v = ctx.ew("min", ctx.ew("max", v, -float(clip)), float(clip))
        return ctx.ew(RNN_ACTIVATIONS[acts[d * nacts + k]], v)

    Y = ctx.tmp((seq, dirs, batch, H), X.dtype)
    Y_h = ctx.tmp((dirs, batch, H), X.dtype)
    Y_c = ctx.tmp((dirs, batch, H), X.dtype) if kind == "LSTM" else None
    for d in range(dirs):
        xw = matmul_vals(ctx, X, permute(ctx, _row(ctx, W, d), (1, 0)))  # [seq, batch, G*H]
        rt = permute(ctx, _row(ctx, R, d), (1, 0))  # [H, G*H]
        wb = rb = None
        if B is not None:
            bd = _row(ctx, B, d)
            wb, rb = _take(ctx, bd, 0, 0, G * H), _take(ctx, bd, 0, G * H, G * H)
        h = _row(ctx, ctx.inp(5), d) if ctx.has_input(5) else None
        c = _row(ctx, ctx.inp(6), d) if kind == "LSTM" and ctx.has_input(6) else None
        peep = _row(ctx, ctx.inp(7), d) if kind == "LSTM" and ctx.has_input(7) else None
        reverse = direction == "reverse" or (direction == "bidirectional" and d == 1)
        for t in (reversed(range(seq)) if reverse else range(seq)):
            xt = _row(ctx, xw, t)  # [batch, G*H]
            hr = matmul_vals(ctx, h, rt) if h is not None else None  # [batch, G*H]

            def gate(k, with_r=True):
                a = _take(ctx, xt, 1, k * H, H)
                if wb is not None:
                    a = ctx.add(a, _take(ctx, wb, 0, k * H, H))
                if with_r:
                    if hr is not None:
                        a = ctx.add(a, _take(ctx, hr, 1, k * H, H))
                    if rb is not None:
                        a = ctx.add(a, _take(ctx, rb, 0, k * H, H))
                return a
            if kind == "RNN":
                h = act(0, d, gate(0))
            elif kind == "GRU":
                z, r = act(0, d, gate(0)), act(0, d, gate(1))
                a = gate(2, with_r=False)
                if lbr:
                    rh = _take(ctx, hr, 1, 2 * H, H) if hr is not None else None
                    if rb is not None:
                        rh = ctx.add(rh, _take(ctx, rb, 0, 2 * H, H)) if rh is not None \
                            else _take(ctx, rb, 0, 2 * H, H)
                    if rh is not None:
                        a = ctx.add(a, ctx.mul(r, rh))
                else:
                    if h is not None:
                        rh_ = matmul_vals(ctx, ctx.mul(r, h), _take(ctx, rt, 1, 2 * H, H))
                        a = ctx.add(a, rh_)
                    if rb is not None:
                        a = ctx.add(a, _take(ctx, rb, 0, 2 * H, H))
                hh = act(1, d, a)
                # h = (1 - z) * hh + z * h
                new = ctx.sub(hh, ctx.mul(z, hh))
                h = ctx.add(new, ctx.mul(z, h)) if h is not None else new
            else:  # LSTM, gates i, o, f, c; peepholes i, o, f
                def peephole(a, k, state):
                    if peep is None or state is None:
                        return a
                    return ctx.add(a, ctx.mul(_take(ctx, peep, 0, k * H, H), state))
                i = act(0, d, peephole(gate(0), 0, c))
                f = act(0, d, peephole(gate(2), 2, c))
                cc = act(1, d, gate(3))
                c = ctx.add(ctx.mul(f, c), ctx.mul(i, cc)) if c is not None else ctx.mul(i, cc)
                o = act(0, d, peephole(gate(1), 1, c))
                h = ctx.mul(o, act(2, d, c))
            ctx.gather_copy(h, Y, (batch, H), [Lin(const=t), Lin(const=d)] + loop_vars(2), loop_vars(2))
        ctx.gather_copy(h, Y_h, (batch, H), [Lin(const=d)] + loop_vars(2), loop_vars(2))
        if Y_c is not None:
            ctx.gather_copy(c, Y_c, (batch, H), [Lin(const=d)] + loop_vars(2), loop_vars(2))
    if layout:
        Y, Y_h = permute(ctx, Y, (2, 0, 1, 3)), permute(ctx, Y_h, (1, 0, 2))
        Y_c = permute(ctx, Y_c, (1, 0, 2)) if Y_c is not None else None
    ctx.set_out(0, Y)
    if ctx.wants_output(1):
        ctx.set_out(1, Y_h)
    if ctx.wants_output(2):
        ctx.set_out(2, Y_c)


# --------------------------------------------------------------------------
# Resize: separable, one constant interpolation matrix per axis
# --------------------------------------------------------------------------
def _resize_axis_maps(ctx: Ctx, x: Val) -> List[Tuple[int, np.ndarray, np.ndarray]]:
    """[(axis, W [out, in], b [out])] such that resizing along ``axis`` is
    ``out = W @ x + b`` (b holds the extrapolation value where the ROI
    leaves the input).  The matrices come from ONNX's reference Resize
    itself, which is separable: it is run once on zeros of ``x``'s shape
    while its per-axis 1-D step is observed, then that step is applied to
    the identity (W) and to zeros (b)."""
    import onnx
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    import onnx.reference.ops.op_resize as rz

    consts = {}
    for i, name in enumerate(ctx.node.input):
        if i == 0 or not name:
            continue
        consts[name] = ctx.const_input(i, ("roi", "scales", "sizes")[i - 1] if ctx.opset >= 11
                                       else "scales")
    feeds = {ctx.node.input[0]: np.zeros(x.shape, np.float32)}
    feeds.update(consts)
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in feeds.items()]
    outs = [helper.make_empty_tensor_value_info(ctx.node.output[0])]
    model = helper.make_model(helper.make_graph([ctx.node], "resize", ins, outs),
                              opset_imports=[helper.make_opsetid("", ctx.opset)])
    calls = []
    step = rz._interpolate_1d_along_axis

    def observe(data, axis, scale, out_n, get_coeffs, roi=None, **kw):
        calls.append((axis, data.shape[axis], scale, out_n, get_coeffs, roi, kw))
        return step(data, axis, scale, out_n, get_coeffs, roi=roi, **kw)
    rz._interpolate_1d_along_axis = observe
    try:
        ReferenceEvaluator(model).run(None, feeds)
    except Exception as e:
        ctx.refuse(f"the reference Resize failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
    finally:
        rz._interpolate_1d_along_axis = step
    axes_attr = ctx.attr("axes", None)
    maps, seen = [], set()
    for axis, n, scale, out_n, get_coeffs, roi, kw in calls:
        if axes_attr is not None:  # the reference resized the listed axes only
            axis = [a % len(x.shape) for a in axes_attr][axis]
        if axis in seen:
            continue
        seen.add(axis)
        W = step(np.eye(n), 0, scale, out_n, get_coeffs, roi=roi, **kw)
        b = step(np.zeros((n, 1)), 0, scale, out_n, get_coeffs, roi=roi, **kw)[:, 0]
        W[b != 0] = 0.0  # extrapolated rows are the constant b alone
        maps.append((axis, W, b))
    return maps


def apply_axis_matrix(ctx: Ctx, x: Val, axis: int, W: np.ndarray, b: np.ndarray) -> Val:
    """y[.., o, ..] = sum_i W[o, i] * x[.., i, ..] + b[o] along ``axis``."""
    out_n, n = W.shape
    shape = x.shape[:axis] + (out_n,) + x.shape[axis + 1:]
    y = ctx.tmp(shape, x.dtype)
    ctx.fill(y, 0.0)
    wv = Val((out_n, n), x.dtype, const=W.astype(NUMPY_DTYPES[x.dtype]))
    v = loop_vars(len(shape) + 1)
    k = v[-1]
    x_idx = v[:axis] + [k] + v[axis + 1:-1]
    ctx.kb.emit(shape + (n,), ctx.target(y, v[:-1]), "mul",
                [ctx.access(wv, [v[axis], k]), ctx.access(x, x_idx)], assign="+=")
    if np.any(b != 0):
        bshape = (out_n,) + (1,) * (len(shape) - axis - 1)
        ctx.add(y, Val(bshape, x.dtype, const=b.reshape(bshape).astype(NUMPY_DTYPES[x.dtype])), out=y)
    return y


@op("Resize", "Upsample")
def resize(ctx: Ctx) -> None:
    x = ctx.inp(0)
    need_float(ctx, x)
    for axis, W, b in _resize_axis_maps(ctx, x):
        x = apply_axis_matrix(ctx, x, axis, W, b)
    ctx.set_out(0, x)


@op("DFT")
def dft(ctx: Ctx) -> None:
    """DFT as constant cos/sin matrices applied along the axis (in f64: the
    sums cancel, f32 coefficients would lose the small outputs):
    forward re = C xr + S xi, im = C xi - S xr; inverse with +sin and 1/N;
    the inverse of a one-sided spectrum (irfft) is real."""
    x = ctx.inp(0)
    need_float(ctx, x)
    r = len(x.shape)
    if ctx.opset >= 20:
        axis = int(ctx.const_input(2, "axis").reshape(-1)[0]) if ctx.has_input(2) else -2
    else:
        axis = ctx.attr("axis", 1)
    axis %= r
    if axis == r - 1:
        ctx.refuse("DFT along the last (complex) axis")
    L = x.shape[axis]
    inverse, onesided = ctx.attr("inverse", 0), ctx.attr("onesided", 0)
    if ctx.has_input(1):
        N = int(ctx.const_input(1, "dft_length").reshape(-1)[0])
    else:
        N = ctx.out_shape()[axis] if (inverse and onesided) else L
    xd = ctx.cast(x, "f64")
    xr = _take(ctx, xd, r - 1, 0, 1)
    xi = _take(ctx, xd, r - 1, 1, 1) if x.shape[-1] == 2 else None
    if inverse and onesided:  # irfft: Hermitian half spectrum -> real signal
        n, k = np.arange(N)[:, None], np.arange(L)[None, :]
        w = np.where((k == 0) | ((N % 2 == 0) & (k == N // 2)), 1.0, 2.0)
        w = np.where(k <= N // 2, w, 0.0) / N
        theta = 2 * np.pi * ((k * n) % N) / N
        y = apply_axis_matrix(ctx, xr, axis, w * np.cos(theta), np.zeros(N))
        if xi is not None:
            y = ctx.add(y, apply_axis_matrix(ctx, xi, axis, -w * np.sin(theta), np.zeros(N)), out=y)
        ctx.set_out(0, ctx.cast(y, x.dtype))
        return
    K = N // 2 + 1 if onesided else N
    k, n = np.arange(K)[:, None], np.arange(L)[None, :]
    theta = 2 * np.pi * ((k * n) % N) / N
    C = np.where(n < N, np.cos(theta), 0.0)
    S = np.where(n < N, np.sin(theta), 0.0)
    if inverse:
        C, S = C / N, -S / N  # e^{+i theta} / N
    zero = np.zeros(K)
    re = apply_axis_matrix(ctx, xr, axis, C, zero)
    im = apply_axis_matrix(ctx, xr, axis, -S, zero)
    if xi is not None:
        re = ctx.add(re, apply_axis_matrix(ctx, xi, axis, S, zero), out=re)
        im = ctx.add(im, apply_axis_matrix(ctx, xi, axis, C, zero), out=im)
    out = ctx.tmp(ctx.out_shape(), "f64")
    _place(ctx, re, out, {r - 1: (0, 1)})
    _place(ctx, im, out, {r - 1: (1, 1)})
    ctx.set_out(0, ctx.cast(out, x.dtype))
