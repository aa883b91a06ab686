"""ONNX model -> PerfDojo kernels in the text form.

Pipeline (:func:`import_model`):

1. load, inline model-local functions, run ONNX shape inference (strict);
2. constant-fold: ``Constant``, nodes whose inputs are all constants
   (evaluated with ``onnx.reference`` on a one-node model), and
   ``Shape``/``Size`` of statically shaped tensors; shape inference is re-run
   with the folded values so that shapes computed from constants become
   static;
3. emit every remaining node through the operator table (:mod:`.ops`),
   either all into one kernel (``fuse="graph"``: each node its top-level
   scopes, intermediate tensors ``tmp`` buffers) or one kernel per node
   (``fuse="node"``: intermediate tensors connect kernels by name).

Constants: one-element constants are literals; larger ones become extra
``in`` buffers whose data the caller supplies (``Kernel.constants``, saved as
``.npy`` by :meth:`ImportedModel.write`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

from .emit import ONNX_DTYPES, NUMPY_DTYPES, Ctx, Val, const_val
from .errors import OnnxImportError
from .kernel import Buffer, KernelBuilder, Namer
from .ops import OPS

RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
              "Multinomial", "Bernoulli"}


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------
@dataclass
class BufferInfo:
    """How one ``in``/``out`` buffer of a kernel relates to the ONNX graph."""

    buffer: str  # the buffer's name in the kernel
    onnx_name: str  # the ONNX tensor it holds
    kind: str  # 'graph_input', 'graph_output', 'constant', 'intermediate'
    shape: Tuple[int, ...]  # ONNX shape
    kernel_shape: Tuple[int, ...]  # declared shape (0-D -> [1], flat -> 1-D)
    dtype: str  # text-form dtype
    onnx_dtype: str  # ONNX element type name (e.g. FLOAT, BOOL)

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["shape"], d["kernel_shape"] = list(self.shape), list(self.kernel_shape)
        return d


@dataclass
class Kernel:
    """One generated kernel."""

    name: str
    text: str
    inputs: List[BufferInfo]
    outputs: List[BufferInfo]
    constants: Dict[str, np.ndarray]  # in-buffer name -> data
    nodes: List[str] = field(default_factory=list)  # the ONNX nodes it computes


@dataclass
class ImportedModel:
    kernels: List[Kernel]
    graph_inputs: List[Tuple[str, Tuple[int, ...], str]]
    graph_outputs: List[Tuple[str, Tuple[int, ...], str]]
    fuse: str
    output_constants: Dict[str, np.ndarray] = field(default_factory=dict)

    def constant_files(self) -> Dict[Tuple[str, str], str]:
        """(kernel, buffer) -> file name of a constant input: ``<buffer>.npy``,
        or ``<kernel>.<buffer>.npy`` where kernels (per-node mode) hold
        different data under the same buffer name."""
        by_name: Dict[str, List[np.ndarray]] = {}
        for k in self.kernels:
            for name, arr in k.constants.items():
                by_name.setdefault(name, []).append(arr)
        files = {}
        for k in self.kernels:
            for name in k.constants:
                arrs = by_name[name]
                shared = all(a.shape == arrs[0].shape and a.dtype == arrs[0].dtype
                             and np.array_equal(a, arrs[0], equal_nan=a.dtype.kind == "f")
                             for a in arrs)
                files[(k.name, name)] = f"{name}.npy" if shared else f"{k.name}.{name}.npy"
        return files

    def manifest(self) -> dict:
        files = self.constant_files()
        return {
            "format": "perfdojo-onnx-import/1",
            "fuse": self.fuse,
            "graph_inputs": [{"name": n, "shape": list(s), "onnx_dtype": t}
                             for n, s, t in self.graph_inputs],
            "graph_outputs": [{"name": n, "shape": list(s), "onnx_dtype": t}
                              for n, s, t in self.graph_outputs],
            "kernels": [{
                "name": k.name,
                "file": f"{k.name}.pd",
                "nodes": k.nodes,
                "inputs": [dict(b.to_json(), **({"file": files[(k.name, b.buffer)]}
                                                if b.kind == "constant" else {}))
                           for b in k.inputs],
                "outputs": [b.to_json() for b in k.outputs],
            } for k in self.kernels],
        }

    def write(self, directory: str) -> None:
        """DIR/<kernel>.pd, DIR/<constant buffer>.npy (see
        :meth:`constant_files`), DIR/manifest.json."""
        os.makedirs(directory, exist_ok=True)
        files = self.constant_files()
        for k in self.kernels:
            with open(os.path.join(directory, f"{k.name}.pd"), "w") as f:
                f.write(k.text)
            for name, arr in k.constants.items():
                np.save(os.path.join(directory, files[(k.name, name)]), arr)
        with open(os.path.join(directory, "manifest.json"), "w") as f:
            json.dump(self.manifest(), f, indent=1)


# --------------------------------------------------------------------------
# Graph preparation: inference and constant folding
# --------------------------------------------------------------------------
def _opset(model: onnx.ModelProto) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 1


def _infer(model: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except Exception as e:  # onnx raises several types
        strict_error = str(e).splitlines()[0]
    # strict inference also checks function bodies of operators that are
    # not expanded here; without it, every tensor used must still get a
    # static shape (checked where it is used)
    try:
        return shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:
        raise OnnxImportError(f"ONNX shape inference failed: {strict_error}")


def _types(model: onnx.ModelProto) -> Dict[str, Tuple[Optional[Tuple[int, ...]], int]]:
    """name -> (static shape or None, element type) from inference results."""
    out = {}
    g = model.graph
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type
        if not t.HasField("tensor_type"):
            out[vi.name] = (None, 0)
            continue
        tt = t.tensor_type
        shape = None
        if tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            shape = None if any(d is None for d in dims) else tuple(int(d) for d in dims)
        out[vi.name] = (shape, tt.elem_type)
    for init in g.initializer:
        out[init.name] = (tuple(init.dims), init.data_type)
    return out


def _eval_node(node: onnx.NodeProto, inputs: List[Optional[np.ndarray]],
               model: onnx.ModelProto) -> List[np.ndarray]:
    """Evaluate one node on constant inputs with ONNX's reference runtime."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    g_inputs, feeds = [], {}
    for name, arr in zip(node.input, inputs):
        if not name:
            continue
        g_inputs.append(helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape))
        feeds[name] = arr
    outs = [helper.make_empty_tensor_value_info(n) for n in node.output if n]
    graph = helper.make_graph([node], "fold", g_inputs, outs)
    m = helper.make_model(graph, opset_imports=list(model.opset_import))
    m.ir_version = model.ir_version
    res = ReferenceEvaluator(m).run(None, feeds)
    return [np.asarray(r) for r in res]


