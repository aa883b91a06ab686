#!/usr/bin/env python3
"""PerfDojo against PyTorch on the kernel suite, at the paper's shapes.

    python3 bench/compare_torch.py [--threads 1,2] [--kernels softmax,add]
                                   [--reps 5] [--build build] > table.md

For every suite kernel and thread count it times, in the same run:

- the naive kernel (``kernels/K.pd``) compiled by ``pd-run --jit``;
- the hand-optimized variant, when ``bench/moves/K.moves`` exists: the
  moves applied with ``pd-opt``, compiled and checked against the naive
  kernel compiled at full size (``--check-against``, within ``--tolerance``
  of each output's largest magnitude: both are float32, and a sum of 10^7
  terms in another order differs by about 1e-3), or, where the naive
  float32 result is itself inaccurate (INTERPRETER_CHECKED), against the
  float64 interpreter within 1e-4;
- PyTorch computing the same thing: as users call it (a fresh output) and,
  where the operation has one, with ``out=`` (no page faults on a fresh
  output). ``torch.set_num_threads`` is set explicitly.

With ``--rounds N`` the best PerfDojo variant and PyTorch are measured N
times, alternately, and the medians of the rounds reported. Prints a
Markdown table (medians in ms; ratio = PyTorch's best form / the
best PerfDojo variant, so > 1 means PerfDojo is faster) and the versions.
PyTorch must be importable by the Python running this script.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPS = 1e-5

# Kernels whose naive float32 result is itself inaccurate, so the variant is
# checked against the float64 interpreter at full size instead (slow): in
# batchnorm_8x3x2048x2048 each channel's variance sums 3.4e7 terms of about
# 1/3 sequentially, and a float32 sum stops growing past 2^24.
INTERPRETER_CHECKED = {"batchnorm_8x3x2048x2048"}


def shapes(path):
    """{buffer: (role, shape)} from a kernel's declarations."""
    out = {}
    for line in open(path):
        m = re.match(r"(in|out|tmp)\s+(\w+)\s+\w+\s+\[([^\]]*)\]", line)
        if m:
            dims = [int(d.split(":")[0]) for d in m.group(3).split(",")]
            out[m.group(2)] = (m.group(1), dims)
    return out


