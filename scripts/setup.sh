#!/usr/bin/env bash
#===- scripts/setup.sh - Install dependencies and build PerfDojo ----------===#
#
# Installs every Debian package PerfDojo needs (skipping those already
# present), makes the Python virtual environment .venv (Debian's python3 with
# the PyPI packages of python/requirements.txt: nanobind, numpy, gymnasium,
# onnx, pytest) and builds everything (the RL agent's libtorch module
# included) into build/, the Python package
# included (build/python_packages, on .venv's path). Safe to run again: it
# only rebuilds what changed. Then `. .venv/bin/activate` for
# `import perfdojo`.
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools  # MLIR, lit, FileCheck
  clang-22 lld-22 libomp-22-dev                           # compiler, linker
  libclang-rt-22-dev                                      # sanitizers, libFuzzer (scripts/fuzz.sh)
  cmake ninja-build                                        # build
  libgtest-dev libbenchmark-dev                            # tests, benchmarks
  libsqlite3-dev                                           # tuning database
  libtcmalloc-minimal4                                     # faster malloc
  libtorch-dev libopenblas0-pthread                        # the RL agent's network (OpenBLAS, not the reference BLAS)
  python3 python3-numpy                                    # reference checks
  python3-dev python3-venv                                 # the Python package
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q \
    --no-install-recommends "${missing[@]}"
fi

# The virtual environment, from Debian's Python (whatever python3 comes
# first on PATH), with the packages pinned in python/requirements.txt.
if [ ! -x .venv/bin/python ]; then
  /usr/bin/python3 -m venv .venv
fi
if ! cmp -s python/requirements.txt .venv/requirements.installed; then
  .venv/bin/python -m pip install -q --disable-pip-version-check \
    -r python/requirements.txt
  cp python/requirements.txt .venv/requirements.installed
fi
# `import perfdojo` in .venv finds the package the build assembles.
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD/build/python_packages" > "$site/perfdojo-build.pth"

llvm_prefix=$(llvm-config-22 --prefix)
if [ ! -f build/build.ninja ]; then
  cmake -G Ninja -S . -B build \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DLLVM_ENABLE_ASSERTIONS=ON \
    -DMLIR_DIR="$llvm_prefix/lib/cmake/mlir" \
    -DPython_EXECUTABLE="$PWD/.venv/bin/python" -DPERFDOJO_ENABLE_PYTHON=ON
elif ! grep -q "^Python_EXECUTABLE:.*$PWD/.venv/bin/python" build/CMakeCache.txt; then
  # A build configured before the Python package existed.
  cmake -S . -B build -DPython_EXECUTABLE="$PWD/.venv/bin/python" \
    -DPERFDOJO_ENABLE_PYTHON=ON
fi
cmake --build build
