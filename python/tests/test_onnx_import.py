"""Tests of the ONNX importer (perfdojo.onnx), run by scripts/test.sh with
the package the build assembles. The conformance subset below must keep
passing: each case is
imported with fuse="graph", run interpreted and compiled and compared with
ONNX's expected outputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "pd-import-onnx", "pd-import-onnx")


import perfdojo  # noqa: E402
import perfdojo.onnx as po  # noqa: E402


def pd_translate_ok(text: str, tmp_path) -> None:
    """The text parses and verifies."""
    perfdojo.Kernel.parse(text)


# --------------------------------------------------------------------------
# A subset of the ONNX backend node tests, across operator families
# --------------------------------------------------------------------------
CONFORMANCE_SUBSET = [
    # element-wise, broadcasting, activations
    "test_add_bcast", "test_sub_bcast", "test_div_bcast", "test_relu", "test_sigmoid",
    "test_gelu_tanh_2", "test_clip_splitbounds", "test_leakyrelu", "test_selu",
    "test_hardswish", "test_prelu_broadcast", "test_mish", "test_shrink_soft", "test_sign",
    "test_reciprocal", "test_max_example", "test_mean_example",
    # contractions, convolution, pooling
    "test_matmul_4d_1d", "test_gemm_all_attributes", "test_conv_with_strides_and_asymmetric_padding",
    "test_conv_with_autopad_same", "test_maxpool_2d_ceil", "test_maxpool_3d_dilations",
    "test_averagepool_2d_pads_count_include_pad", "test_averagepool_2d_ceil_last_window_starts_on_pad",
    "test_lppool_2d_pads", "test_globalmaxpool",
    # reductions and the softmax family
    "test_reduce_prod_default_axes_keepdims_example", "test_softmax_axis_1", "test_logsoftmax_large_number",
    "test_hardmax_axis_1", "test_softmax_example_expanded",
    # normalizations
    "test_layer_normalization_3d_axis1_epsilon", "test_layer_normalization_4d_axis1_expanded",
    "test_batchnorm_epsilon", "test_instancenorm_example", "test_group_normalization_example",
    "test_rms_normalization_3d_axis1_epsilon_expanded", "test_l2normalization_axis_1",
    "test_mvn_expanded", "test_lrn",
    # shapes and data movement
    "test_transpose_all_permutations_4", "test_flatten_negative_axis3", "test_concat_3d_axis_negative_2",
    "test_split_2d_uneven_split_opset18", "test_depthtospace_crd_mode_example", "test_spacetodepth_example",
    # function bodies (expanded automatically), recurrences, transforms
    "test_swiglu", "test_attention_3d_transpose_verification", "test_linear_attention_linear_t1_no_past",
    "test_convtranspose_group_2", "test_convtranspose_output_shape", "test_gru_bidirectional",
    "test_lstm_batchwise", "test_scan9_multi_state", "test_dft_rfft_opset19",
    "test_batchnorm_example_training_mode",
]


@pytest.fixture(scope="module")
def cases():
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {c.name: c for c in collect_testcases()}


def _run_case(case, executor):
    imported = po.import_model(case.model, fuse="graph", name=case.name)
    assert len(imported.kernels) == 1
    rtol = getattr(case, "rtol", None) or 1e-3
    atol = getattr(case, "atol", None) or 1e-7
    for inputs, expected in case.data_sets:
        feeds = {i.name: a for i, a in zip(case.model.graph.input, inputs)}
        outs = po.run(imported, feeds, executor)
        for o, e in zip(case.model.graph.output, expected):
            assert outs[o.name].shape == e.shape
            np.testing.assert_allclose(outs[o.name], e, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", CONFORMANCE_SUBSET)
def test_conformance_imports(cases, name, tmp_path):
    imported = po.import_model(cases[name].model, fuse="graph", name=name)
    assert len(imported.kernels) == 1
    pd_translate_ok(imported.kernels[0].text, tmp_path)


@pytest.mark.parametrize("name", CONFORMANCE_SUBSET)
def test_conformance_interpreted(cases, name):
    _run_case(cases[name], po.interpreter())


@pytest.mark.parametrize("name", CONFORMANCE_SUBSET[::4])
def test_conformance_compiled(cases, name):
    _run_case(cases[name], po.compiled(threads=1))


# --------------------------------------------------------------------------
# Refusals name the node and the reason
# --------------------------------------------------------------------------
def _model(nodes, inputs, outputs, inits=(), opset=21):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def test_refusal_names_node_and_reason():
    m = _model([helper.make_node("Relu", ["x"], ["r"], name="first"),
                helper.make_node("Det", ["r"], ["y"], name="my_det")],
               [_vi("x", [2, 3, 3])], [_vi("y", [2])])
    with pytest.raises(po.OnnxImportError) as e:
        po.import_model(m)
    assert e.value.node_name == "my_det" and e.value.op_type == "Det"
    assert e.value.node_index == 1
    assert "my_det" in str(e.value) and "Det" in str(e.value)
    assert "determinant has no loop form" in e.value.reason


def test_new_primitives_import_and_run():
    # Sin, Erf (through Gelu) and Mod (Python's sign rule) are primitives.
    m = _model([helper.make_node("Sin", ["x"], ["s"]),
                helper.make_node("Gelu", ["s"], ["g"]),
                helper.make_node("Mod", ["g", "x"], ["y"], fmod=0)],
               [_vi("x", [4, 5])], [_vi("y", [4, 5])])
    text = po.import_model(m).kernels[0].text
    assert "sin(" in text and "erf(" in text and "mod(" in text
    x = np.random.default_rng(1).uniform(0.5, 2.0, (4, 5)).astype(np.float32)
    from onnx.reference import ReferenceEvaluator
    expected = ReferenceEvaluator(m).run(None, {"x": x})[0]
    got = po.run(po.import_model(m), {"x": x}, po.compiled())["y"]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)


def test_refusal_data_dependent_gather():
    m = _model([helper.make_node("Gather", ["x", "i"], ["y"], name="lookup")],
               [_vi("x", [5, 3]), _vi("i", [4], TensorProto.INT64)], [_vi("y", [4, 3])])
    with pytest.raises(po.OnnxImportError, match=r"lookup.*indices.*constant"):
        po.import_model(m)


def test_refusal_dynamic_shape():
    m = _model([helper.make_node("Relu", ["x"], ["y"], name="r")],
               [_vi("x", ["N", 3])], [_vi("y", ["N", 3])])
    with pytest.raises(po.OnnxImportError, match="static shape"):
        po.import_model(m)


def test_runtime_pow_exponent_is_the_pow_primitive():
    m = _model([helper.make_node("Pow", ["x", "p"], ["y"], name="pw")],
               [_vi("x", [3]), _vi("p", [3])], [_vi("y", [3])])
    assert "pow(x[{0}],p[{0}])" in po.import_model(m).kernels[0].text
    m = _model([helper.make_node("Pow", ["x", "p"], ["y"], name="pw")],
               [_vi("x", [3]), _vi("p", [3], TensorProto.INT64)], [_vi("y", [3])])
    with pytest.raises(po.OnnxImportError, match=r"'pw'.*run-time integer exponent"):
        po.import_model(m)


# --------------------------------------------------------------------------
# Multi-node graphs become ONE kernel with fuse="graph"
# --------------------------------------------------------------------------
def layernorm_model():
    """LayerNorm over the last axis from primitive nodes (as exporters
    write it): ReduceMean, Sub, Mul, ReduceMean, Add, Sqrt, Div, Mul, Add."""
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [-1])
    eps = helper.make_tensor("eps", TensorProto.FLOAT, [], [1e-5])
    gamma = helper.make_tensor("gamma", TensorProto.FLOAT, [8], np.linspace(0.5, 1.5, 8).astype(np.float32))
    beta = helper.make_tensor("beta", TensorProto.FLOAT, [8], np.linspace(-1, 1, 8).astype(np.float32))
    nodes = [
        helper.make_node("ReduceMean", ["x", "axes"], ["mu"]),
        helper.make_node("Sub", ["x", "mu"], ["d"]),
        helper.make_node("Mul", ["d", "d"], ["d2"]),
        helper.make_node("ReduceMean", ["d2", "axes"], ["var"]),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["sd"]),
        helper.make_node("Div", ["d", "sd"], ["xn"]),
        helper.make_node("Mul", ["xn", "gamma"], ["xs"]),
        helper.make_node("Add", ["xs", "beta"], ["y"]),
    ]
    return _model(nodes, [_vi("x", [4, 8])], [_vi("y", [4, 8])], [axes, eps, gamma, beta], opset=18)


def mlp_model():
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((8, 16)).astype(np.float32)
    b1 = rng.standard_normal(16).astype(np.float32)
    w2 = rng.standard_normal((16, 4)).astype(np.float32)
    inits = [helper.make_tensor("w1", TensorProto.FLOAT, w1.shape, w1),
             helper.make_tensor("b1", TensorProto.FLOAT, b1.shape, b1),
             helper.make_tensor("w2", TensorProto.FLOAT, w2.shape, w2)]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["a"]),
             helper.make_node("MatMul", ["a", "w2"], ["y"])]
    return _model(nodes, [_vi("x", [3, 8])], [_vi("y", [3, 4])], inits), (w1, b1, w2)


def _reference(model, feeds):
    from onnx.reference import ReferenceEvaluator
    return ReferenceEvaluator(model).run(None, feeds)[0]


def test_layernorm_graph_is_one_kernel(tmp_path):
    m = po.import_model(layernorm_model(), fuse="graph", name="ln")
    assert len(m.kernels) == 1
    k = m.kernels[0]
    assert k.text.startswith("kernel ln\n")
    assert [b.onnx_name for b in k.inputs] == ["x", "gamma", "beta"]
    assert [b.kind for b in k.inputs] == ["graph_input", "constant", "constant"]
    assert [b.onnx_name for b in k.outputs] == ["y"]
    assert "tmp" in k.text and "+=" in k.text and "sqrt(" in k.text
    assert "1e-05" in k.text or "9.999999747378752e-06" in k.text  # eps as a literal
    pd_translate_ok(k.text, tmp_path)
    per_node = po.import_model(layernorm_model(), fuse="node")
    assert len(per_node.kernels) == 9


def test_mlp_graph_is_one_kernel(tmp_path):
    model, (w1, b1, w2) = mlp_model()
    m = po.import_model(model, fuse="graph", name="mlp")
    assert len(m.kernels) == 1
    k = m.kernels[0]
    assert sorted(k.constants) == ["b1", "w1", "w2"]
    np.testing.assert_array_equal(k.constants["w1"], w1)
    assert "max(" in k.text  # the Relu
    assert k.text.count("+=") == 2  # two contractions
    pd_translate_ok(k.text, tmp_path)


@pytest.mark.parametrize("fuse", ["graph", "node"])
def test_multi_node_graphs_run(fuse):
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    ln = layernorm_model()
    out = po.run(po.import_model(ln, fuse=fuse), {"x": x}, po.interpreter())["y"]
    np.testing.assert_allclose(out, _reference(ln, {"x": x}), rtol=1e-4, atol=1e-5)
    mlp, _ = mlp_model()
    x = x[:3]
    for ex in (po.interpreter(), po.compiled(threads=1)):
        out = po.run(po.import_model(mlp, fuse=fuse), {"x": x}, ex)["y"]
        np.testing.assert_allclose(out, _reference(mlp, {"x": x}), rtol=1e-4, atol=1e-4)


def test_reshape_that_does_not_nest_is_flat(tmp_path):
    shape = helper.make_tensor("s", TensorProto.INT64, [2], [3, 2])
    m = _model([helper.make_node("Relu", ["x"], ["r"]),
                helper.make_node("Reshape", ["r", "s"], ["y"])],
               [_vi("x", [2, 3])], [_vi("y", [3, 2])], [shape])
    k = po.import_model(m).kernels[0]
    assert "tmp r f32 [6] heap" in k.text  # [2,3] -> [3,2] do not nest
    pd_translate_ok(k.text, tmp_path)
    shape2 = helper.make_tensor("s", TensorProto.INT64, [3], [2, 3, 1])
    m2 = _model([helper.make_node("Reshape", ["x", "s"], ["y"])],
                [_vi("x", [6])], [_vi("y", [2, 3, 1])], [shape2])
    t2 = po.import_model(m2).kernels[0].text
    assert "in  x f32 [6] heap" in t2 and "out y f32 [2, 3, 1] heap" in t2


def resize_model(mode, scales, **attrs):
    roi = attrs.pop("roi", None)
    inits = [helper.make_tensor("scales", TensorProto.FLOAT, [len(scales)], scales)]
    if roi:
        inits.append(helper.make_tensor("roi", TensorProto.FLOAT, [len(roi)], roi))
    node = helper.make_node("Resize", ["x", "roi" if roi else "", "scales"], ["y"], mode=mode, **attrs)
    return _model([node], [_vi("x", [1, 2, 4, 4])], [_vi("y", None)], inits, opset=19)


@pytest.mark.parametrize("model", [
    resize_model("linear", [1, 1, 2, 1.5]),
    resize_model("cubic", [1, 1, 0.5, 2], exclude_outside=1),
    resize_model("nearest", [1, 1, 2, 3]),
    resize_model("linear", [1, 1, 0.8, 1.2], coordinate_transformation_mode="tf_crop_and_resize",
                 extrapolation_value=10.0, roi=[0, 0, 0.4, 0.6, 1, 1, 1.2, 0.8]),
    resize_model("linear", [2, 1.5], axes=[3, 2]),
], ids=["linear", "cubic", "nearest", "crop_extrapolate", "axes"])
def test_resize_with_constant_scales(model):
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    imported = po.import_model(model)
    for ex in (po.interpreter(), po.compiled(threads=1)):
        np.testing.assert_allclose(po.run(imported, {"x": x}, ex)["y"], _reference(model, {"x": x}),
                                   rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------
def test_cli_writes_directory(tmp_path):
    model, (w1, _, _) = mlp_model()
    path = tmp_path / "mlp.onnx"
    onnx.save(model, str(path))
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, TOOL, str(path), "-o", str(out), "--fuse=graph"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    man = json.loads((out / "manifest.json").read_text())
    assert [k["name"] for k in man["kernels"]] == ["mlp"]
    assert (out / "mlp.pd").read_text().startswith("kernel mlp\n")
    ins = {b["onnx_name"]: b for b in man["kernels"][0]["inputs"]}
    assert ins["x"]["kind"] == "graph_input" and ins["x"]["kernel_shape"] == [3, 8]
    assert ins["w1"]["kind"] == "constant"
    np.testing.assert_array_equal(np.load(out / ins["w1"]["file"]), w1)
    # per-node: one kernel per node, chained through the manifest's names
    out2 = tmp_path / "out2"
    r = subprocess.run([sys.executable, TOOL, str(path), "-o", str(out2)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    man2 = json.loads((out2 / "manifest.json").read_text())
    assert len(man2["kernels"]) == 4
    assert man2["kernels"][1]["inputs"][0]["kind"] == "intermediate"


def test_cli_refusal_exit_status(tmp_path):
    m = _model([helper.make_node("Det", ["x"], ["y"], name="determinant")],
               [_vi("x", [3, 3])], [_vi("y", [])])
    path = tmp_path / "det.onnx"
    onnx.save(m, str(path))
    r = subprocess.run([sys.executable, TOOL, str(path), "-o", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "determinant" in r.stderr and "Det" in r.stderr


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, -2.0, 0.5, -0.5, 1.7])
def test_pow_constant_exponent(p):
    m = _model([helper.make_node("Pow", ["x", "p"], ["y"])], [_vi("x", [7])], [_vi("y", [7])],
               [helper.make_tensor("p", TensorProto.FLOAT, [], [p])])
    x = np.array([0.0, 0.5, 1.0, 2.5, -1.5, np.nan, np.inf], np.float32)
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), p)
    got = po.run(po.import_model(m), {"x": x}, po.interpreter())["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_integer_and_bool_intermediates():
    """int64 arithmetic and comparisons (bools are f32 0/1) inside a graph."""
    T = TensorProto
    nodes = [helper.make_node("Cast", ["x"], ["i"], to=T.INT64),
             helper.make_node("Add", ["i", "c"], ["j"]),
             helper.make_node("Mul", ["j", "i"], ["k"]),
             helper.make_node("Less", ["k", "c2"], ["b"]),
             helper.make_node("Not", ["b"], ["nb"]),
             helper.make_node("Where", ["nb", "k", "i"], ["w"]),
             helper.make_node("Cast", ["w"], ["y"], to=T.FLOAT)]
    m = _model(nodes, [_vi("x", [2, 3])], [_vi("y", [2, 3])],
               [helper.make_tensor("c", T.INT64, [], [3]), helper.make_tensor("c2", T.INT64, [3], [1, 5, 9])])
    x = (np.random.default_rng(0).standard_normal((2, 3)) * 5).astype(np.float32)
    k = po.import_model(m).kernels[0]
    assert "tmp k i64 [2, 3] heap" in k.text and "tmp b f32 [2, 3] heap" in k.text
    for ex in (po.interpreter(), po.compiled(threads=1)):
        np.testing.assert_array_equal(po.run(po.import_model(m), {"x": x}, ex)["y"], _reference(m, {"x": x}))


def test_per_node_constants_do_not_collide(tmp_path):
    """Two kernels with different data under the same buffer name get
    distinct .npy files; the manifest names them."""
    T = TensorProto
    m = _model([helper.make_node("Add", ["x", "c"], ["a"], name="k1"),
                helper.make_node("Mul", ["a", "c_"], ["y"], name="k2")],
               [_vi("x", [3])], [_vi("y", [3])],
               [helper.make_tensor("c", T.FLOAT, [3], [1, 2, 3]),
                helper.make_tensor("c_", T.FLOAT, [3], [4, 5, 6])])
    imp = po.import_model(m, fuse="node")
    for k in imp.kernels:  # rename both constant buffers alike to force a clash
        (name,) = k.constants
        k.constants = {"w": k.constants[name]}
        for b in k.inputs:
            if b.kind == "constant":
                b.buffer = "w"
    imp.write(str(tmp_path))
    man = json.loads((tmp_path / "manifest.json").read_text())
    files = [b["file"] for k in man["kernels"] for b in k["inputs"] if b["kind"] == "constant"]
    assert files == ["k1.w.npy", "k2.w.npy"]
    np.testing.assert_array_equal(np.load(tmp_path / "k2.w.npy"), [4, 5, 6])