@dataclass
class Prepared:
    model: onnx.ModelProto
    opset: int
    types: Dict[str, Tuple[Optional[Tuple[int, ...]], int]]
    consts: Dict[str, np.ndarray]
    nodes: List[Tuple[int, onnx.NodeProto]]  # the nodes left to emit, with their index


def prepare(model: onnx.ModelProto) -> Prepared:
    from onnx import inliner
    if model.functions:
        model = inliner.inline_local_functions(model)
    opset = _opset(model)
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    consts: Dict[str, np.ndarray] = {i.name: numpy_helper.to_array(i)
                                     for i in model.graph.initializer}
    graph_input_names = {i.name for i in model.graph.input}
    for name in list(consts):
        if name in graph_input_names:  # an overridable default is an input
            del consts[name]
    work = list(enumerate(model.graph.node))  # (index in the original graph, node)
    current = model
    for _ in range(8):
        inferred = _infer(current)
        types = _types(inferred)
        left: List[Tuple[int, onnx.NodeProto]] = []
        changed = False
        for idx, node in work:
            if all(o in consts for o in node.output if o):
                continue
            folded = _try_fold(node, idx, consts, types, current)
            if folded is None:
                left.append((idx, node))
                continue
            for name, arr in zip([o for o in node.output if o], folded):
                consts[name] = arr
            changed = True
        expanded = _expand_functions(left, inferred, consts, opsets)
        if expanded is not None:
            left = expanded
        elif not changed or not _has_unknown_shapes(left, types, consts):
            break
        work = left
        current = _with_constants(model, consts, left)
    return Prepared(inferred, opset, types, consts, left)


