#!/usr/bin/env python3
"""The kernel suite on a GPU: naive, hand-mapped, expert and searched programs
against PyTorch (eager and torch.compile).

Two halves, as PerfDojo's GPU evaluation itself (docs/GPU.md):

    # Here, where LLVM and MLIR are: build the packages.
    python3 bench/gpu_suite.py build --out pkgs [--kernels softmax,relu]
                                     [--chip sm_90] [--build build]
                                     [--tuned tune]
    tar czf pkgs.tgz pkgs

    # Searched programs (optional): annealing through files, one round trip
    # per generation for all kernels at once (pd-tune --remote).
    python3 bench/gpu_suite.py tune --dir tune [--budget 64 --generation 16]
    # ... then, until it says every search is done: copy tune/ there, run
    # the command it prints (pd-gpu-run on each waiting generation), copy
    # tune/ back, and run `tune` again.

    # On the GPU machine (driver, CMake, a C++ compiler, PyTorch with CUDA):
    cmake -G Ninja -S . -B build-runner -DPERFDOJO_GPU_RUNNER_ONLY=ON
    cmake --build build-runner
    python3 bench/gpu_suite.py run pkgs --runner build-runner/bin/pd-gpu-run \\
        [--torch] [--reps 10] > table.md

`build` writes, per suite kernel, the naive program (`<k>-naive`), the GPU
expert's (`<k>-expert`, pd-tune --target=cuda --strategy=expert), where
`bench/moves/gpu/<k>.moves` exists the hand-mapped one (`<k>-mapped`), and
with `--tuned DIR` the best program a finished `tune` found (`<k>-searched`),
each checked against a sample of the interpreter's outputs (`pd-run
--target=cuda`), and `manifest.json` with each kernel's bytes and flops
(pd-tune's KernelCost). A kernel too large to interpret within `--max-ops`
is packaged unchecked, and the manifest says so.

`run` runs every package with pd-gpu-run (one call; each package in its own
child process, CUDA-event times, cold L2), and with `--torch` times PyTorch
on the same GPU (the suite's PyTorch formulations of bench/compare_torch.py
on CUDA tensors, CUDA events, the faster of eager and `out=`), then prints a
Markdown table: medians in ms, PyTorch's eager (the faster of eager and
`out=`) and `torch.compile` forms, ratio = PyTorch's faster form / the best
checked PerfDojo program (> 1: PerfDojo is faster), the best program's share
of the GPU's memory bandwidth and FP32 peak (`--peak-gbs`, `--peak-gflops`;
by default the H100 SXM's 3352 GB/s and 66900 GFLOP/s when the device name
says H100), the GPU and the versions.
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


def tool(args, name):
    return os.path.join(args.build, "bin", name)


def expert_moves(args, name, scratch):
    """The GPU expert's moves for suite kernel `name` and the kernel's bytes
    and flops: pd-tune --remote writes the starting kernel and the expert's
    program as its first generation, whose manifest holds the moves, and
    tuning.json the cost."""
    folder = os.path.join(scratch, name)
    command = [tool(args, "pd-tune"), os.path.join(ROOT, "kernels",
                                                   name + ".pd"),
               "--target=cuda", "--strategy=expert", "--remote=" + folder,
               "--no-db", "--plot=-"]
    if args.chip:
        command.append("--gpu-chip=" + args.chip)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 3:
        sys.exit("gpu_suite: pd-tune %s failed:\n%s" % (name, done.stderr))
    with open(os.path.join(folder, "gen-000", "candidates.json")) as f:
        candidates = json.load(f)["candidates"]
    with open(os.path.join(folder, "tuning.json")) as f:
        described = json.load(f)
    moves = candidates[-1]["moves"] if len(candidates) > 1 else []
    return moves, (described.get("bytes"), described.get("flops"))


def read_moves(path):
    """The moves of a moves file (one a line, `#` comments)."""
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def apply_moves(args, source, moves, path):
    imported = subprocess.run([tool(args, "pd-translate"), "--import-pd",
                               source], check=True, capture_output=True,
                              text=True).stdout
    moves_file = path + ".moves"
    with open(moves_file, "w") as f:
        f.write("\n".join(moves) + "\n")
    with open(path, "w") as f:
        subprocess.run([tool(args, "pd-opt"),
                        "--pd-apply=moves-file=" + moves_file],
                       input=imported, stdout=f, check=True, text=True)


def build(args):
    os.makedirs(args.out, exist_ok=True)
    names = args.kernels.split(",") if args.kernels else suite_kernels()
    scratch = os.path.join(args.out, "expert-scratch")
    manifest = []
    for name in names:
        source = os.path.join(ROOT, "kernels", name + ".pd")
        variants = [("naive", source)]
        moves = os.path.join(ROOT, "bench", "moves", "gpu", name + ".moves")
        if os.path.exists(moves):
            mapped = os.path.join(args.out, name + "-mapped.mlir")
            apply_moves(args, source, read_moves(moves), mapped)
            variants.append(("mapped", mapped))
        expert = os.path.join(args.out, name + "-expert.mlir")
        moves, (bytes_, flops) = expert_moves(args, name, scratch)
        apply_moves(args, source, moves, expert)
        variants.append(("expert", expert))
        if args.tuned:
            best = os.path.join(args.tuned, name + ".moves")
            if os.path.exists(best):
                searched = os.path.join(args.out, name + "-searched.mlir")
                apply_moves(args, source, read_moves(best), searched)
                variants.append(("searched", searched))
        for variant, path in variants:
            folder = os.path.join(args.out, "%s-%s" % (name, variant))
            command = [tool(args, "pd-run"), path, "--target=cuda",
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
                print("gpu_suite: %s %s does not build: %s"
                      % (name, variant, done.stderr.strip()), file=sys.stderr)
                continue
            line = done.stdout.strip().splitlines()[-1]
            print(line, file=sys.stderr)
            manifest.append({"kernel": name, "variant": variant,
                             "package": os.path.basename(folder),
                             "checked": checked, "bytes": bytes_,
                             "flops": flops})
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)


def tune(args):
    """One round of every kernel's search through files: pd-tune --remote
    on each; prints what to run on the GPU machine, or that all are done
    (their best moves in DIR/<kernel>.moves)."""
    names = args.kernels.split(",") if args.kernels else suite_kernels()
    waiting = []
    for name in names:
        command = [tool(args, "pd-tune"),
                   os.path.join(ROOT, "kernels", name + ".pd"),
                   "--target=cuda", "--strategy=anneal",
                   "--budget=%d" % args.budget,
                   "--generation=%d" % args.generation,
                   "--remote=" + os.path.join(args.dir, name),
                   "--db=" + os.path.join(args.dir, "tuning.db"),
                   "--moves-output=" + os.path.join(args.dir, name + ".moves"),
                   "--plot=-", "--quiet"]
        if args.chip:
            command.append("--gpu-chip=" + args.chip)
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode == 3:
            folder = sorted(d for d in os.listdir(os.path.join(args.dir, name))
                            if d.startswith("gen-"))[-1]
            waiting.append(os.path.join(name, folder))
        elif done.returncode != 0:
            print("gpu_suite: %s: %s" % (name, done.stderr.strip()),
                  file=sys.stderr)
        else:
            print("%s: done" % name, file=sys.stderr)
    if not waiting:
        print("every search is done; build with --tuned %s" % args.dir)
        return
    print("on the GPU machine, in %s:" % args.dir)
    for gen in waiting:
        print("  pd-gpu-run %s --results=%s/results.json" % (gen, gen))


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
    eager_ms, compiled_ms = {}, {}
    versions = "pd-gpu-run results: %s" % results_path
    if args.torch:
        import torch
        from compare_torch import shapes, torch_cases
        torch.set_default_device("cuda")
        for name in sorted({m["kernel"] for m in manifest}):
            s = shapes(os.path.join(ROOT, "kernels", name + ".pd"))
            eager, out_form = torch_cases(name, s, torch)
            forms = [eager] + ([out_form] if out_form else [])
            eager_ms[name] = min(time_torch_cuda(torch, f, args.reps)
                                 for f in forms)
            try:
                compiled = torch.compile(eager)
                compiled_ms[name] = time_torch_cuda(torch, compiled, args.reps)
            except Exception as e:  # a form torch.compile cannot take
                print("torch.compile %s: %s" % (name, e), file=sys.stderr)
        versions += "; PyTorch %s, CUDA %s" % (torch.__version__,
                                               torch.version.cuda)
    device = results.get("device") or {}
    peak_gbs, peak_gflops = args.peak_gbs, args.peak_gflops
    if not peak_gbs and "H100" in str(device.get("name")):
        peak_gbs, peak_gflops = 3352.0, 66900.0
    print("GPU: %s (compute capability %s, driver %s)\n"
          % (device.get("name"), device.get("compute_capability"),
             device.get("driver")))
    variants = ["naive", "mapped", "expert", "searched"]
    print("| kernel | " + " | ".join(v + " ms" for v in variants) +
          " | PyTorch eager ms | torch.compile ms | ratio | % bandwidth "
          "| % FP32 | notes |")
    print("|---|" + "---|" * (len(variants) + 6))
    ratios = []
    for name in sorted({m["kernel"] for m in manifest}):
        cells, notes, best, cost = {}, [], None, (None, None)
        for entry in (m for m in manifest if m["kernel"] == name):
            r = by_package.get(entry["package"], {})
            status = r.get("status", "missing")
            ms = r.get("median_ms")
            ok = status == "ok" and ms is not None
            cells[entry["variant"]] = "%.4g" % ms if ok else status
            cost = (entry.get("bytes"), entry.get("flops"))
            if not entry["checked"]:
                notes.append(entry["variant"] + " unchecked")
            if ok and entry["checked"]:
                best = ms if best is None else min(best, ms)
        forms = [t for t in (eager_ms.get(name), compiled_ms.get(name)) if t]
        t = min(forms) if forms else None
        ratio = ""
        if t and best:
            ratios.append(t / best)
            ratio = "%.2f" % (t / best)
        bw = fl = ""
        if best and peak_gbs and cost[0]:
            bw = "%.0f" % (100 * cost[0] / (best / 1e3) / 1e9 / peak_gbs)
        if best and peak_gflops and cost[1]:
            fl = "%.1f" % (100 * cost[1] / (best / 1e3) / 1e9 / peak_gflops)
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, " | ".join(cells.get(v, "") for v in variants),
            "%.4g" % eager_ms[name] if name in eager_ms else "",
            "%.4g" % compiled_ms[name] if name in compiled_ms else "",
            ratio, bw, fl, ", ".join(notes)))
    if ratios:
        geomean = 1.0
        for r in ratios:
            geomean *= r
        print("\ngeometric mean of the ratios over %d kernels: %.2f"
              % (len(ratios), geomean ** (1.0 / len(ratios))))
    print("\n" + versions)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the packages (needs LLVM/MLIR)")
    b.add_argument("--out", required=True)
    b.add_argument("--kernels", default="")
    b.add_argument("--chip", default="")
    b.add_argument("--build", default=os.path.join(ROOT, "build"))
    b.add_argument("--tuned", default="",
                   help="a finished `tune` folder: also its best programs")
    b.add_argument("--max-ops", type=int, default=4_000_000_000,
                   help="interpreter budget for the expected outputs")
    t = sub.add_parser("tune", help="one round of the searches through "
                       "files (needs LLVM/MLIR)")
    t.add_argument("--dir", required=True)
    t.add_argument("--kernels", default="")
    t.add_argument("--chip", default="")
    t.add_argument("--build", default=os.path.join(ROOT, "build"))
    t.add_argument("--budget", type=int, default=64)
    t.add_argument("--generation", type=int, default=16)
    r = sub.add_parser("run", help="run them on this machine's GPU")
    r.add_argument("--peak-gbs", type=float, default=0)
    r.add_argument("--peak-gflops", type=float, default=0)
    r.add_argument("packages")
    r.add_argument("--runner", default=os.path.join(ROOT, "build", "bin",
                                                    "pd-gpu-run"))
    r.add_argument("--torch", action="store_true")
    r.add_argument("--reps", type=int, default=10)
    r.add_argument("--time-limit", type=int, default=120)
    args = parser.parse_args()
    {"build": build, "tune": tune, "run": run}[args.command](args)


if __name__ == "__main__":
    main()
