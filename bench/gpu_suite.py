#!/usr/bin/env python3
"""The kernel suite on a GPU: naive and hand-mapped programs against PyTorch.

Two halves, as PerfDojo's GPU evaluation itself (docs/GPU.md):

    # Here, where LLVM and MLIR are: build the packages.
    python3 bench/gpu_suite.py build --out pkgs [--kernels softmax,relu]
                                     [--chip sm_90] [--build build]
    tar czf pkgs.tgz pkgs

    # On the GPU machine (driver, CMake, a C++ compiler, PyTorch with CUDA):
    cmake -G Ninja -S . -B build-runner -DPERFDOJO_GPU_RUNNER_ONLY=ON
    cmake --build build-runner
    python3 bench/gpu_suite.py run pkgs --runner build-runner/bin/pd-gpu-run \\
        [--torch] [--reps 10] > table.md

`build` writes, per suite kernel, the naive program (`<k>-naive`) and, where
`bench/moves/gpu/<k>.moves` exists, the hand-mapped one (`<k>-mapped`), each
checked against a sample of the interpreter's outputs (`pd-run
--target=cuda`), and `manifest.json`. A kernel too large to interpret within
`--max-ops` is packaged unchecked, and the manifest says so.

`run` runs every package with pd-gpu-run (one call; each package in its own
child process, CUDA-event times, cold L2), and with `--torch` times PyTorch
on the same GPU (the suite's PyTorch formulations of bench/compare_torch.py
on CUDA tensors, CUDA events, the faster of eager and `out=`), then prints a
Markdown table: medians in ms, ratio = PyTorch / the best checked PerfDojo
program (> 1: PerfDojo is faster), the GPU and the versions.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))


def suite_kernels():
    kernels = os.path.join(ROOT, "kernels")
    return sorted(f[:-3] for f in os.listdir(kernels) if f.endswith(".pd"))


def build(args):
    tools = os.path.join(args.build, "bin")
    os.makedirs(args.out, exist_ok=True)
    names = args.kernels.split(",") if args.kernels else suite_kernels()
    manifest = []
    for name in names:
        source = os.path.join(ROOT, "kernels", name + ".pd")
        variants = [("naive", source)]
        moves = os.path.join(ROOT, "bench", "moves", "gpu", name + ".moves")
        if os.path.exists(moves):
            mapped = os.path.join(args.out, name + "-mapped.mlir")
            imported = subprocess.run(
                [os.path.join(tools, "pd-translate"), "--import-pd", source],
                check=True, capture_output=True, text=True).stdout
            with open(mapped, "w") as f:
                subprocess.run([os.path.join(tools, "pd-opt"),
                                "--pd-apply=moves-file=" + moves],
                               input=imported, stdout=f, check=True, text=True)
            variants.append(("mapped", mapped))
        for variant, path in variants:
            folder = os.path.join(args.out, "%s-%s" % (name, variant))
            command = [os.path.join(tools, "pd-run"), path, "--target=cuda",
                       "--emit-package=" + folder,
                       "--max-ops=%d" % args.max_ops]
            if args.chip:
                command.append("--gpu-chip=" + args.chip)
            done = subprocess.run(command, capture_output=True, text=True)
            checked = done.returncode == 0
            if not checked:
                # Too large to interpret: package it unchecked.
                done = subprocess.run(command + ["--no-interpret"],
                                      capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit("gpu_suite: %s %s does not build:\n%s"
                         % (name, variant, done.stderr))
            line = done.stdout.strip().splitlines()[-1]
            print(line, file=sys.stderr)
            manifest.append({"kernel": name, "variant": variant,
                             "package": os.path.basename(folder),
                             "checked": checked})
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)


def time_torch_cuda(torch, fn, reps):
    """Median ms of `fn` over `reps` runs, CUDA events, after a warm-up."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def run(args):
    with open(os.path.join(args.packages, "manifest.json")) as f:
        manifest = json.load(f)
    results_path = os.path.join(args.packages, "results.json")
    subprocess.run([args.runner, "--repetitions=%d" % args.reps,
                    "--time-limit=%d" % args.time_limit,
                    "--results=" + results_path, args.packages])
    with open(results_path) as f:
        results = json.load(f)
    by_package = {os.path.basename(r["package"].rstrip("/")): r
                  for r in results["results"]}
    torch_ms = {}
    versions = "pd-gpu-run results: %s" % results_path
    if args.torch:
        import torch
        from compare_torch import shapes, torch_cases
        torch.set_default_device("cuda")
        for name in sorted({m["kernel"] for m in manifest}):
            s = shapes(os.path.join(ROOT, "kernels", name + ".pd"))
            eager, out_form = torch_cases(name, s, torch)
            forms = [eager] + ([out_form] if out_form else [])
            torch_ms[name] = min(time_torch_cuda(torch, f, args.reps)
                                 for f in forms)
        versions += "; PyTorch %s, CUDA %s" % (torch.__version__,
                                               torch.version.cuda)
    device = results.get("device") or {}
    print("GPU: %s (compute capability %s, driver %s)\n"
          % (device.get("name"), device.get("compute_capability"),
             device.get("driver")))
    print("| kernel | naive ms | mapped ms | PyTorch ms | ratio | notes |")
    print("|---|---|---|---|---|---|")
    for name in sorted({m["kernel"] for m in manifest}):
        cells, notes, best = {}, [], None
        for entry in (m for m in manifest if m["kernel"] == name):
            r = by_package.get(entry["package"], {})
            status = r.get("status", "missing")
            ms = r.get("median_ms")
            ok = status == "ok" and ms is not None
            cells[entry["variant"]] = "%.4g" % ms if ok else status
            if not entry["checked"]:
                notes.append(entry["variant"] + " unchecked")
            if ok and entry["checked"]:
                best = ms if best is None else min(best, ms)
        t = torch_ms.get(name)
        ratio = "%.2f" % (t / best) if t and best else ""
        print("| %s | %s | %s | %s | %s | %s |" % (
            name, cells.get("naive", ""), cells.get("mapped", ""),
            "%.4g" % t if t else "", ratio, ", ".join(notes)))
    print("\n" + versions)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the packages (needs LLVM/MLIR)")
    b.add_argument("--out", required=True)
    b.add_argument("--kernels", default="")
    b.add_argument("--chip", default="")
    b.add_argument("--build", default=os.path.join(ROOT, "build"))
    b.add_argument("--max-ops", type=int, default=4_000_000_000,
                   help="interpreter budget for the expected outputs")
    r = sub.add_parser("run", help="run them on this machine's GPU")
    r.add_argument("packages")
    r.add_argument("--runner", default=os.path.join(ROOT, "build", "bin",
                                                    "pd-gpu-run"))
    r.add_argument("--torch", action="store_true")
    r.add_argument("--reps", type=int, default=10)
    r.add_argument("--time-limit", type=int, default=120)
    args = parser.parse_args()
    build(args) if args.command == "build" else run(args)


if __name__ == "__main__":
    main()