def _function_body(node: onnx.NodeProto, opsets: Dict[str, int], input_types
                   ) -> Optional[onnx.FunctionProto]:
    """The ONNX function that defines ``node``'s operator at the model's
    opset of its domain."""
    domain = "" if node.domain == "ai.onnx" else node.domain
    opset = opsets.get(domain)
    if opset is None:
        return None
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
    except Exception:
        return None
    fn = onnx.FunctionProto()
    versions = [v for v in schema.function_opset_versions if v <= opset]
    if versions:
        fn.ParseFromString(schema.get_function_with_opset_version(max(versions)))
        return fn
    versions = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    if versions and all(t is not None for t in input_types):
        fn.ParseFromString(schema.get_context_dependent_function_with_opset_version(
            max(versions), node.SerializeToString(), [t.SerializeToString() for t in input_types]))
        return fn
    return None


def _expand_functions(left, inferred, consts, opsets) -> Optional[List[Tuple[int, onnx.NodeProto]]]:
    """Replace every node whose operator has no emitter but is defined as
    an ONNX function by the function's body; None if there is none."""
    from onnx.backend.test.case.node import function_expand_helper
    vtypes = {vi.name: vi.type for vi in list(inferred.graph.input) + list(inferred.graph.value_info)
              + list(inferred.graph.output)}
    out, any_expanded = [], False
    for k, (idx, node) in enumerate(left):
        if (node.op_type in OPS and node.domain in ("", "ai.onnx")) or node.op_type in RANDOM_OPS:
            out.append((idx, node))
            continue
        if node.op_type == "Scan" and node.domain in ("", "ai.onnx"):
            unrolled = _unroll_scan(node, idx, vtypes, consts, opsets.get("", 1))
            if unrolled is None:
                out.append((idx, node))
            else:
                out.extend((idx, n) for n in unrolled)
                any_expanded = True
            continue
        types = []
        for name in node.input:
            if not name:
                types.append(onnx.TypeProto())
            elif name in consts:
                arr = consts[name]
                types.append(onnx.helper.make_tensor_type_proto(
                    onnx.helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape))
            else:
                types.append(vtypes.get(name))
        fn = _function_body(node, opsets, types)
        if fn is None:
            out.append((idx, node))
            continue
        n = onnx.NodeProto()
        n.CopyFrom(node)
        domain = "" if node.domain == "ai.onnx" else node.domain
        schema = onnx.defs.get_schema(node.op_type, opsets[domain], domain)
        present = {a.name for a in n.attribute}
        for attr_name, attr in schema.attributes.items():
            if attr_name not in present and attr.default_value and attr.default_value.name:
                n.attribute.extend([attr.default_value])
        prefix = f"{node.name or node.op_type}_{idx}_fn_"
        for sub in function_expand_helper(n, fn, prefix):
            if not sub.name:
                sub.name = prefix + sub.op_type
            out.append((idx, sub))
        any_expanded = True
    return out if any_expanded else None


