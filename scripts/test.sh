#!/usr/bin/env bash
#===- scripts/test.sh - Build PerfDojo and run every test -----------------===#
#
# Sets up (scripts/setup.sh) and runs the whole regression suite: lit tests
# (dialect, text form, interpreter, kernel suite against NumPy references,
# plugin loading into mlir-opt, robustness) and the GoogleTest unit tests,
# then the Python package's tests (python/tests: the bindings, the
# Gymnasium environment, the ONNX importer) with pytest in .venv.
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --build build --target check-perfdojo
.venv/bin/python -m pytest -q python/tests
