#!/bin/sh
# For every suite moves file (bench/moves, CPU and GPU): applies the moves
# with pd-opt --pd-apply, exports them as a transform script
# (--pd-export-transform), runs the script on the untransformed kernel in
# Debian's mlir-opt with the plugin loaded, and requires the same program
# (the printed IR, history included) from both.
#
# usage: check-transform-scripts.sh SOURCE_ROOT OUTPUT_DIR PLUGIN MLIR_OPT...
set -eu
src=$1
out=$2
plugin=$3
shift 3
mkdir -p "$out"
count=0
for moves in "$src"/bench/moves/*.moves "$src"/bench/moves/gpu/*.moves; do
  name=$(basename "$moves" .moves)
  tag=$(basename "$(dirname "$moves")")-$name
  pd-translate --import-pd "$src/kernels/$name.pd" -o "$out/$tag.mlir"
  pd-opt "$out/$tag.mlir" --pd-apply=moves-file="$moves" -o "$out/$tag.moved.mlir"
  pd-opt "$out/$tag.moved.mlir" \
    --pd-export-transform=output="$out/$tag.transform.mlir" -o /dev/null
  "$@" --load-dialect-plugin="$plugin" "$out/$tag.mlir" \
    --transform-preload-library=transform-library-paths="$out/$tag.transform.mlir" \
    --transform-interpreter -o "$out/$tag.script.mlir"
  if ! diff "$out/$tag.moved.mlir" "$out/$tag.script.mlir" >/dev/null; then
    echo "DIFFERENT: $moves (see $out/$tag.moved.mlir and $tag.script.mlir)"
    exit 1
  fi
  ops=$(grep -c 'transform\.perfdojo\.[a-z_]* %' "$out/$tag.transform.mlir" || true)
  echo "same program: $tag, $ops moves"
  count=$((count + 1))
done
echo "checked $count moves files"