def _unroll_scan(node: onnx.NodeProto, idx: int, vtypes, consts, opset: int
                 ) -> Optional[List[onnx.NodeProto]]:
    """Scan (opset >= 9) with a static sequence length as plain nodes: per
    iteration, Gather the scan inputs' slices, a renamed copy of the body,
    and at the end Reshape + Concat the per-iteration scan outputs.  Adds
    the body's initializers and the index constants to ``consts``."""
    from onnx import helper
    if opset < 9:
        raise OnnxImportError("Scan before opset 9 (batched, with sequence_lens) is not supported",
                              node.op_type, node.name, idx)
    a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    body: onnx.GraphProto = a["body"]
    m = a["num_scan_inputs"]
    n_state = len(node.input) - m
    k_out = len(body.output) - n_state
    in_axes = list(a.get("scan_input_axes", [0] * m))
    in_dirs = list(a.get("scan_input_directions", [0] * m))
    out_axes = list(a.get("scan_output_axes", [0] * k_out))
    out_dirs = list(a.get("scan_output_directions", [0] * k_out))
    scan_inputs = list(node.input[n_state:])
    shapes = []
    for name in scan_inputs:
        if name in consts:
            shapes.append(consts[name].shape)
            continue
        t = vtypes.get(name)
        if t is None or not t.tensor_type.HasField("shape") or \
                any(not d.HasField("dim_value") for d in t.tensor_type.shape.dim):
            return None  # shapes not known yet: after the next inference
        shapes.append(tuple(d.dim_value for d in t.tensor_type.shape.dim))
    in_axes = [ax % len(sh) for ax, sh in zip(in_axes, shapes)]
    T = shapes[0][in_axes[0]]
    if T == 0:
        raise OnnxImportError("Scan over an empty sequence", node.op_type, node.name, idx)
    prefix = f"{node.name or 'Scan'}_{idx}_"
    nodes: List[onnx.NodeProto] = []
    body_inputs = [i.name for i in body.input]
    for init in body.initializer:
        consts[prefix + init.name] = numpy_helper.to_array(init)
    state = list(node.input[:n_state])
    per_step: List[List[str]] = [[] for _ in range(k_out)]
    for t in range(T):
        rename = {init.name: prefix + init.name for init in body.initializer}
        for j, name in enumerate(scan_inputs):
            pos = T - 1 - t if in_dirs[j] else t
            ind = f"{prefix}idx{pos}"
            consts[ind] = np.asarray(pos, dtype=np.int64)
            sl = f"{prefix}t{t}_in{j}"
            nodes.append(helper.make_node("Gather", [name, ind], [sl], axis=in_axes[j],
                                          name=f"{prefix}t{t}_gather{j}"))
            rename[body_inputs[n_state + j]] = sl
        for i in range(n_state):
            rename[body_inputs[i]] = state[i]
        defined = set(rename) | {o for bn in body.node for o in bn.output}

        def nm(x: str) -> str:
            if not x:
                return x
            if x in rename:
                return rename[x]
            return f"{prefix}t{t}_{x}" if x in defined else x  # outer-scope names stay
        for bn in body.node:
            c = onnx.NodeProto()
            c.CopyFrom(bn)
            c.ClearField("input")
            c.ClearField("output")
            c.input.extend(nm(x) for x in bn.input)
            c.output.extend(nm(x) for x in bn.output)
            c.name = f"{prefix}t{t}_{bn.name or bn.op_type}"
            nodes.append(c)
        outs = [nm(o.name) for o in body.output]
        state = outs[:n_state]
        for k in range(k_out):
            per_step[k].append(outs[n_state + k])
    for i in range(n_state):
        nodes.append(helper.make_node("Identity", [state[i]], [node.output[i]],
                                      name=f"{prefix}state{i}"))
    for k in range(k_out):
        if n_state + k >= len(node.output) or not node.output[n_state + k]:
            continue
        steps = per_step[k][::-1] if out_dirs[k] else per_step[k]
        rank = len(body.output[n_state + k].type.tensor_type.shape.dim) \
            if body.output[n_state + k].type.tensor_type.HasField("shape") else None
        ax = out_axes[k]
        if ax < 0:
            if rank is None:
                return None
            ax %= rank + 1
        parts = []
        for t, y in enumerate(steps):
            r = f"{prefix}out{k}_t{t}"
            if opset >= 13:
                axes_name = f"{prefix}oaxis{k}"
                consts[axes_name] = np.asarray([ax], dtype=np.int64)
                nodes.append(helper.make_node("Unsqueeze", [y, axes_name], [r],
                                              name=f"{prefix}unsqueeze{k}_{t}"))
            else:
                nodes.append(helper.make_node("Unsqueeze", [y], [r], axes=[ax],
                                              name=f"{prefix}unsqueeze{k}_{t}"))
            parts.append(r)
        nodes.append(helper.make_node("Concat", parts, [node.output[n_state + k]], axis=ax,
                                      name=f"{prefix}concat{k}"))
    return nodes


def _has_unknown_shapes(nodes, types, consts) -> bool:
    for _, n in nodes:
        for name in list(n.input) + list(n.output):
            if name and name not in consts and types.get(name, (None, 0))[0] is None:
                return True
    return False


