#!/usr/bin/env bash
#===- scripts/sanitize.sh - The test suite under ASan and UBSan -----------===#
#
# Configures build-asan/ with PerfDojo's code instrumented by AddressSanitizer
# and UndefinedBehaviorSanitizer (-DPERFDOJO_SANITIZE=address,undefined;
# every report aborts; assertions on) and the libFuzzer targets enabled,
# builds it and runs the whole lit + GoogleTest suite (check-perfdojo) there.
# Debian's MLIR libraries are not instrumented. See docs/Soundness.md,
# "Sanitizer build".
#
# Usage: scripts/sanitize.sh [--configure-only] [build-dir]
#   --configure-only   only configure build-dir (scripts/fuzz.sh uses this)
#   build-dir          default: build-asan
#
# Needs the packages of scripts/setup.sh; run that first on a fresh machine.
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
configure_only=0
if [ "${1:-}" = "--configure-only" ]; then
  configure_only=1
  shift
fi
build_dir=${1:-build-asan}

llvm_prefix=$(llvm-config-22 --prefix)
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -G Ninja -S . -B "$build_dir" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DLLVM_ENABLE_ASSERTIONS=ON \
    -DPERFDOJO_SANITIZE=address,undefined \
    -DPERFDOJO_ENABLE_FUZZERS=ON \
    -DMLIR_DIR="$llvm_prefix/lib/cmake/mlir"
fi
[ "$configure_only" -eq 1 ] && exit 0
# The tools carry their sanitizer options (tools/SanitizerDefaults.cpp); a
# report aborts the tool and fails the test that ran it.
cmake --build "$build_dir" --target check-perfdojo
