#!/usr/bin/env python3
"""A stand-in for pd-gpu-run in the tests of GPU tuning (pd-tune --target=cuda).

It reads kernel packages as pd-gpu-run does (the command line, folders of
packages, package.json) and writes a results file in pd-gpu-run's format,
without a GPU: each package's "time" is a cost model of its launch plan, so
that a search has something to improve and the test can tell which program
it must end with. Per launch: 1 ms spread over its threads (grid blocks x
block threads, at most 131072 of them busy at once) plus 0.004 ms.  A launch
running a whole buffer of more than 100000 elements on a single thread is a
"timeout", as a naive kernel would be on a real GPU's time limit. A package
whose folder name is listed in $FAKE_RUNNER_FAULTS (comma-separated) is a
"fault"; one listed in $FAKE_RUNNER_SLOW takes 1000 ms more than the model
says. Nothing is executed or checked.
"""

import json
import os
import sys


def model(package):
    total = 0.0
    sizes = {b["name"]: b["elements"] for b in package["buffers"]}
    for launch in package["launches"]:
        grid = launch["grid"][0] * launch["grid"][1] * launch["grid"][2]
        block = launch["block"][0] * launch["block"][1] * launch["block"][2]
        threads = grid * block
        largest = max([sizes[a] for a in launch["args"]] + [1])
        if threads == 1 and largest > 100000:
            return None, "launch '%s' of the checked run did not finish" % (
                launch["function"])
        total += 1.0 / min(threads, 131072) + 0.004
    return total, ""


def main(argv):
    results_path = None
    folders = []
    for arg in argv[1:]:
        if arg.startswith("--results="):
            results_path = arg[len("--results="):]
        elif arg.startswith("--"):
            continue  # --warmup, --repetitions, --time-limit
        else:
            folders.append(arg)
    if results_path is None or not folders:
        print("usage: fake-gpu-runner.py --results=FILE FOLDER...",
              file=sys.stderr)
        return 2
    faults = set(filter(None, os.environ.get("FAKE_RUNNER_FAULTS", "").split(",")))
    slow = set(filter(None, os.environ.get("FAKE_RUNNER_SLOW", "").split(",")))
    results = []
    failed = False
    for folder in folders:
        packages = sorted(
            os.path.join(folder, name) for name in os.listdir(folder)
            if os.path.isfile(os.path.join(folder, name, "package.json")))
        for path in packages:
            with open(os.path.join(path, "package.json")) as f:
                package = json.load(f)
            name = os.path.basename(path)
            entry = {"package": path, "kernel": package["kernel"]}
            seconds, why = model(package)
            if seconds is not None and name in slow:
                seconds += 1000.0
            if name in faults:
                entry.update(status="fault", reason="injected fault")
            elif seconds is None:
                entry.update(status="timeout", reason=why)
            else:
                entry.update(status="ok", reason="", median_ms=seconds,
                             min_ms=seconds, times_ms=[seconds],
                             max_error=0, checked="expected")
            failed |= entry["status"] != "ok"
            print("%s: %s" % (name, entry["status"]), file=sys.stderr)
            results.append(entry)
    with open(results_path, "w") as f:
        json.dump({"runner": "fake-gpu-runner", "version": 1,
                   "device": {"api": "cuda", "name": "fake"},
                   "results": results}, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