def _with_constants(model: onnx.ModelProto, consts, left) -> onnx.ModelProto:
    """The model with folded values as initializers and only ``left`` nodes."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    used = {i for _, n in left for i in n.input} | {o.name for o in model.graph.output}
    del m.graph.node[:]
    m.graph.node.extend([n for _, n in left])
    del m.graph.initializer[:]
    del m.graph.value_info[:]
    inputs = {i.name for i in model.graph.input}
    for name, arr in consts.items():
        if name in used and name not in inputs:
            m.graph.initializer.append(numpy_helper.from_array(np.asarray(arr), name))
    return m


def _try_fold(node, idx, consts, types, model) -> Optional[List[np.ndarray]]:
    op = node.op_type
    if node.domain not in ("", "ai.onnx") or op in RANDOM_OPS:
        return None
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
           for a in node.attribute):
        return None
    if op in ("Shape", "Size"):
        shape = types.get(node.input[0], (None, 0))[0]
        if node.input[0] in consts:
            shape = consts[node.input[0]].shape
        if shape is None:
            return None
        if op == "Size":
            return [np.asarray(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)]
        attrs = {a.name: a.i for a in node.attribute}
        r = len(shape)
        start = attrs.get("start", 0)
        end = attrs.get("end", r)
        start = min(max(start + r if start < 0 else start, 0), r)
        end = min(max(end + r if end < 0 else end, 0), r)
        return [np.asarray(shape[start:end], dtype=np.int64)]
    ins = [n for n in node.input]
    if any(n and n not in consts for n in ins):
        return None
    if op == "Dropout" and len(ins) > 2 and ins[2] and bool(consts[ins[2]].reshape(-1)[0]):
        return None  # training-mode dropout is random
    try:
        return _eval_node(node, [consts[n] if n else None for n in ins], model)
    except Exception as e:
        raise OnnxImportError(f"constant folding failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
                              op, node.name, idx)


# --------------------------------------------------------------------------
# Emission
# --------------------------------------------------------------------------
def _hint(onnx_name: str) -> str:
    """A readable buffer-name hint: expanded function bodies prefix their
    tensors with the function's node (``..._expanded_function_X2D``); keep
    the tensor's own part."""
    return re.split(r"_expanded_function_|_fn_", onnx_name)[-1] or onnx_name


def _dtype_name(elem: int) -> str:
    return onnx.TensorProto.DataType.Name(elem)


class _KernelState:
    """One kernel under construction: its builder and the ONNX tensors it
    knows (name -> Val)."""

    def __init__(self, name: str, per_node: bool):
        self.kb = KernelBuilder(name)
        self.vals: Dict[str, Val] = {}
        self.constants: Dict[str, np.ndarray] = {}
        self.const_onnx: Dict[str, str] = {}  # buffer -> onnx name
        self.per_node = per_node
        self.nodes: List[str] = []


