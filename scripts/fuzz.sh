#!/usr/bin/env bash
#===- scripts/fuzz.sh - Run the libFuzzer targets of the parsers ----------===#
#
# Builds the fuzz targets of tools/fuzzers in build-asan/ (ASan + UBSan +
# libFuzzer; configured by scripts/sanitize.sh), collects their seed corpora
# (scripts/fuzz_seeds.py) and runs them one after the other:
#
#   textform  the text-form parser (importTextForm), with export round trips
#   mlir      MLIR input with the perfdojo dialect (its custom parsers)
#   move      move locations (parseMove, resolve and check on softmax)
#   apply     --pd-apply move lists, applied to softmax through pd-apply
#
# Usage:
#   scripts/fuzz.sh ci [TARGET...]
#       Bounded run for CI: each target starts from the seeds alone (a fresh
#       corpus) with -seed=1 and stops after a fixed number of inputs (see
#       ci_runs below; PERFDOJO_FUZZ_CI_RUNS=N sets N for all). About 100 s
#       in all on two idle cores, plus about 3 minutes to build the first
#       time.
#   scripts/fuzz.sh long [--time=SECONDS] [--runs=N] [TARGET...]
#       Long run: each target runs for SECONDS (default 600) or N inputs,
#       whichever comes first, on a corpus kept in build-asan/fuzz/corpus/
#       between runs, printing libFuzzer's progress lines.
#
# Every run ends with one summary line per target:
#   fuzz TARGET: runs=N time=Ss cov=N ft=N corpus=N crashes=N
# (cov: coverage points hit, ft: libFuzzer's features), and the script exits
# 1 if any target crashed, leaked, timed out (10 s per input), ran out of
# memory or reported a sanitizer error. The input is saved under
# build-asan/fuzz/artifacts/TARGET/; reproduce with
#   build-asan/bin/pd-fuzz-TARGET build-asan/fuzz/artifacts/TARGET/crash-...
#
# Environment: PERFDOJO_FUZZ_BUILD (build directory, default build-asan).
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)

usage() {
  sed -n '/^# Usage:/,/^# Every run/p' "$0" | sed -e 's/^# \{0,1\}//' -e '$d' >&2
  exit 2
}

mode=${1:-}
[ "$mode" = ci ] || [ "$mode" = long ] || usage
shift
time_budget=600
runs=-1
targets=()
for arg in "$@"; do
  case "$arg" in
    --time=*) time_budget=${arg#--time=} ;;
    --runs=*) runs=${arg#--runs=} ;;
    textform | mlir | move | apply) targets+=("$arg") ;;
    *) echo "fuzz.sh: unknown argument '$arg'" >&2; usage ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(textform mlir move apply)

build_dir=${PERFDOJO_FUZZ_BUILD:-build-asan}
./scripts/sanitize.sh --configure-only "$build_dir"
cmake --build "$build_dir" --target perfdojo-fuzzers pd-translate
work="$build_dir/fuzz"
python3 scripts/fuzz_seeds.py --src "$src" --tools-dir "$build_dir/bin" \
  --out "$work/seeds"

# The longest input each target reads: whole kernels and modules, move
# lists, single moves.
max_len() {
  case "$1" in
    textform) echo 4096 ;;
    mlir) echo 8192 ;;
    move) echo 256 ;;
    apply) echo 2048 ;;
  esac
}

# Inputs per target in a CI run: 15 to 35 seconds each on one idle core.
ci_runs() {
  case "$1" in
    textform) echo 80000 ;;
    mlir) echo 40000 ;;
    move) echo 1000000 ;;
    apply) echo 30000 ;;
  esac
}

# The dictionary of each target (tools/fuzzers/*.dict): grammar tokens.
dictionary() {
  case "$1" in
    textform) echo tools/fuzzers/textform.dict ;;
    mlir) echo tools/fuzzers/mlir.dict ;;
    move | apply) echo tools/fuzzers/moves.dict ;;
  esac
}

failed=0
summaries=()
for target in "${targets[@]}"; do
  fuzzer="$build_dir/bin/pd-fuzz-$target"
  artifacts="$work/artifacts/$target"
  mkdir -p "$artifacts"
  log="$work/$mode-$target.log"
  options=(-max_len="$(max_len "$target")" -dict="$(dictionary "$target")"
           -timeout=10 -rss_limit_mb=4096
           -print_final_stats=1 -artifact_prefix="$artifacts/")
  if [ "$mode" = ci ]; then
    corpus="$work/ci-corpus/$target"
    rm -rf "$corpus"
    options+=(-seed=1 -runs="${PERFDOJO_FUZZ_CI_RUNS:-$(ci_runs "$target")}")
  else
    corpus="$work/corpus/$target"
    options+=(-max_total_time="$time_budget" -runs="$runs")
  fi
  mkdir -p "$corpus"
  before=$(ls "$artifacts" | wc -l)
  start=$(date +%s%N)
  status=0
  # stdin from /dev/null: a move list may name moves-file=/dev/stdin.
  if [ "$mode" = ci ]; then
    "$fuzzer" "${options[@]}" "$corpus" "$work/seeds/$target" \
      < /dev/null > "$log" 2>&1 || status=$?
  else
    "$fuzzer" "${options[@]}" "$corpus" "$work/seeds/$target" \
      < /dev/null 2>&1 | tee "$log" || status=$?
  fi
  elapsed=$(( ($(date +%s%N) - start) / 1000000000 ))
  crashes=$(( $(ls "$artifacts" | wc -l) - before ))
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
  units=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
  if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    failed=1
    [ "$mode" = ci ] && tail -n 60 "$log"
    echo "fuzz $target: FAILED (exit $status); see $log and $artifacts" >&2
    crashes=$(( crashes > 0 ? crashes : 1 ))
  fi
  summaries+=("$(printf 'fuzz %s: runs=%s time=%ss cov=%s ft=%s corpus=%s crashes=%s' \
    "$target" "${executed:-?}" "$elapsed" "${cov:-?}" "${ft:-?}" "${units:-?}" \
    "$crashes")")
  echo "${summaries[-1]}"
done
echo "summary ($mode):"
printf '  %s\n' "${summaries[@]}"
exit "$failed"
