"""The CPU lowering's f32 functions against numpy in float64, by
bench/math/ulp.py over a sample of every binade (every 4099-th float32)."""

import importlib.util

import pytest

from conftest import ROOT


def _ulp():
    spec = importlib.util.spec_from_file_location(
        "ulp", ROOT / "bench" / "math" / "ulp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _has_avx512():
    try:
        with open("/proc/cpuinfo") as info:
            return " avx512f" in info.read()
    except OSError:
        return False


@pytest.mark.skipif(not _has_avx512(), reason="exp by vscalefps needs AVX-512")
def test_exp_by_scalef_within_one_ulp():
    # Over the whole range where e^x is finite and not 0 (overflow to inf
    # is checked too); 0.88 ulp at every 97-th float32 (docs/Evaluation.md).
    worst, where, counted, over_one = _ulp().measure("exp", -104.0, 89.0, 4099)
    assert counted > 500000
    assert over_one == 0 and worst < 1.0, (worst, where)


def test_log_within_one_ulp():
    worst, where, counted, over_one = _ulp().measure("log", 1e-30, 1e30, 4099)
    assert counted > 300000
    assert over_one == 0 and worst < 1.0, (worst, where)


MAX_MIN = """kernel mm
in  x f32 [4, 64] heap
in  y f32 [4, 64] heap
out m f32 [4] heap
out n f32 [4] heap
out e f32 [4, 64] heap

4 m[{0}]=-inf
4 4 16:v m[{0}]max=x[{0},{1}*16+{2}]
4 n[{0}]=inf
4 4 16:v n[{0}]min=x[{0},{1}*16+{2}]
4 4 16:v e[{0},{1}*16+{2}]=max(x[{0},{1}*16+{2}],y[{0},{1}*16+{2}])
"""


def test_compiled_max_and_min_propagate_nan():
    # Vector max and min (x86: vmaxps and a NaN test, the sign of zeros
    # left open) must keep a NaN wherever it is, in a reduction's lanes,
    # its accumulator or an element-wise operand.
    import numpy as np
    import perfdojo

    kernel = perfdojo.Kernel.parse(MAX_MIN)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    y = rng.standard_normal((4, 64)).astype(np.float32)
    x[1, 0] = np.nan    # the first element a row's reduction sees
    x[2, 37] = np.nan   # a middle lane
    x[3, 63] = np.inf
    y[0, 5] = np.nan
    out = kernel.run({"x": x, "y": y})
    assert np.isnan(out["m"][1]) and np.isnan(out["m"][2])
    assert np.isnan(out["n"][1]) and np.isnan(out["n"][2])
    assert out["m"][0] == x[0].max() and out["m"][3] == np.inf
    assert out["n"][0] == x[0].min() and out["n"][3] == x[3].min()
    with np.errstate(invalid="ignore"):
        expected = np.maximum(x, y)  # numpy's maximum propagates NaN
    assert np.array_equal(out["e"], expected, equal_nan=True)
    # Zeros of either sign compare equal: either may come out.
    zeros = np.zeros((4, 64), np.float32)
    zeros[:, ::2] = -0.0
    out = kernel.run({"x": zeros, "y": -zeros})
    assert np.all(out["m"] == 0) and np.all(out["e"] == 0)