class _Importer:
    def __init__(self, prep: Prepared, fuse: str, graph_name: str):
        self.p = prep
        self.fuse = fuse
        self.graph_name = graph_name
        g = prep.model.graph
        self.graph_inputs = [i.name for i in g.input if i.name not in prep.consts
                             and i.name not in {x.name for x in g.initializer}]
        self.graph_outputs = [o.name for o in g.output]
        self.kernels: List[Kernel] = []
        self.kernel_names = Namer()

    # ---- types -------------------------------------------------------------
    def tensor_type(self, name: str, where: Optional[Tuple[int, onnx.NodeProto]] = None):
        shape, elem = self.p.types.get(name, (None, 0))
        if name in self.p.consts:
            arr = self.p.consts[name]
            return tuple(arr.shape), onnx.helper.np_dtype_to_tensor_dtype(arr.dtype)
        err = (lambda msg: OnnxImportError(msg, where[1].op_type, where[1].name, where[0])) \
            if where else OnnxImportError
        if shape is None:
            raise err(f"tensor '{name}' has no static shape after shape inference")
        if elem not in ONNX_DTYPES:
            raise err(f"tensor '{name}' has element type {_dtype_name(elem) if elem else 'unknown'}, "
                      "which the text form lacks")
        return shape, elem

    # ---- values in a kernel ------------------------------------------------
    def lookup(self, ks: _KernelState, name: str, where) -> Val:
        if name in ks.vals:
            return ks.vals[name]
        if name in self.p.consts:
            arr = self.p.consts[name]
            try:
                v = const_val(arr)
            except TypeError:
                raise OnnxImportError(f"constant '{name}' has element type {arr.dtype}, "
                                      "which the text form lacks",
                                      where[1].op_type, where[1].name, where[0]) from None
            ks.vals[name] = v
            setattr(v, "onnx_name", name)
            return v
        # a graph input, or (per-node mode) another kernel's output
        shape, elem = self.tensor_type(name, where)
        if any(n == 0 for n in shape):  # an empty tensor is a known constant
            v = Val(shape, ONNX_DTYPES[elem], const=np.zeros(shape, NUMPY_DTYPES[ONNX_DTYPES[elem]]))
            ks.vals[name] = v
            return v
        b = ks.kb.buffer(_hint(name), "in", ONNX_DTYPES[elem], shape, onnx_name=name)
        b.owner = name
        v = Val(shape, ONNX_DTYPES[elem], buf=b)
        ks.vals[name] = v
        return v

    def materializer(self, ks: _KernelState) -> Callable[[Val], Buffer]:
        def materialize(v: Val) -> Buffer:
            onnx_name = getattr(v, "onnx_name", None) or "const"
            b = ks.kb.buffer(_hint(onnx_name), "in", v.dtype, v.shape, onnx_name=onnx_name)
            b.owner = onnx_name
            ks.constants[b.name] = np.ascontiguousarray(v.const.astype(NUMPY_DTYPES[v.dtype]))
            ks.const_onnx[b.name] = onnx_name
            return b
        return materialize

    def bind_output(self, ks: _KernelState, name: str, v: Val, as_out: bool) -> Val:
        """Make ``v`` the ONNX tensor ``name``: a fresh ``tmp`` buffer is
        adopted (renamed, made ``out`` when ``as_out``); anything else is
        copied when it must be an ``out`` buffer."""
        if 0 in v.shape:  # empty: known without computing, never a buffer
            ks.vals[name] = v
            return v
        fresh = v.buf is not None and v.buf.owner is None and v.buf.role == "tmp"
        if fresh:
            v.buf.owner = name
            v.buf.onnx_name = name
            ks.kb.rename(v.buf, _hint(name))
            if as_out:
                v.buf.role = "out"
            ks.vals[name] = v
            return v
        if not as_out:
            ks.vals[name] = v
            return v
        b = ks.kb.buffer(_hint(name), "out", v.dtype, v.shape, onnx_name=name)
        b.owner = name
        out = Val(v.shape, v.dtype, buf=b)
        ctx = Ctx(ks.kb, onnx.NodeProto(), -1, [], [], self.p.opset, self.materializer(ks))
        ctx.copy(v, out=out)
        ks.vals[name] = out
        return out

    def emit_node(self, ks: _KernelState, idx: int, node: onnx.NodeProto,
                  outputs_as_out: Callable[[str], bool]) -> None:
        where = (idx, node)
        if node.domain not in ("", "ai.onnx"):
            raise OnnxImportError(f"operator domain '{node.domain}' is not supported",
                                  node.op_type, node.name, idx)
        emitter = OPS.get(node.op_type)
        if emitter is None:
            raise OnnxImportError(f"operator {node.op_type} is not supported"
                                  + _WHY.get(node.op_type, ""), node.op_type, node.name, idx)
        inputs = [self.lookup(ks, n, where) if n else None for n in node.input]
        out_types = []
        for n in node.output:
            if not n:
                out_types.append(((), "f32"))
                continue
            shape, elem = self.tensor_type(n, where)
            out_types.append((shape, ONNX_DTYPES[elem]))
        ctx = Ctx(ks.kb, node, idx, inputs, out_types, self.p.opset, self.materializer(ks),
                  lambda n: self.tensor_type(n, where)[1] == onnx.TensorProto.BOOL)
        empty = [i for i, (shape, _) in enumerate(out_types) if node.output[i] and 0 in shape]
        if len(empty) < len([n for n in node.output if n]):
            emitter(ctx)
        for i in empty:  # an empty result is a constant with no elements
            shape, dtype = out_types[i]
            ctx.outputs[i] = Val(shape, dtype, const=np.zeros(shape, NUMPY_DTYPES[dtype]))
        ks.nodes.append(node.name or f"{node.op_type}#{idx}")
        for i, n in enumerate(node.output):
            if not n:
                continue
            if i not in ctx.outputs:
                raise OnnxImportError(f"output {i} ('{n}') is not supported", node.op_type, node.name, idx)
            v = ctx.outputs[i]
            shape, dtype = out_types[i]
            if v.dtype != dtype:
                raise AssertionError(f"{node.op_type} '{n}': emitted {v.dtype}, expected {dtype}")
            if tuple(v.shape) != tuple(shape):
                if v.size != int(np.prod(shape, dtype=np.int64)):
                    raise AssertionError(f"{node.op_type} '{n}': emitted shape {v.shape}, expected {shape}")
                from .ops import reshape_copy
                v = reshape_copy(ctx, v, shape)
            if v.const is not None:
                setattr(v, "onnx_name", n)
            self.bind_output(ks, n, v, outputs_as_out(n))

    # ---- kernels -----------------------------------------------------------
    def finish(self, ks: _KernelState, outputs: Sequence[str]) -> None:
        """Declare the kernel's outputs (copying constants or inputs where
        needed) and record the kernel."""
        for n in outputs:
            if 0 in self.tensor_type(n)[0]:
                if n in self.graph_outputs:
                    raise OnnxImportError(f"graph output '{n}' is empty (a kernel needs elements)")
                continue
            v = ks.vals.get(n)
            if v is None:
                v = self.lookup(ks, n, None)
            if v.buf is None or v.buf.role != "out" or v.buf.owner != n:
                self.bind_output(ks, n, v, True)
        ins, outs = [], []
        out_set = set(self.graph_outputs)
        for b in ks.kb.buffers:
            if b.role == "tmp":
                continue
            onnx_name = b.onnx_name
            if b.name in ks.constants:
                kind = "constant"
            elif b.role == "in":
                kind = "graph_input" if onnx_name in self.graph_inputs else "intermediate"
            else:
                kind = "graph_output" if onnx_name in out_set else "intermediate"
            if b.name in ks.constants:
                src = self.p.consts.get(onnx_name, ks.constants[b.name])
                shape = ks.constants[b.name].shape
                elem = onnx.helper.np_dtype_to_tensor_dtype(np.asarray(src).dtype)
            else:
                shape, elem = self.tensor_type(onnx_name)
            info = BufferInfo(b.name, onnx_name, kind, tuple(shape), b.decl_shape, b.dtype,
                              _dtype_name(elem))
            (ins if b.role == "in" else outs).append(info)
        if not outs:
            return  # every result is empty: nothing to compute
        self.kernels.append(Kernel(ks.kb.name, ks.kb.render(), ins, outs, dict(ks.constants),
                                   ks.nodes))

    def run(self) -> None:
        out_set = set(self.graph_outputs)
        if self.fuse == "graph":
            ks = _KernelState(self.kernel_names(self.graph_name), False)
            for idx, node in self.p.nodes:
                self.emit_node(ks, idx, node, lambda n: n in out_set)
            self.finish(ks, self.graph_outputs)
        else:
            produced = set()
            for idx, node in self.p.nodes:
                ks = _KernelState(self.kernel_names((node.name or f"{node.op_type}_{idx}")), True)
                self.emit_node(ks, idx, node, lambda n: True)
                outs = [o for o in node.output if o]
                self.finish(ks, outs)
                produced.update(outs)
            # graph outputs that no node computes: constants or inputs
            rest = [o for o in self.graph_outputs if o not in produced]
            if rest:
                ks = _KernelState(self.kernel_names("outputs"), True)
                self.finish(ks, rest)