def torch_cases(name, s, torch, inputs=None):
    """(eager, out_form or None) callables computing kernel `name`, on
    `inputs` ({buffer: numpy array}) when given, else on random tensors."""
    F = torch.nn.functional
    r = lambda b: (torch.from_numpy(inputs[b]) if inputs is not None
                   else torch.rand(*s[b][1]) * 2 - 1)
    o = lambda b: torch.empty(*s[b][1])
    if name in ("add", "mul"):
        x, y, z = r("x"), r("y"), o("z")
        f = torch.add if name == "add" else torch.mul
        return (lambda: f(x, y)), (lambda: f(x, y, out=z))
    if name == "relu":
        x, y = r("x"), o("y")
        return (lambda: torch.relu(x)), (lambda: torch.clamp(x, min=0, out=y))
    if name == "reducemean":
        x, y = r("x"), o("y")
        return (lambda: x.mean(1)), (lambda: torch.mean(x, 1, out=y))
    if name in ("softmax", "log_softmax"):
        x, y = r("x"), o("y")
        f = torch.softmax if name == "softmax" else torch.log_softmax
        return (lambda: f(x, 1)), (lambda: f(x, 1, out=y))
    if name.startswith("layernorm"):
        x, g, b = r("x"), r("gamma"), r("beta")
        n = s["x"][1][1]
        return (lambda: F.layer_norm(x, (n,), g, b, EPS)), None
    if name == "rmsnorm":
        x, g = r("x"), r("gamma")
        n = s["x"][1][1]
        return (lambda: F.rms_norm(x, (n,), g, EPS)), None
    if name.startswith("batchnorm"):
        x, g, b = r("x"), r("gamma"), r("beta")
        return (lambda: F.batch_norm(x, None, None, g, b, True, 0.0, EPS)), None
    if name == "matmul":
        a, b, c = r("A"), r("B"), o("C")
        return (lambda: a @ b), (lambda: torch.matmul(a, b, out=c))
    if name == "gemm":
        a, b, c, d = r("A"), r("B"), r("C"), o("D")
        return ((lambda: torch.addmm(c, a, b, beta=0.5, alpha=1.5)),
                (lambda: torch.addmm(c, a, b, beta=0.5, alpha=1.5, out=d)))
    if name == "bmm":
        a, b, c = r("A"), r("B"), o("C")
        return (lambda: torch.bmm(a, b)), (lambda: torch.bmm(a, b, out=c))
    if name.startswith("conv"):
        x, w = r("x"), r("w")
        return (lambda: F.conv2d(x, w)), None
    if name == "relu_ffn":
        x, w, b = r("x"), r("w"), r("b")
        return (lambda: F.linear(torch.relu(x), w, b)), None
    if name == "swiglu":
        x, w1, w3 = r("x"), r("w1"), r("w3")
        return (lambda: F.silu(x @ w1) * (x @ w3)), None
    # The second kernel set (kernels/unseen), as PyTorch users write it.
    if name in ("gelu", "silu"):
        x = r("x")
        if name == "gelu":
            return (lambda: F.gelu(x, approximate="tanh")), None
        return (lambda: F.silu(x)), None
    if name == "bias_relu":
        x, b = r("x"), r("b")
        bb = b[None, :, None, None]
        return (lambda: torch.relu(x + bb)), None
    if name == "transpose":
        x, y = r("x"), o("y")
        return (lambda: x.t().contiguous()), (lambda: y.copy_(x.t()))
    if name == "transpose_add":
        x, y, z = r("x"), r("y"), o("z")
        return (lambda: x + y.t()), (lambda: torch.add(x, y.t(), out=z))
    if name == "maxpool2x2":
        x = r("x")
        return (lambda: F.max_pool2d(x, 2)), None
    if name == "avgpool3x3":
        x = r("x")
        return (lambda: F.avg_pool2d(x, 3, stride=1)), None
    if name in ("groupnorm", "instancenorm"):
        x, g, b = r("x"), r("gamma"), r("beta")
        if name == "groupnorm":
            return (lambda: F.group_norm(x, 8, g, b, EPS)), None
        return (lambda: F.instance_norm(x, weight=g, bias=b, eps=EPS)), None
    if name == "depthwise_conv":
        x, w = r("x"), r("w")
        w4 = w[:, None]
        return (lambda: F.conv2d(x, w4, groups=w.shape[0])), None
    if name == "attention":
        q, k, v = r("Q"), r("K"), r("V")
        return (lambda: F.scaled_dot_product_attention(q, k, v)), None
    if name == "l2norm":
        x = r("x")
        return (lambda: x * torch.rsqrt((x * x).sum(1, keepdim=True) + EPS)), None
    if name == "colsum":
        x, y = r("x"), o("y")
        return (lambda: x.sum(1)), (lambda: torch.sum(x, 1, out=y))
    if name == "gemv":
        a, x, y = r("A"), r("x"), o("y")
        return (lambda: a @ x), (lambda: torch.mv(a, x, out=y))
    raise KeyError(name)


