#!/bin/bash
# One trip to a GPU machine without LLVM or network (docs/GPU.md): runs the
# packages that `bench/gpu_suite.py lists` sorted into list files, by
# priority, and times PyTorch, all within a deadline, writing everything
# under $OUT (results as pd-gpu-run's JSON, rewritten after each package, so
# a step cut short keeps what it measured; the logs in logs.tgz).
#
#   DEADLINE=420 bench/gpu_trip.sh FOLDER     (FOLDER: what `lists` wrote)
#
# FOLDER/pd-gpu-run is a runner built elsewhere; where it does not start,
# the runner is built here from tools/pd-gpu-run (CMake, a C++ compiler).
set -u
folder=${1:?usage: gpu_trip.sh FOLDER}
out=${OUT:-$folder/out}
mkdir -p "$out"
began=$(date +%s)
deadline=${DEADLINE:-420}
left() { echo $((deadline - ($(date +%s) - began))); }
log() { echo "[$(($(date +%s) - began)) s] $*" | tee -a "$out/trip.log"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv >"$out/smi.csv" 2>&1
cat "$out/smi.csv"
runner=$folder/pd-gpu-run
if ! "$runner" --list-devices >>"$out/trip.log" 2>&1; then
  log "the carried runner does not start; building it here"
  cmake -G Ninja -S . -B /tmp/pd-runner -DPERFDOJO_GPU_RUNNER_ONLY=ON \
    >>"$out/trip.log" 2>&1 && cmake --build /tmp/pd-runner >>"$out/trip.log" 2>&1
  runner=/tmp/pd-runner/bin/pd-gpu-run
fi
"$runner" --list-devices 2>&1 | tee -a "$out/trip.log"

# run NAME LIST SECONDS [runner options]: the list's packages, cut off after
# SECONDS (and the trip's deadline).
run() {
  local name=$1 list=$2 limit=$3
  shift 3
  [ -s "$folder/$list" ] || return 0
  local t=$(left)
  [ "$limit" -lt "$t" ] || limit=$t
  if [ "$limit" -le 5 ]; then log "$name: no time left"; return 0; fi
  log "$name: $(wc -l <"$folder/$list") packages, at most $limit s"
  timeout "$limit" xargs -a "$folder/$list" "$runner" "$@" \
    --results="$out/$name.json" >"$out/$name.log" 2>&1
  log "$name: done ($(grep -c ': ok' "$out/$name.log") ok)"
}
timed="--warmup=2 --repetitions=10 --time-limit=5 --time-budget=2"
run experts experts.txt 200 $timed
if [ -n "${TORCH-1}" ]; then
  t=$(left)
  log "PyTorch: at most $((t > 150 ? 150 : t)) s"
  PYTHONUNBUFFERED=1 timeout $((t > 150 ? 150 : t)) python3 bench/gpu_suite.py \
    torch --out "$out/torch.json" --compile --graphs --deadline 100 \
    --kernels "$(cat "$folder/torch-kernels.txt")" >"$out/torch.log" 2>&1
  log "PyTorch: done"
fi
# Where Nsight Compute is installed: each launch of the packages that
# profile.txt lists (speed of light, occupancy, launch statistics, as CSV
# in profile.log), within PROFILE_S seconds (default 60).
if [ -s "$folder/profile.txt" ]; then
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu \
    /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  t=$(left)
  limit=${PROFILE_S:-60}
  [ "$limit" -lt "$t" ] || limit=$t
  if [ -z "$ncu" ]; then
    log "profile: no ncu on this machine"
  elif [ "$limit" -gt 5 ]; then
    log "profile: $(wc -l <"$folder/profile.txt") packages with $ncu, at most $limit s"
    timeout "$limit" xargs -a "$folder/profile.txt" -n 1 "$ncu" --csv \
      --target-processes all --section SpeedOfLight --section LaunchStats \
      --section Occupancy "$runner" --check=none --warmup=0 \
      --repetitions=1 --no-flush-l2 >"$out/profile.log" 2>&1
    log "profile: done"
  fi
fi
# The starting kernels run on one thread: a search needs their status
# (mostly a timeout) to go on, not more.
run naive naive.txt 100000 --warmup=0 --repetitions=1 --time-limit=0.5
run ahead ahead.txt 100000 $timed
log "trip over"
# Few files come back from such a machine: the logs travel as one archive.
(cd "$out" && tar czf logs.tgz *.log smi.csv && rm -f *.log smi.csv)