_WHY = {
    "ArgMax": " (integer index outputs are not supported)",
    "GridSample": " (the sampling positions are run-time data, not linear indices)",
    "DeformConv": " (the sampling offsets are run-time data, not linear indices)",
    "Det": " (a determinant has no loop form with the text form's primitives)",
    "OptionalGetElement": " (optional values are not tensors)",
    "NonZero": " (the output shape depends on the data)",
    "Unique": " (the output shape depends on the data)",
    "ArgMin": " (integer index outputs are not supported)",
}


def load(model_or_path: Union[str, os.PathLike, onnx.ModelProto]) -> onnx.ModelProto:
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    return onnx.load(os.fspath(model_or_path))


def import_model(model_or_path: Union[str, os.PathLike, onnx.ModelProto],
                 fuse: str = "graph", name: Optional[str] = None) -> ImportedModel:
    """Import an ONNX model.  ``fuse="graph"`` gives one kernel for the whole
    graph, ``fuse="node"`` one kernel per (non-constant) node.  Raises
    :class:`OnnxImportError` naming the node and the reason when a node
    cannot be expressed."""
    if fuse not in ("graph", "node"):
        raise ValueError("fuse must be 'graph' or 'node'")
    model = load(model_or_path)
    if name is None:
        if isinstance(model_or_path, (str, os.PathLike)):
            name = os.path.splitext(os.path.basename(os.fspath(model_or_path)))[0]
        else:
            name = model.graph.name or "model"
    prep = prepare(model)
    imp = _Importer(prep, fuse, name)
    imp.run()
    gi = [(n, *[(s, _dtype_name(e)) for s, e in [imp.tensor_type(n)]][0]) for n in imp.graph_inputs]
    go = [(n, *[(s, _dtype_name(e)) for s, e in [imp.tensor_type(n)]][0]) for n in imp.graph_outputs]
    return ImportedModel(imp.kernels, gi, go, fuse)


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------
Executor = Callable[[Kernel, Dict[str, np.ndarray]], Dict[str, np.ndarray]]


