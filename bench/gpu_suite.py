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

One trip to a GPU machine for everything (bench/gpu_trip.sh; docs/GPU.md):

    python3 bench/gpu_suite.py tune --dir gpurun/tune --start-from expert \\
        --generation 12 --budget 100 --ahead
    python3 bench/gpu_suite.py lists --out gpurun --tune gpurun/tune
    # there: OUT=out DEADLINE=400 bench/gpu_trip.sh gpurun
    python3 bench/gpu_suite.py report --tune gpurun/tune --results ... \\
        --torch-json out/torch.json
    python3 bench/gpu_suite.py collect --tune gpurun/tune --results ...

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
import collections
import itertools
import math
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


def kernel_path(name):
    """The file of kernel `name`: the suite's, else the unseen set's."""
    path = os.path.join(ROOT, "kernels", name + ".pd")
    if not os.path.exists(path):
        path = os.path.join(ROOT, "kernels", "unseen", name + ".pd")
    return path


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
    os.makedirs(args.dir, exist_ok=True)
    waiting, failed = [], []
    for name in names:
        command = [tool(args, "pd-tune"), kernel_path(name),
                   "--target=cuda", "--strategy=anneal",
                   "--budget=%d" % args.budget,
                   "--generation=%d" % args.generation,
                   "--remote=" + os.path.join(args.dir, name),
                   "--db=" + os.path.join(args.dir, "tuning.db"),
                   "--moves-output=" + os.path.join(args.dir, name + ".moves"),
                   "--plot=-", "--quiet",
                   # The starting kernel's reference run on this CPU: a
                   # full-size product takes seconds, more on a busy host.
                   "--time-limit=600"]
        if args.chip:
            command.append("--gpu-chip=" + args.chip)
        if args.start_from:
            command.append("--start-from=" + args.start_from)
        if args.max_expected_mib:
            command.append("--max-expected-mib=%d" % args.max_expected_mib)
        if name in args.interpret.split(","):
            command.append("--check-against=interpreter")
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode == 3:
            folder = sorted(d for d in os.listdir(os.path.join(args.dir, name))
                            if d.startswith("gen-"))[-1]
            waiting.append(os.path.join(name, folder))
            if args.ahead:
                ahead = build_ahead(args, name, command)
                if ahead:
                    waiting.append(os.path.join(name, ahead))
        elif done.returncode != 0:
            print("gpu_suite: %s: %s" % (name, done.stderr.strip()),
                  file=sys.stderr)
            failed.append(name)
        else:
            print("%s: done" % name, file=sys.stderr)
    if failed:
        sys.exit("gpu_suite: the searches of %s failed" % ", ".join(failed))
    if not waiting:
        print("every search is done; build with --tuned %s" % args.dir)
        return
    print("on the GPU machine, in %s:" % args.dir)
    for gen in waiting:
        print("  pd-gpu-run %s --results=%s/results.json" % (gen, gen))


def build_ahead(args, name, command):
    """Prefetches the generation after the waiting one, so that one trip to
    the GPU machine measures two: in a scratch copy of the kernel's folder,
    the waiting generation gets the fake runner's cost-model times
    (test/Search/Inputs/fake-gpu-runner.py) as a guess, pd-tune writes the
    next generation there, and its packages move to `ahead-NNN/` beside the
    real generations. pd-tune reads the results of every generation folder
    by package hash, so when the real times lead the search to the same
    proposals, their measurements are there already; where they lead
    elsewhere, the prefetched packages are measured for nothing. Returns the
    folder's name, or None."""
    import shutil
    import tempfile
    folder = os.path.join(args.dir, name)
    waiting = sorted(d for d in os.listdir(folder) if d.startswith("gen-"))[-1]
    fake = os.path.join(ROOT, "test", "Search", "Inputs",
                        "fake-gpu-runner.py")
    with tempfile.TemporaryDirectory() as scratch:
        copy = os.path.join(scratch, name)
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns(
            "ahead-*", "*.ptx", "expected"))
        os.symlink(os.path.abspath(os.path.join(folder, "expected")),
                   os.path.join(copy, "expected"))
        subprocess.run([sys.executable, fake, "--results=" +
                        os.path.join(copy, waiting, "results.json"),
                        os.path.join(copy, waiting)], capture_output=True)
        guess = [c for c in command if not c.startswith(("--remote=", "--db=",
                                                         "--moves-output="))]
        guess += ["--remote=" + copy, "--no-db"]
        done = subprocess.run(guess, capture_output=True, text=True)
        if done.returncode != 3:
            return None
        nxt = sorted(d for d in os.listdir(copy) if d.startswith("gen-"))[-1]
        if nxt == waiting:
            return None
        ahead = "ahead-" + nxt[len("gen-"):]
        target = os.path.join(folder, ahead)
        if os.path.exists(target):
            shutil.rmtree(target)
        shutil.move(os.path.join(copy, nxt), target)
        return ahead


