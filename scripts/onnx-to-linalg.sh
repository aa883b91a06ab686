#!/usr/bin/env bash
#===- scripts/onnx-to-linalg.sh - ONNX model to linalg on memrefs ---------===#
#
# Optional route from an ONNX model to MLIR that Debian's mlir-opt-22 and
# convert-linalg-to-perfdojo take, through IREE's importer (docs/Linalg.md,
# "From ONNX through IREE"). IREE is not a dependency of PerfDojo: install it
# yourself, e.g.
#   python3 -m venv /tmp/iree && /tmp/iree/bin/pip install 'iree-base-compiler[onnx]'
# and point IREE_BIN at its bin directory (default: /tmp/iree/bin).
#
# Usage: scripts/onnx-to-linalg.sh MODEL.onnx OUT.mlir
#   OUT.mlir: linalg on memrefs (bufferized by mlir-opt-22), in MLIR's text
#   form. IREE bundles a newer MLIR, whose bytecode mlir-opt-22 cannot read;
#   its text form of the upstream dialects parses.
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 MODEL.onnx OUT.mlir" >&2
  exit 2
fi
model=$1
out=$2
iree_bin=${IREE_BIN:-/tmp/iree/bin}
mlir_opt=${MLIR_OPT:-mlir-opt-22}
for tool in "$iree_bin/iree-import-onnx" "$iree_bin/iree-opt"; do
  if [ ! -x "$tool" ]; then
    echo "$0: $tool not found; install iree-base-compiler[onnx] and set IREE_BIN" >&2
    exit 1
  fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ONNX -> torch dialect (onnx operators) -> linalg on tensors, text form.
"$iree_bin/iree-import-onnx" "$model" -o "$work/torch.mlir"
"$iree_bin/iree-opt" "$work/torch.mlir" \
  --pass-pipeline='builtin.module(torch-onnx-to-torch-backend-pipeline,torch-backend-to-linalg-on-tensors-backend-pipeline)' \
  -o "$work/linalg.mlir"
# Tensors -> memrefs with MLIR 22 (function arguments and results too, with
# the identity layout that kernel arguments take).
"$mlir_opt" "$work/linalg.mlir" \
  --one-shot-bufferize='bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map' \
  -o "$out"
echo "$out: linalg on memrefs; next: pd-opt $out --convert-linalg-to-perfdojo"
