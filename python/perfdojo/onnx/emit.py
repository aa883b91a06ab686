"""Tensor-level emission helpers shared by every operator.

A :class:`Val` is an ONNX tensor as seen inside one kernel: either a buffer
or a constant (a numpy array).  :class:`Ctx` is what an operator's emitter
works with: its inputs and attributes, and helpers that emit whole-tensor
statements (element-wise primitives with NumPy broadcasting, reductions,
copies with index maps).  Every helper folds at import time when all its
operands are constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, List, NoReturn, Optional, Sequence, Tuple, Union

import numpy as np
import onnx
from onnx import helper

from .errors import OnnxImportError
from .kernel import (COMPARISONS, FLOAT_DTYPES, PRIMITIVES,
                     REDUCE_ASSIGN, Access, Buffer, IterVar, KernelBuilder,
                     Lin, Literal, Operand)

Shape = Tuple[int, ...]

# ONNX element type -> text-form dtype (bool is stored as f32 holding 0/1).
ONNX_DTYPES = {
    onnx.TensorProto.FLOAT: "f32",
    onnx.TensorProto.DOUBLE: "f64",
    onnx.TensorProto.FLOAT16: "f16",
    onnx.TensorProto.BFLOAT16: "bf16",
    onnx.TensorProto.BOOL: "f32",
    onnx.TensorProto.INT8: "i8",
    onnx.TensorProto.INT16: "i16",
    onnx.TensorProto.INT32: "i32",
    onnx.TensorProto.INT64: "i64",
}
NUMPY_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64,
                "i8": np.int8, "i16": np.int16, "i32": np.int32,
                "i64": np.int64}


def numpy_to_dtype(dt: np.dtype) -> Optional[str]:
    dt = np.dtype(dt)
    if dt == np.bool_:
        return "f32"
    for k, v in NUMPY_DTYPES.items():
        if dt == np.dtype(v):
            return k
    return None


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


@dataclass(eq=False)
class Val:
    """A tensor inside a kernel: ``buf`` (a buffer) or ``const`` (an array
    already converted to the kernel dtype; bools as 0/1 floats)."""

    shape: Shape
    dtype: str
    buf: Optional[Buffer] = None
    const: Optional[np.ndarray] = None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def is_scalar_const(self) -> bool:
        return self.const is not None and self.const.size == 1

    def scalar(self) -> float:
        return self.const.reshape(-1)[0].item()


def const_val(arr: np.ndarray) -> Val:
    arr = np.asarray(arr)
    dtype = numpy_to_dtype(arr.dtype)
    if dtype is None:
        raise TypeError(f"element type {arr.dtype} has no text-form dtype")
    if arr.dtype == np.bool_:
        arr = arr.astype(np.float32)
    return Val(tuple(int(s) for s in arr.shape), dtype, const=arr)


def broadcast_shapes(*shapes: Shape) -> Shape:
    return tuple(int(s) for s in np.broadcast_shapes(*shapes))


def bcast_index(shape: Shape, out_shape: Shape, idx: Sequence[Lin]) -> List[Lin]:
    """The index into a tensor of ``shape`` broadcast (NumPy rules) to
    ``out_shape`` when the output is at ``idx``."""
    off = len(out_shape) - len(shape)
    return [Lin() if (n == 1 and out_shape[off + d] != 1) else idx[off + d]
            for d, n in enumerate(shape)]


def loop_vars(n: int, start: int = 0) -> List[Lin]:
    return [Lin.var(start + d) for d in range(n)]


def loops_of(shape: Shape) -> Tuple[int, ...]:
    return tuple(shape) if shape else (1,)


Arg = Union[Val, float, int, IterVar]


class Ctx:
    """The emission context of one ONNX node inside a kernel."""

    def __init__(self, kb: KernelBuilder, node: onnx.NodeProto, index: int,
                 inputs: List[Optional[Val]], out_types: List[Tuple[Shape, str]],
                 opset: int, materialize: Callable[[Val], Buffer],
                 is_bool: Callable[[str], bool] = lambda name: False):
        self.kb = kb
        self.node = node
        self.index = index
        self.inputs = inputs
        self.out_types = out_types
        self.opset = opset
        self._materialize = materialize
        self._is_bool = is_bool
        self.outputs: Dict[int, Val] = {}
        self.attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        self.hint = (node.name or node.op_type).lower()

    # ---- node access -------------------------------------------------------
    def refuse(self, reason: str) -> NoReturn:
        raise OnnxImportError(reason, self.node.op_type, self.node.name, self.index)

    def attr(self, name: str, default=None):
        v = self.attrs.get(name, default)
        if isinstance(v, bytes):
            v = v.decode()
        return v

    def has_input(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def inp(self, i: int) -> Val:
        if not self.has_input(i):
            self.refuse(f"input {i} is missing")
        return self.inputs[i]

    def const_input(self, i: int, what: str) -> np.ndarray:
        v = self.inp(i)
        if v.const is None:
            self.refuse(f"{what} (input {i}) must be a constant; it is computed at run time")
        return v.const

    def node_input_is_bool(self, i: int) -> bool:
        """Is input i an ONNX bool tensor (stored as f32 0/1)?"""
        return bool(self.node.input[i]) and self._is_bool(self.node.input[i])

    def node_output_is_bool(self, i: int) -> bool:
        return bool(self.node.output[i]) and self._is_bool(self.node.output[i])

    def wants_output(self, i: int) -> bool:
        return i < len(self.node.output) and bool(self.node.output[i])

    def out_shape(self, i: int = 0) -> Shape:
        return self.out_types[i][0]

    def out_dtype(self, i: int = 0) -> str:
        return self.out_types[i][1]

    def set_out(self, i: int, v: Val) -> None:
        self.outputs[i] = v

    # ---- buffers and operands -----------------------------------------------
    def tmp(self, shape: Shape, dtype: str, hint: Optional[str] = None) -> Val:
        b = self.kb.buffer(hint or self.hint, "tmp", dtype, shape)
        return Val(tuple(shape), dtype, buf=b)

    def access(self, v: Val, idx: Sequence[Lin]) -> Operand:
        """An operand reading ``v`` at ``idx`` (a literal for a one-element
        constant, which is then the same at every index)."""
        if v.is_scalar_const:
            if not is_float(v.dtype) and abs(int(v.scalar())) > 2**53:
                self.refuse(f"integer constant {int(v.scalar())} is beyond what a literal holds (2^53)")
            return Literal(v.scalar(), v.dtype)
        if v.buf is None:
            v.buf = self._materialize(v)
        return Access(v.buf, tuple(idx))

    def target(self, v: Val, idx: Sequence[Lin]) -> Access:
        assert v.buf is not None
        return Access(v.buf, tuple(idx))

    def as_val(self, a: Arg, dtype: str) -> Union[Val, IterVar]:
        if isinstance(a, (Val, IterVar)):
            return a
        return Val((), dtype, const=np.asarray(a, dtype=NUMPY_DTYPES.get(dtype, np.float64)))

    # ---- element-wise -------------------------------------------------------
    def ew(self, prim: str, *args: Arg, out: Optional[Val] = None,
           dtype: Optional[str] = None) -> Val:
        """Apply a primitive element-wise with NumPy broadcasting.

        The computation type is ``dtype`` or the type of the first value
        operand (the second for ``select``); a comparison gives 0/1 in f32
        (the representation of bool), computed in its operands' type.
        Returns ``out`` (written) or a new ``tmp``; folds constants.
        """
        value_args = [a for a in args if isinstance(a, Val)]
        if prim == "select":
            ref = args[1] if isinstance(args[1], Val) else (args[2] if isinstance(args[2], Val) else None)
        else:
            ref = value_args[0] if value_args else None
        cdtype = dtype or (ref.dtype if ref is not None else (out.dtype if out else "f32"))
        if prim == "cast":
            cdtype = dtype or (out.dtype if out is not None else cdtype)
        vals = [self.as_val(a, cdtype) for a in args]
        for k, a in enumerate(vals):
            if isinstance(a, Val) and a.dtype != cdtype and prim != "cast" \
                    and not (prim == "select" and k == 0):
                raise AssertionError(f"{prim}: operand of type {a.dtype} in a {cdtype} operation")
        shape = broadcast_shapes(*[a.shape for a in vals if isinstance(a, Val)]) \
            if any(isinstance(a, Val) for a in vals) else ()
        if prim in COMPARISONS and out is not None and out.dtype == cdtype:
            res_dtype = cdtype  # 0/1 in the operands' type (then cast to f32)
        elif prim in COMPARISONS:
            res_dtype = "f32"
            if cdtype != "f32" and not all(isinstance(a, Val) and a.const is not None for a in vals):
                t = self.ew(prim, *vals, dtype=cdtype, out=self.tmp(shape, cdtype))
                return self.ew("cast", t, out=out, dtype="f32")
        else:
            res_dtype = cdtype
        if out is None and 0 in shape:
            return Val(shape, res_dtype, const=np.zeros(shape, NUMPY_DTYPES.get(res_dtype, np.float32)))
        if out is None and all(isinstance(a, Val) and a.const is not None for a in vals):
            return self._fold(prim, vals, res_dtype)
        if out is not None:
            assert out.dtype == res_dtype, (prim, out.dtype, res_dtype)
            shape = out.shape  # writing a (possibly larger) declared output
        else:
            out = self.tmp(shape, res_dtype)
        idx = loop_vars(len(shape))
        ops = [a if isinstance(a, IterVar) else self.access(a, bcast_index(a.shape, shape, idx))
               for a in vals]
        if prim == "cast" and isinstance(ops[0], Literal):
            ops[0] = Literal(ops[0].value, out.dtype)  # a literal has no source type
            prim = "copy"
        self.kb.emit(loops_of(shape), self.target(out, idx), prim, ops)
        return out

    def _fold(self, prim: str, vals: List[Val], dtype: str) -> Val:
        fn = PRIMITIVES[prim][1]
        with np.errstate(all="ignore"):
            if is_float(dtype):
                r = fn(*[v.const.astype(np.float64) for v in vals])
            else:
                r = fn(*[v.const for v in vals])
                if prim == "div":
                    self.refuse("integer division is not supported")
        r = np.asarray(r).astype(NUMPY_DTYPES.get(dtype, np.float32))
        return Val(tuple(r.shape), dtype, const=r)

    def copy(self, src: Val, out: Optional[Val] = None) -> Val:
        return self.ew("copy", src, out=out)

    def cast(self, src: Val, dtype: str) -> Val:
        if src.dtype == dtype:
            return src
        return self.ew("cast", src, dtype=dtype, out=None) if src.const is None else \
            Val(src.shape, dtype, const=src.const.astype(NUMPY_DTYPES[dtype]))

    # shorthands used by the composite operators
    def add(self, a, b, out=None): return self.ew("add", a, b, out=out)
    def sub(self, a, b, out=None): return self.ew("sub", a, b, out=out)
    def mul(self, a, b, out=None): return self.ew("mul", a, b, out=out)
    def div(self, a, b, out=None): return self.ew("div", a, b, out=out)
    def select(self, c, a, b, out=None): return self.ew("select", c, a, b, out=out)

    # ---- index-mapped copies -------------------------------------------------
    def gather_copy(self, src: Val, out: Val, loops: Sequence[int],
                    out_idx: Sequence[Lin], src_idx: Sequence[Lin]) -> None:
        """``out[out_idx] = src[src_idx]`` over ``loops``."""
        self.kb.emit(loops_of(tuple(loops)), self.target(out, out_idx), "copy",
                     [self.access(src, src_idx)])

    def fill(self, out: Val, value: float) -> None:
        idx = loop_vars(len(out.shape))
        self.kb.emit(loops_of(out.shape), self.target(out, idx), "copy",
                     [Literal(value, out.dtype)])

    # ---- reductions ---------------------------------------------------------
    def reduce(self, x: Val, axes: Sequence[int], op: str, keepdims: bool = True,
               pre: Optional[str] = None, out: Optional[Val] = None) -> Val:
        """Reduce ``x`` over ``axes`` with ``op`` (add/mul/max/min); ``pre``
        ('abs' or 'square') is applied to each element in the update."""
        r = len(x.shape)
        axes = sorted({a % r for a in axes}) if r else []
        kept = [d for d in range(r) if d not in axes]
        full_shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
        res_shape = full_shape if keepdims else tuple(x.shape[d] for d in kept)
        if x.const is not None and out is None:
            return self._fold_reduce(x, axes, op, keepdims, pre)
        if out is None:
            out = self.tmp(res_shape, x.dtype)
        if not is_float(x.dtype) and op in ("max", "min"):
            self.refuse(f"integer {op} reduction is not supported")
        init = {"add": 0, "mul": 1, "max": -math.inf, "min": math.inf}[op]
        self.fill(out, init)
        # loops: kept dims (outer, in order), then reduced dims
        order = kept + axes
        var_of = {d: Lin.var(k) for k, d in enumerate(order)}
        x_idx = [var_of[d] for d in range(r)]
        if keepdims:
            o_idx = [Lin() if d in axes else var_of[d] for d in range(r)]
        else:
            o_idx = [var_of[d] for d in kept]
        xa = self.access(x, x_idx)
        prim, args = {None: ("copy", [xa]), "abs": ("abs", [xa]),
                      "square": ("mul", [xa, xa])}[pre]
        loops = [x.shape[d] for d in order]
        self.kb.emit(loops_of(tuple(loops)), self.target(out, o_idx), prim, args,
                     assign=REDUCE_ASSIGN[op])
        return out

    def _fold_reduce(self, x, axes, op, keepdims, pre) -> Val:
        a = x.const.astype(np.float64) if is_float(x.dtype) else x.const
        a = {None: a, "abs": np.abs(a), "square": a * a}[pre]
        fn = {"add": np.sum, "mul": np.prod, "max": np.max, "min": np.min}[op]
        r = fn(a, axis=tuple(axes), keepdims=keepdims).astype(NUMPY_DTYPES[x.dtype])
        return Val(tuple(r.shape), x.dtype, const=r)

    def mean(self, x: Val, axes: Sequence[int], keepdims: bool = True,
             pre: Optional[str] = None) -> Val:
        s = self.reduce(x, axes, "add", keepdims, pre)
        n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        if n == 1:
            return s
        return self.div(s, float(n), out=None if s.const is not None else s)
