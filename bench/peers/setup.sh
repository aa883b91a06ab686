#!/usr/bin/env bash
#===- bench/peers/setup.sh - Install the peers PerfDojo is measured against -===#
#
# Makes one virtual environment per peer under bench/peers/.venv-<peer>, from
# PyPI, so that the peers' packages never meet each other's or PerfDojo's:
#
#   torch  PyTorch (eager, out=, and torch.compile with Inductor, which
#          compiles its C++ with the system's g++)
#   tvm    Apache TVM with MetaSchedule (apache-tvm-ffi pinned: the newest
#          segfaults in save_json), xgboost for its cost model
#
#   bench/peers/setup.sh [torch] [tvm]      (both when none is named)
#
# The tests never need these; bench/peers/run.py does. Safe to run again:
# an environment whose pinned requirements are installed is left alone.
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")"

peers=("$@")
[ ${#peers[@]} -eq 0 ] && peers=(torch tvm)

for peer in "${peers[@]}"; do
  case "$peer" in
    torch) reqs=("torch==2.15.*" "numpy") ;;
    tvm) reqs=("apache-tvm==0.27.*" "apache-tvm-ffi==0.1.14.post0" "numpy"
               "psutil" "cloudpickle" "xgboost" "scipy" "tornado" "ml_dtypes") ;;
    *) echo "bench/peers/setup.sh: unknown peer '$peer' (torch, tvm)" >&2
       exit 2 ;;
  esac
  venv=".venv-$peer"
  stamp="$venv/requirements.installed"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${reqs[*]}" ]; then
    echo "setup: $peer is installed in bench/peers/$venv"
    continue
  fi
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
  echo "setup: installing $peer into bench/peers/$venv: ${reqs[*]}"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${reqs[@]}"
  echo "${reqs[*]}" > "$stamp"
done
