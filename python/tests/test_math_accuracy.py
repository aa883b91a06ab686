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