def report(args):
    """The table of a trip (bench/gpu_trip.sh) for docs/Benchmarks.md: per
    kernel of the tune folders, the GPU expert's time, the best checked
    program measured (expert or any candidate of its search), PyTorch's
    faster of eager and `out=` and torch.compile (the least of CUDA events
    and CUDA graph replays), the ratio PyTorch / PerfDojo (> 1: PerfDojo
    faster), and the best program's share of the measured copy bandwidth
    and FP32 matrix-product rate."""
    results = {}
    for path in args.results:
        with open(path) as f:
            for r in json.load(f)["results"]:
                results[r["package"].rstrip("/")] = r
    torch, eager_ms, compiled_ms = load_torch(args.torch_json)
    copy, sgemm = torch.get("copy_gbs"), torch.get("sgemm_gflops")
    rows, ratios, suite_ratios = [], [], []
    suite = suite_kernels()
    for tune_dir in args.tune:
        for name in sorted(os.listdir(tune_dir)):
            folder = os.path.join(tune_dir, name)
            if not os.path.isfile(os.path.join(folder, "tuning.json")):
                continue
            with open(os.path.join(folder, "tuning.json")) as f:
                cost = json.load(f)
            with open(os.path.join(folder, "gen-000", "candidates.json")) as f:
                first = json.load(f)["candidates"]
            expert = [c for c in first if c["moves"]]
            start = [c for c in first if not c["moves"]]
            # Packages by their path from the tune folder's name on
            # (tune/softmax/gen-000/<hash>), wherever the folder lies now.
            prefix = os.path.join(os.path.basename(os.path.normpath(
                tune_dir)), name)
            mine = {p[p.index(prefix + "/"):]: r for p, r in results.items()
                    if "/" + prefix + "/" in "/" + p}
            def ms(r):
                return r["median_ms"] if r and r.get("status") == "ok" \
                    else None
            e = mine.get("%s/gen-000/%s" % (prefix, expert[-1]["package"])) \
                if expert else None
            n = mine.get("%s/gen-000/%s" % (prefix, start[0]["package"])) \
                if start else None
            ok = [r for r in mine.values() if ms(r) is not None and r is not n]
            best = min(ok, key=ms) if ok else None
            failed = collections.Counter(r["status"] for r in mine.values()
                                         if ms(r) is None and r is not n)
            eager, compiled = eager_ms.get(name), compiled_ms.get(name)
            peer = min(t for t in (eager, compiled) if t) \
                if eager or compiled else None
            ratio = peer / ms(best) if peer and best else None
            if ratio:
                ratios.append(ratio)
                if name in suite:
                    suite_ratios.append(ratio)
            bw = fl = ""
            if best and copy:
                bw = "%.0f" % (100 * cost["bytes"] / (ms(best) / 1e3) / 1e9
                               / copy)
            if best and sgemm and cost.get("flops"):
                fl = "%.1f" % (100 * cost["flops"] / (ms(best) / 1e3) / 1e9
                               / sgemm)
            f = lambda v: "%.4g" % v if v else "-"
            notes = ", ".join("%d %s" % (n, s) for s, n in failed.items())
            status = lambda r: f(ms(r)) if ms(r) else (r or {}).get(
                "status", "-")
            rows.append("| %s | %s | %s | %s | %d | %s | %s | %s | %s | %s "
                        "| %s |"
                        % (name, status(n), status(e),
                           f(ms(best)), len(mine) - (n is not None),
                           f(eager), f(compiled),
                           "%.2f" % ratio if ratio else "-", bw, fl, notes))
    print("GPU: %s; PyTorch %s (CUDA %s); copy %.0f GB/s (read + write), "
          "FP32 matrix product %.0f GFLOP/s, both measured by PyTorch there\n"
          % (torch.get("device"), torch.get("torch"), torch.get("cuda"),
             copy or 0, sgemm or 0))
    print("| kernel | naive ms | expert ms | best ms | programs | PyTorch "
          "eager ms | torch.compile ms | ratio | % copy BW | % FP32 | "
          "not ok |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    geo = lambda v: math.exp(sum(math.log(x) for x in v) / len(v))
    if suite_ratios:
        print("\ngeometric mean of the ratios, suite (%d kernels): %.2f"
              % (len(suite_ratios), geo(suite_ratios)))
    if ratios:
        print("geometric mean of the ratios, all (%d kernels): %.2f"
              % (len(ratios), geo(ratios)))


def collect(args):
    """Brings a trip's results back into the tune folders: each kernel's
    waiting generation gets a results.json with every result measured for
    that kernel (its own packages and the prefetched ones; pd-tune takes
    results by package hash), so that `tune` resumes each search."""
    results = []
    device = None
    for path in args.results:
        with open(path) as f:
            data = json.load(f)
        device = device or data.get("device")
        results += data["results"]
    for tune_dir in args.tune:
        base = os.path.basename(os.path.normpath(tune_dir))
        for name in sorted(os.listdir(tune_dir)):
            folder = os.path.join(tune_dir, name)
            gens = sorted(d for d in os.listdir(folder)
                          if d.startswith("gen-")) if os.path.isdir(
                              folder) else []
            if not gens or os.path.exists(os.path.join(folder, gens[-1],
                                                       "results.json")):
                continue
            prefix = "/%s/%s/" % (base, name)
            mine = [r for r in results if prefix in "/" + r["package"]]
            with open(os.path.join(folder, gens[-1],
                                   "candidates.json")) as f:
                waiting = {c["package"] for c in json.load(f)["candidates"]}
            measured = {os.path.basename(r["package"].rstrip("/"))
                        for r in mine}
            if not waiting & measured:
                # Results of other generations only: pd-tune would build
                # the waiting candidates again.
                print("%s: no result for %s" % (name, gens[-1]))
                continue
            with open(os.path.join(folder, gens[-1], "results.json"),
                      "w") as f:
                json.dump({"runner": "pd-gpu-run", "version": 1,
                           "device": device, "results": mine}, f, indent=2)
            print("%s: %d results into %s" % (name, len(mine), gens[-1]))


def lists(args):
    """Sorts the packages of tune folders (and a `build` folder) into the
    list files that bench/gpu_trip.sh runs on the GPU machine, by priority:
    experts.txt (each search's first generation but the starting kernel,
    and the built packages but the naive ones), ahead.txt (prefetched
    generations), naive.txt (the starting kernels: a naive kernel runs on
    one GPU thread, so they go last with a short time limit). Paths are
    relative to the repository's root, where the trip runs."""
    experts, naive, kernels = [], [], []
    ahead_of = []  # per kernel, its prefetched packages
    rel = lambda p: os.path.relpath(p, ROOT)
    for tune_dir in args.tune:
        for name in sorted(os.listdir(tune_dir)):
            folder = os.path.join(tune_dir, name)
            if not os.path.isfile(os.path.join(folder, "tuning.json")):
                continue
            kernels.append(name)
            ahead_of.append([])
            for gen in sorted(os.listdir(folder)):
                path = os.path.join(folder, gen)
                if gen.startswith("ahead-"):
                    ahead_of[-1] += [rel(os.path.join(path, p))
                                     for p in sorted(os.listdir(path))
                                     if os.path.isdir(os.path.join(path, p))]
                if not gen.startswith("gen-") or os.path.exists(
                        os.path.join(path, "results.json")):
                    continue
                with open(os.path.join(path, "candidates.json")) as f:
                    for c in json.load(f)["candidates"]:
                        package = rel(os.path.join(path, c["package"]))
                        (naive if not c["moves"] else experts).append(package)
    for built in args.built:
        with open(os.path.join(built, "manifest.json")) as f:
            for m in json.load(f):
                package = rel(os.path.join(built, m["package"]))
                (naive if m["variant"] == "naive" else experts).append(package)
    # Round-robin over the kernels, so that a trip cut short has measured
    # some of every kernel's prefetched candidates.
    ahead = [p for row in itertools.zip_longest(*ahead_of) for p in row if p]
    os.makedirs(args.out, exist_ok=True)
    for file, paths in (("experts.txt", experts), ("ahead.txt", ahead),
                        ("naive.txt", naive)):
        with open(os.path.join(args.out, file), "w") as f:
            f.write("".join(p + "\n" for p in paths))
    suite = [k for k in kernels if k in suite_kernels()]
    with open(os.path.join(args.out, "torch-kernels.txt"), "w") as f:
        f.write(",".join(suite + [k for k in kernels if k not in suite]))
    print("%d expert, %d prefetched and %d naive packages listed in %s"
          % (len(experts), len(ahead), len(naive), args.out))


def time_torch_cuda(torch, fn, reps, flush=None):
    """Median ms of `fn` over `reps` runs, CUDA events, after a warm-up;
    `flush` (a tensor of twice the L2's size) is overwritten before each
    run, as pd-gpu-run does, so that each starts with a cold L2."""
    fn()
    if not torch.cuda.is_available():  # a dry run of this script on a CPU
        import time
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        if flush is not None:
            flush.fill_(i)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def torch_times(args):
    """PyTorch on this machine's GPU, for `run`'s table: per kernel, the
    faster of eager and `out=` and torch.compile (default mode), FP32
    throughout (TF32 off for matmul and cuDNN, as PerfDojo's kernels compute
    in FP32); and the GPU's two ceilings, a device-to-device copy (bytes read
    plus written) and an FP32 matrix product. Writes JSON to --out after each
    kernel; stops starting kernels after --deadline seconds."""
    import time
    import torch
    from compare_torch import shapes, torch_cases
    began = time.time()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gpu = torch.cuda.is_available()
    flush = None
    if gpu:
        torch.set_default_device("cuda")
        props = torch.cuda.get_device_properties(0)
        l2 = getattr(props, "L2_cache_size", 50 << 20) or (50 << 20)
        flush = torch.empty(2 * l2 // 4, dtype=torch.float32)
    out = {"torch": torch.__version__, "cuda": torch.version.cuda,
           "device": torch.cuda.get_device_name(0) if gpu else "cpu (dry run)",
           "kernels": {}}

    def save():
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2)

    # Ceilings: a 1 GiB copy, and 8192^3 FP32 products.
    a = torch.empty(1 << (28 if gpu else 22), dtype=torch.float32)
    b = torch.empty_like(a)
    ms = time_torch_cuda(torch, lambda: b.copy_(a), 20)
    out["copy_gbs"] = 2 * a.numel() * 4 / (ms / 1e3) / 1e9
    del a, b
    n = 8192 if gpu else 512
    x = torch.rand(n, n)
    y = torch.rand(n, n)
    ms = time_torch_cuda(torch, lambda: x @ y, 10)
    out["sgemm_gflops"] = 2 * n ** 3 / (ms / 1e3) / 1e9
    del x, y
    save()
    names = args.kernels.split(",") if args.kernels else suite_kernels()
    for name in names:
        if args.deadline and time.time() - began > args.deadline:
            out.setdefault("skipped", []).append(name)
            continue
        entry = out["kernels"].setdefault(name, {})
        try:
            s = shapes(kernel_path(name))
            eager, out_form = torch_cases(name, s, torch)
            entry["eager_ms"] = time_torch_cuda(torch, eager, args.reps, flush)
            if out_form:
                entry["out_ms"] = time_torch_cuda(torch, out_form, args.reps,
                                                  flush)
            if args.compile:
                t0 = time.time()
                compiled = torch.compile(eager)
                entry["compile_ms"] = time_torch_cuda(torch, compiled,
                                                      args.reps, flush)
                entry["compile_seconds"] = time.time() - t0
            if args.graphs and gpu:
                # Replays of CUDA graphs: the GPU's time without the
                # host's (Python, dispatch, torch.compile's guards), which
                # pd-gpu-run's own launches do not pay either.
                for key, fn in (("eager_graph_ms", eager),
                                ("out_graph_ms", out_form),
                                ("compile_graph_ms",
                                 compiled if args.compile else None)):
                    if fn is None:
                        continue
                    try:
                        fn()
                        torch.cuda.synchronize()
                        graph = torch.cuda.CUDAGraph()
                        with torch.cuda.graph(graph):
                            fn()
                        entry[key] = time_torch_cuda(torch, graph.replay,
                                                     args.reps, flush)
                    except Exception as e:
                        entry[key + "_error"] = "%s: %s" % (type(e).__name__,
                                                            e)
        except Exception as e:  # a form this PyTorch cannot take
            entry["error"] = "%s: %s" % (type(e).__name__, e)
        print(name, entry, file=sys.stderr, flush=True)
        save()
    save()


def load_torch(path):
    """`torch`'s JSON, and per kernel PyTorch's least time of eager and
    `out=`, and of torch.compile, each over CUDA events and graph replays."""
    with open(path) as f:
        data = json.load(f)
    eager, compiled = {}, {}
    for name, e in data["kernels"].items():
        for table, keys in ((eager, ("eager_ms", "out_ms", "eager_graph_ms",
                                     "out_graph_ms")),
                            (compiled, ("compile_ms", "compile_graph_ms"))):
            times = [e[k] for k in keys if k in e]
            if times:
                table[name] = min(times)
    return data, eager, compiled


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
        torch_json = os.path.join(args.packages, "torch.json")
        torch_times(argparse.Namespace(
            out=torch_json, reps=args.reps, compile=True, graphs=True,
            deadline=0,
            kernels=",".join(sorted({m["kernel"] for m in manifest}))))
        data, eager_ms, compiled_ms = load_torch(torch_json)
        versions += "; PyTorch %s, CUDA %s" % (data["torch"], data["cuda"])
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
    t.add_argument("--ahead", action="store_true",
                   help="also prefetch the next generation, guessing the "
                   "waiting one's times with the fake runner's cost model")
    t.add_argument("--max-expected-mib", type=int, default=1,
                   help="pd-tune --max-expected-mib: larger expected "
                   "outputs travel as a sample (keeps the folder small)")
    t.add_argument("--interpret", default="",
                   help="kernels whose candidates check against the float64 "
                   "interpreter, not the kernel compiled in float32 (long "
                   "reductions, whose float32 sums drift)")
    t.add_argument("--start-from", default="",
                   help="pd-tune --start-from (naive, greedy, expert)")
    c = sub.add_parser("collect", help="a trip's results into the tune "
                       "folders' waiting generations")
    c.add_argument("--tune", action="append", default=[])
    c.add_argument("--results", action="append", default=[])
    q = sub.add_parser("report", help="a trip's table (Markdown)")
    q.add_argument("--tune", action="append", default=[])
    q.add_argument("--results", action="append", default=[],
                   help="pd-gpu-run results JSON (repeatable)")
    q.add_argument("--torch-json", required=True)
    l = sub.add_parser("lists", help="sort tune folders' packages into "
                       "bench/gpu_trip.sh's list files")
    l.add_argument("--out", required=True)
    l.add_argument("--tune", action="append", default=[],
                   help="a `tune` folder (repeatable)")
    l.add_argument("--built", action="append", default=[],
                   help="a `build` folder (repeatable)")
    p = sub.add_parser("torch", help="time PyTorch on this machine's GPU "
                       "(JSON for report --torch-json)")
    p.add_argument("--out", required=True)
    p.add_argument("--kernels", default="")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--compile", action="store_true",
                   help="also torch.compile (default mode)")
    p.add_argument("--graphs", action="store_true",
                   help="also time each form as a CUDA graph's replay")
    p.add_argument("--deadline", type=float, default=0,
                   help="seconds after which no further kernel starts")
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
    {"build": build, "tune": tune, "run": run, "lists": lists,
     "torch": torch_times, "report": report,
     "collect": collect}[args.command](args)


if __name__ == "__main__":
    main()