def time_torch(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def run_pd(args, kernel_path, moves, threads):
    """pd-run --jit --json on the kernel (with moves applied), as a dict."""
    tools = os.path.join(args.build, "bin")
    run = [os.path.join(tools, "pd-run"), "--jit", "--json",
           "--num-threads=%d" % threads, "--repetitions=%d" % args.reps,
           "--time-limit=%d" % args.time_limit]
    if moves is None:
        cmd = run + ["--no-interpret", kernel_path]
        text = subprocess.run(cmd, capture_output=True, text=True).stdout
    else:
        imported = subprocess.run(
            [os.path.join(tools, "pd-translate"), "--import-pd", kernel_path],
            capture_output=True, text=True, check=True).stdout
        applied = subprocess.run(
            [os.path.join(tools, "pd-opt"), "--pd-apply=moves-file=" + moves],
            input=imported, capture_output=True, text=True)
        if applied.returncode:
            return {"status": "moves-refused",
                    "reason": applied.stderr.strip().splitlines()[0]}
        check = ([] if os.path.basename(kernel_path)[:-3] in INTERPRETER_CHECKED
                 else ["--check-against=" + kernel_path,
                       "--tolerance=%g" % args.tolerance])
        cmd = run + ["--input-format=mlir"] + check + ["-"]
        text = subprocess.run(cmd, input=applied.stdout, capture_output=True,
                              text=True).stdout
    lines = [l for l in text.splitlines() if l.startswith("{")]
    return json.loads(lines[-1]) if lines else {"status": "no-output"}


def fmt(ms):
    return "-" if ms is None else ("%.3g" % ms)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--kernels", default="")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure PerfDojo's best variant and PyTorch this "
                         "many times, alternately, and report the medians "
                         "of the rounds (the machine's speed drifts)")
    ap.add_argument("--time-limit", type=int, default=600)
    ap.add_argument("--tolerance", type=float, default=2e-3,
                    help="accepted |variant - naive| relative to the largest "
                         "|naive| of each output (both float32: sums of "
                         "10^7 terms in different orders differ by ~1e-3)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--torch-only", action="store_true",
                    help="time only PyTorch: one JSON line per kernel and "
                         "thread count (used by pd-tune)")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        if args.torch_only:
            print(json.dumps({"error": "PyTorch is not importable by %s: %s"
                              % (sys.executable, e)}))
            return
        raise

    sys.path.insert(0, os.path.join(ROOT, "kernels"))
    import suite

    names = args.kernels.split(",") if args.kernels else suite.names()
    threads = [int(t) for t in args.threads.split(",")]
    if args.torch_only:
        for name in names:
            path = os.path.join(ROOT, "kernels", name + ".pd")
            for t in threads:
                torch.set_num_threads(t)
                eager, out = torch_cases(name, shapes(path), torch)
                te = time_torch(eager, args.reps)
                to = time_torch(out, args.reps) if out else None
                print(json.dumps({"kernel": name, "threads": t,
                                  "eager_ms": te, "out_ms": to,
                                  "best_ms": min(x for x in (te, to) if x),
                                  "torch": torch.__version__}))
        return
    print("| kernel | threads | naive ms | PerfDojo ms | PyTorch ms | "
          "PyTorch out= ms | ratio | PerfDojo % of roofline |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        path = os.path.join(ROOT, "kernels", name + ".pd")
        moves = os.path.join(ROOT, "bench", "moves", name + ".moves")
        s = shapes(path)
        for t in threads:
            torch.set_num_threads(t)
            eager, out = torch_cases(name, s, torch)
            naive = run_pd(args, path, None, t)
            hand = run_pd(args, path, moves, t) if os.path.exists(moves) else None
            variant = moves if hand and hand.get("status") == "ok" else None
            rounds_pd, rounds_te, rounds_to = [], [], []
            for r in range(args.rounds):
                if r:
                    again = run_pd(args, path, variant, t)
                    if again.get("status") == "ok":
                        rounds_pd.append(again["median_ms"])
                rounds_te.append(time_torch(eager, args.reps))
                if out:
                    rounds_to.append(time_torch(out, args.reps))
            te = statistics.median(rounds_te)
            to = statistics.median(rounds_to) if out else None
            best_run = hand if variant else naive
            if best_run.get("status") == "ok" and rounds_pd:
                best_run["median_ms"] = statistics.median(
                    [best_run["median_ms"]] + rounds_pd)
            pd_times = [r["median_ms"] for r in (naive, hand)
                        if r and r.get("status") == "ok"]
            best_pd = min(pd_times) if pd_times else None
            best_torch = min(x for x in (te, to) if x is not None)
            ratio = "%.2f" % (best_torch / best_pd) if best_pd else "-"
            best = hand if hand and hand.get("status") == "ok" else naive
            roof = "-"
            if best.get("status") == "ok" and "pct_of_best_bandwidth" in best:
                roof = "%.0f%% DRAM, %.1f%% FMA" % (
                    best["pct_of_best_bandwidth"], best["pct_of_fma_peak"])
            hand_text = "-"
            if hand:
                hand_text = (fmt(hand["median_ms"]) if hand["status"] == "ok"
                             else hand["status"] + ": " + hand.get("reason", ""))
            naive_text = (fmt(naive["median_ms"]) if naive.get("status") == "ok"
                          else naive.get("status"))
            print("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
                name, t, naive_text, hand_text, fmt(te), fmt(to), ratio, roof))
            sys.stdout.flush()
    print()
    print("PyTorch %s; %s" % (torch.__version__, suite.__name__))


if __name__ == "__main__":
    main()
