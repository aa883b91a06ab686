#!/usr/bin/env bash
#===- scripts/setup.sh - Install dependencies and build PerfDojo ----------===#
#
# Installs every Debian package PerfDojo needs (skipping those already
# present) and builds it into build/. Safe to run again: it only rebuilds
# what changed.
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
  python3 python3-numpy                                    # reference checks
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

llvm_prefix=$(llvm-config-22 --prefix)
if [ ! -f build/build.ninja ]; then
  cmake -G Ninja -S . -B build \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DLLVM_ENABLE_ASSERTIONS=ON \
    -DMLIR_DIR="$llvm_prefix/lib/cmake/mlir"
fi
cmake --build build