def run(imported: ImportedModel, feeds: Dict[str, np.ndarray], executor: Executor
        ) -> Dict[str, np.ndarray]:
    """Run the kernels in order (per-node kernels chained through the
    manifest's tensor names) and return the graph outputs by ONNX name.

    ``executor(kernel, inputs)`` runs one kernel on ``{buffer: array}`` (in
    the kernel's declared shapes and dtypes) and returns ``{buffer: array}``
    for its ``out`` buffers; see :func:`interpreter` and :func:`compiled`."""
    env: Dict[str, np.ndarray] = dict(feeds)
    for k in imported.kernels:
        inputs = {}
        for b in k.inputs:
            arr = k.constants[b.buffer] if b.kind == "constant" else env[b.onnx_name]
            arr = np.asarray(arr)
            if arr.dtype == np.bool_:
                arr = arr.astype(np.float32)
            inputs[b.buffer] = np.ascontiguousarray(
                arr.astype(NUMPY_DTYPES[b.dtype], copy=False).reshape(b.kernel_shape))
        outs = executor(k, inputs)
        for b in k.outputs:
            arr = np.asarray(outs[b.buffer]).reshape(b.shape)
            if b.onnx_dtype == "BOOL":
                arr = arr != 0
            else:
                arr = arr.astype(onnx.helper.tensor_dtype_to_np_dtype(
                    getattr(onnx.TensorProto, b.onnx_dtype)), copy=False)
            env[b.onnx_name] = arr
    return {n: env[n] for n, _, _ in imported.graph_outputs}


def _core():
    import perfdojo  # the bindings (perfdojo._core)
    if not hasattr(perfdojo, "Kernel"):
        raise ImportError("perfdojo bindings (perfdojo.Kernel) are not available")
    return perfdojo


def interpreter(**kwargs) -> Executor:
    """An executor using the bindings' reference interpreter."""
    pd = _core()

    def execute(k: Kernel, inputs):
        return pd.Kernel.parse(k.text).interpret(inputs=inputs, **kwargs)
    return execute


def compiled(threads: int = 1, **kwargs) -> Executor:
    """An executor compiling each kernel for this CPU (JIT, child process)."""
    pd = _core()

    def execute(k: Kernel, inputs):
        return pd.Kernel.parse(k.text).run(inputs=inputs, threads=threads, **kwargs)
    return execute
