#!/bin/bash
# A/B of two lowerings of the same tuned programs, in one process, call by
# call (bench/ceiling/lib_ab.c): the suite's streaming kernels compiled by
# pd-lib twice, with the options OPTS_A and OPTS_B, then timed alternately,
# on data that the previous calls did not touch (cold) or the same data
# each call (warm). Much less noisy on a shared host than alternating pd-run
# processes: the two variants' calls are microseconds apart.
#
#   OPTS_A=--prefetch-ahead=0 OPTS_B=--prefetch-ahead=512 \
#     bench/ceiling/lib_ab.sh [cold|warm] [rounds] [kernels]
#
# kernels: a comma-separated subset of the list below to time (default:
# all; the libraries hold all of them).
#
# The expert's programs (pd-tune --strategy=expert, 2 threads) are derived
# first; the numbers it gave are in docs/Evaluation.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-cold}
rounds=${2:-7}
only=${3:-}
work=$(mktemp -d /tmp/lib_ab.XXXXXX)
kernels="reducemean relu add batchnorm_8x3x2048x2048 batchnorm_8x64x300x300 softmax"
args=()
for k in $kernels; do
  check=()
  case $k in batchnorm*) check=(--check-against=interpreter) ;; esac
  ./build/bin/pd-tune kernels/$k.pd --strategy=expert --allow-slower --no-torch \
    --no-db --plot=- --quiet --num-threads=2 "${check[@]}" \
    --moves-output=$work/$k.moves >/dev/null 2>&1
  args+=(kernels/$k.pd=$work/$k.moves)
done
for v in A B; do
  opts=OPTS_$v
  mkdir -p $work/$v
  # shellcheck disable=SC2086
  ./build/bin/pd-lib "${args[@]}" ${!opts:-} --name=$v --num-threads=2 \
    -o $work/$v >/dev/null
done
omp=$(dirname "$(find /usr/lib/llvm-22 -name 'libomp.so' | head -1)")
clang-22 -O2 -fopenmp bench/ceiling/lib_ab.c -I$work/A -I$work/B \
  $work/A/libA.a $work/B/libB.a -L"$omp" -lomp -lm -o $work/ab
echo "A: ${OPTS_A:-defaults}; B: ${OPTS_B:-defaults}"
OMP_NUM_THREADS=2 OMP_PROC_BIND=close LD_LIBRARY_PATH=$omp $work/ab $mode $rounds $only
rm -rf "$work"
