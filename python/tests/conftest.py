"""Shared fixtures of the Python tests: the repository, the tools, small
kernels. Run with `.venv/bin/python -m pytest python/tests` after
scripts/setup.sh (scripts/test.sh does)."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("PERFDOJO_BUILD_DIR", ROOT / "build"))

SOFTMAX_SMALL = """kernel sm
in  x f32 [64, 256] heap
out y f32 [64, 256] heap
tmp m f32 [64] heap
tmp e f32 [64, 256] heap
tmp s f32 [64] heap

64 m[{0}]=-inf
64 256 m[{0}]max=x[{0},{1}]
64 256 e[{0},{1}]=x[{0},{1}]-m[{0}]
64 256 e[{0},{1}]=exp(e[{0},{1}])
64 s[{0}]=0
64 256 s[{0}]+=e[{0},{1}]
64 256 y[{0},{1}]=e[{0},{1}]/s[{0}]
"""


@pytest.fixture
def softmax_text():
    return SOFTMAX_SMALL


@pytest.fixture
def softmax_file(tmp_path):
    path = tmp_path / "sm.pd"
    path.write_text(SOFTMAX_SMALL)
    return path


@pytest.fixture
def tool():
    def find(name):
        path = BUILD / "bin" / name
        if not path.exists():
            pytest.fail(f"{path} is missing: build the project first")
        return str(path)

    return find
