#!/usr/bin/env python3
"""PerfDojo against its peers, side by side, in one run on one machine.

    bench/peers/setup.sh                         # once: the peers' venvs
    .venv/bin/python bench/peers/run.py [--kernels K,...] [--set unseen]
        [--budget 150] [--pd-time-budget 600] [--tvm K[:S],...|all|none]
        [--tvm-min-seconds 240] [--rounds 5] [--reps 10] [--threads 2]
        [--work bench/peers/work] [--retune] > table.md

For each kernel (the suite's, at the paper's shapes, by default):

1. PerfDojo tunes it: ``pd-tune --strategy=anneal --start-from=expert``
   with ``--budget`` evaluations (or ``--pd-time-budget`` seconds); the
   wall time is recorded as PerfDojo's tuning time.
2. TVM MetaSchedule tunes the same naive kernel (translated to a tensor
   expression by pd_to_te.py) for at least as long as PerfDojo did and at
   least ``--tvm-min-seconds`` (or the S seconds of ``--tvm K:S``); its
   trials and time are recorded.
3. One input set (floats uniform in [-1, 1), seeded) is written; PerfDojo's
   tuned program computes the reference outputs on it (perfdojo.Kernel.run),
   and every peer variant's outputs on the same inputs are compared with
   them (largest |difference| relative to the largest |reference|).
4. Timing, in ``--rounds`` interleaved rounds whose order rotates: the
   reference kernel (a fixed compute-bound program, to detect the CPU's
   frequency drift), PerfDojo's tuned program (``pd-run --jit``), PyTorch
   eager, ``out=`` and ``torch.compile`` (default and max-autotune modes),
   TVM's tuned schedule. Each round gives the median of ``--reps`` timed
   calls after one untimed call; a variant's time is the median of its
   rounds, its spread (max - min) / median of them.

Tuned programs, tuning records, inputs and a JSON of every measurement are
kept in ``--work`` (tuning is reused unless ``--retune``). Prints Markdown:
the per-kernel table with each ratio (peer time / PerfDojo time, > 1 means
PerfDojo is faster), the geometric means against each peer, against the
best peer of each kernel, and on the paper's Table 3 kernels; then the
reference kernel's drift and the versions.
"""

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NOT_TABLE3 = {"gemm", "log_softmax"}
# Kernels whose naive float32 result is itself inaccurate (a variance summed
# over 3.4e7 terms): PerfDojo checks its candidates against the interpreter.
INTERPRETER_CHECKED = {"batchnorm_8x3x2048x2048"}
PEERS = {"torch": os.path.join(HERE, ".venv-torch", "bin", "python"),
         "tvm": os.path.join(HERE, ".venv-tvm", "bin", "python")}


def log(*parts):
    print(time.strftime("%H:%M:%S"), *parts, file=sys.stderr, flush=True)


def tool(args, name):
    return os.path.join(args.build, "bin", name)


def kernel_path(args, name):
    sub = "unseen" if args.set == "unseen" else ""
    return os.path.join(ROOT, "kernels", sub, name + ".pd")


def tune_perfdojo(args, name, work):
    """PerfDojo's tuned program (cached), and its tuning record."""
    program = os.path.join(work, "perfdojo.pd")
    record = os.path.join(work, "perfdojo-tune.json")
    if os.path.exists(program) and os.path.exists(record) and not args.retune:
        return program, json.load(open(record))
    summary = os.path.join(work, "perfdojo.json")
    cmd = [tool(args, "pd-tune"), kernel_path(args, name),
           "--strategy=anneal", "--start-from=expert",
           "--budget=%d" % args.budget, "--time-budget=%g" % args.pd_time_budget,
           "--num-threads=%d" % args.threads, "--no-torch", "--no-db",
           "--quiet", "--plot=-", "-o", program, "--json=" + summary]
    if name in INTERPRETER_CHECKED:
        cmd.append("--check-against=interpreter")
    log("%s: PerfDojo tuning (%d evaluations at most)" % (name, args.budget))
    start = time.time()
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError("%s: pd-tune failed: %s" % (name, run.stderr[-2000:]))
    data = json.load(open(summary))
    rec = {"tune_s": time.time() - start,
           "evaluations": data.get("evaluations"),
           "best_ms": data.get("best_ms")}
    json.dump(rec, open(record, "w"))
    return program, rec


def tune_tvm(args, name, work, seconds):
    """MetaSchedule's records for the kernel (cached), and its tuning record."""
    record = os.path.join(work, "tvm-tune.json")
    if os.path.exists(record) and not args.retune:
        return json.load(open(record))
    log("%s: MetaSchedule tuning for %.0f s" % (name, seconds))
    logfile = open(os.path.join(work, "tvm-tune.log"), "w")
    start = time.time()
    proc = subprocess.Popen(
        [PEERS["tvm"], os.path.join(HERE, "worker.py"), "tvm-tune",
         kernel_path(args, name), "--work", work, "--threads",
         str(args.threads), "--trials", str(args.tvm_trials),
         "--trials-per-iter", str(args.tvm_trials_per_iter)],
        stdout=logfile, stderr=subprocess.STDOUT, env=peer_env(args),
        start_new_session=True)
    try:
        proc.wait(timeout=seconds)
        stopped = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        stopped = True
    records = os.path.join(work, "tvm", "database_tuning_record.json")
    trials = sum(1 for _ in open(records)) if os.path.exists(records) else 0
    rec = {"tune_s": time.time() - start, "trials": trials,
           "trials_per_iter": args.tvm_trials_per_iter,
           "stopped_at_time_budget": stopped, "exit": proc.returncode}
    json.dump(rec, open(record, "w"))
    return rec


def peer_env(args):
    env = dict(os.environ)
    env["TVM_NUM_THREADS"] = str(args.threads)
    env["OMP_NUM_THREADS"] = str(args.threads)
    # PerfDojo's evaluating tools pin their OpenMP threads one per core
    # unless the environment chooses a binding (docs/Evaluation.md); the
    # peers' OpenMP (PyTorch's libgomp, Inductor's code) gets the same.
    if not any(v in env for v in ("OMP_PROC_BIND", "OMP_PLACES",
                                  "KMP_AFFINITY", "GOMP_CPU_AFFINITY")):
        env["OMP_PROC_BIND"] = "true"
        env["OMP_PLACES"] = "cores"
    # PyTorch loads its libraries with global symbols, so that the C++ that
    # torch.compile writes finds SLEEF's vector functions in the wheel's
    # libtorch_cpu. Without it, on a machine with Debian's libtorch-dev
    # (which PerfDojo's RL agent uses), Inductor links the /usr/lib one, its
    # vector ISA probe fails to load, and it silently emits scalar code.
    env["TORCH_USE_RTLD_GLOBAL"] = "1"
    # Each torch.compile mode compiles for itself: with Inductor's caches,
    # max-autotune was served the default mode's code for the same graph
    # (0.1 s; 7.2 s to really compile matmul).
    env["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
    return env


def declared(path):
    """[(name, role, dtype, dims)] of a naive kernel's buffers."""
    import re
    out = []
    for line in open(path):
        m = re.match(r"(in|out|tmp)\s+(\w+)\s+(\w+)\s+\[([^\]]*)\]", line)
        if m:
            out.append((m.group(2), m.group(1), m.group(3),
                        [int(d.split(":")[0]) for d in m.group(4).split(",")]))
    return out


def make_inputs(args, name, work, numpy):
    rng = numpy.random.default_rng(args.seed)
    inputs = {}
    for buf, role, dtype, dims in declared(kernel_path(args, name)):
        if role == "in":
            if dtype != "f32":
                raise RuntimeError("%s: input %s is %s; the peers' run takes "
                                   "float32 kernels" % (name, buf, dtype))
            inputs[buf] = rng.uniform(-1, 1, dims).astype(numpy.float32)
    numpy.savez(os.path.join(work, "inputs.npz"), **inputs)
    return inputs


class Worker:
    """A peer's worker process serving timing rounds."""

    def __init__(self, args, peer, name, work):
        cmd = [PEERS[peer], os.path.join(HERE, "worker.py"), peer,
               kernel_path(args, name), "--work", work,
               "--threads", str(args.threads)]
        if peer == "torch":
            cmd += ["--compile-modes", args.compile_modes]
        self.peer = peer
        self.err = open(os.path.join(work, "worker-%s.log" % peer), "w")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err,
                                     text=True, env=peer_env(args))
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.err.flush()
            last = [l for l in open(self.err.name).read().splitlines()
                    if l.strip() and "No CUDA runtime" not in l]
            raise RuntimeError("%s worker failed: %s (log: %s)" % (
                peer, last[-1] if last else "no message", self.err.name))
        self.ready = json.loads(line)["ready"]

    def time(self, reps):
        self.proc.stdin.write("time %d\n" % reps)
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("%s worker died: see %s" % (self.peer, self.err.name))
        return {k: statistics.median(v)
                for k, v in json.loads(line)["times"].items()}

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        self.proc.wait()


def time_program(args, program, reps, check=False):
    cmd = [tool(args, "pd-run"), "--jit", "--json", "--no-interpret",
           "--num-threads=%d" % args.threads, "--repetitions=%d" % reps,
           "--warmup=1", program]
    text = subprocess.run(cmd, capture_output=True, text=True).stdout
    lines = [l for l in text.splitlines() if l.startswith("{")]
    result = json.loads(lines[-1]) if lines else {"status": "no output"}
    if result.get("status") != "ok":
        raise RuntimeError("%s: pd-run: %s" % (program, result))
    return result


def check_outputs(work, reference, variant_file, numpy):
    """Largest |variant - reference| / largest |reference| over the outputs."""
    worst = 0.0
    with numpy.load(variant_file) as data:
        values = {k: data[k] for k in data.files}
    for buf, ref in reference.items():
        got = values.get(buf, values.get("result"))
        if got is None or got.shape != ref.shape:
            return math.inf
        scale = float(numpy.max(numpy.abs(ref))) or 1.0
        worst = max(worst, float(numpy.max(numpy.abs(got - ref))) / scale)
    return worst


def tvm_selection(spec, default_seconds):
    """The kernels of ``--tvm`` with the least seconds MetaSchedule gets on
    each: None for all (each the default), {} for none; ``K:S`` gives
    kernel K at least S seconds."""
    if spec == "all":
        return None
    chosen = {}
    for item in filter(None, spec.split(",")):
        if item == "none":
            continue
        name, _, seconds = item.partition(":")
        try:
            chosen[name] = float(seconds) if seconds else default_seconds
        except ValueError:
            raise SystemExit("run.py: --tvm %s: '%s' is not a number of "
                             "seconds" % (item, seconds))
        if chosen[name] <= 0:
            raise SystemExit("run.py: --tvm %s: the seconds must be "
                             "positive" % item)
    return chosen


def measure(args, name, reference_program):
    import numpy
    import perfdojo
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    row = {"kernel": name}
    program, row["perfdojo_tune"] = tune_perfdojo(args, name, work)
    tvm_kernels = tvm_selection(args.tvm, args.tvm_min_seconds)
    use_tvm = "tvm" in args.peers and (tvm_kernels is None
                                      or name in tvm_kernels)
    if use_tvm:
        least = args.tvm_min_seconds if tvm_kernels is None else tvm_kernels[name]
        seconds = max(row["perfdojo_tune"]["tune_s"], least)
        row["tvm_tune"] = tune_tvm(args, name, work, seconds)
    inputs = make_inputs(args, name, work, numpy)
    log("%s: PerfDojo's outputs on the inputs" % name)
    reference = perfdojo.Kernel.load(program).run(inputs)
    workers = []
    row["check"] = {}
    for peer in args.peers:
        if peer == "tvm" and not use_tvm:
            continue
        log("%s: starting the %s worker" % (name, peer))
        try:
            w = Worker(args, peer, name, work)
        except RuntimeError as e:
            row.setdefault("errors", []).append(str(e))
            continue
        workers.append(w)
        for variant in w.ready:
            if variant.startswith("_"):
                continue
            row["check"][variant] = check_outputs(
                work, reference,
                os.path.join(work, "out-%s-%s.npz" % (peer, variant)), numpy)
        row.setdefault("versions", {}).update(w.ready.get("_versions", {}))
        row.setdefault("setup", {}).update(
            {k: v for k, v in w.ready.items() if not k.startswith("_")})
    rounds = {}
    steps = ["reference", "perfdojo"] + workers
    for r in range(args.rounds):
        log("%s: round %d of %d" % (name, r + 1, args.rounds))
        for step in steps[r % len(steps):] + steps[:r % len(steps)]:
            if step == "reference":
                rounds.setdefault("reference", []).append(
                    time_program(args, reference_program, args.reps)["median_ms"])
            elif step == "perfdojo":
                result = time_program(args, program, args.reps)
                rounds.setdefault("perfdojo", []).append(result["median_ms"])
                # The shares of this round's time; report() scales them
                # to the median of the rounds.
                row["roofline"] = {k: result.get(k) for k in (
                    "pct_of_best_bandwidth", "pct_of_fma_peak")}
                row["roofline"]["at_ms"] = result["median_ms"]
            else:
                for variant, ms in step.time(args.reps).items():
                    rounds.setdefault(variant, []).append(ms)
    for w in workers:
        w.close()
    row["rounds_ms"] = rounds
    row["median_ms"] = {k: statistics.median(v) for k, v in rounds.items()}
    row["spread"] = {k: (max(v) - min(v)) / statistics.median(v)
                     for k, v in rounds.items()}
    return row


def fmt(ms, spread=None):
    text = "%.3g" % ms if ms < 100 else "%.0f" % ms
    return text if spread is None else "%s ±%.0f%%" % (text, 50 * spread)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def report(args, rows, versions):
    variants = []
    for row in rows:
        for v in row["median_ms"]:
            if v not in ("reference", "perfdojo") and v not in variants:
                variants.append(v)
    print("| kernel | PerfDojo ms | " + " | ".join(variants) +
          " | best peer | ratio to best | PerfDojo % of limit |")
    print("|---|---|" + "---|" * len(variants) + "---|---|---|")
    ratios = {v: [] for v in variants + ["best", "torch-eager-out"]}
    ratios3 = {k: [] for k in ratios}
    for row in rows:
        med, spread = row["median_ms"], row["spread"]
        if "perfdojo" not in med:
            print("| %s | failed: %s |" % (row["kernel"], row.get("errors")))
            continue
        pd = med["perfdojo"]
        cells = []
        checked = {}
        for v in variants:
            if v not in med:
                cells.append("-")
                continue
            bad = row["check"].get(v, 0) > args.tolerance
            checked[v] = not bad
            cells.append("%s (%.2fx)%s" % (fmt(med[v], spread[v]), med[v] / pd,
                                           " MISMATCH" if bad else ""))
        peers = {v: med[v] for v in checked if checked[v]}
        best = min(peers, key=peers.get) if peers else None
        # The shares at the median time, not at the last round's (rows
        # written before 2026-12-01 carry no at_ms: the last round's).
        # The machine's limits are the best of pd-machine's trials, so
        # the shares at PerfDojo's fastest round follow in brackets: on a
        # shared host the gap between the two is the other tenants'.
        limit = row.get("roofline", {})
        at = limit.get("at_ms") or pd
        fastest = min(row["rounds_ms"].get("perfdojo") or [pd])
        dram = limit.get("pct_of_best_bandwidth") or 0
        fma = limit.get("pct_of_fma_peak") or 0
        lim = "%.0f%% DRAM, %.0f%% FMA (fastest round %.0f%%, %.0f%%)" % (
            dram * at / pd, fma * at / pd, dram * at / fastest,
            fma * at / fastest)
        print("| %s | %s | %s | %s | %s | %s |" % (
            row["kernel"], fmt(pd, spread["perfdojo"]), " | ".join(cells),
            best or "-", "%.2fx" % (peers[best] / pd) if best else "-", lim))
        groups = [ratios] + ([ratios3] if row["kernel"] not in NOT_TABLE3
                             else [])
        for group in groups:
            for v in peers:
                group[v].append(peers[v] / pd)
            if best:
                group["best"].append(peers[best] / pd)
            torch_best = [peers[v] for v in ("eager", "out") if v in peers]
            if torch_best:
                group["torch-eager-out"].append(min(torch_best) / pd)
    print()
    print("Geometric mean of the ratios (peer time / PerfDojo time):")
    print()
    print("| against | all kernels here | Table 3 kernels here |")
    print("|---|---|---|")
    for v in variants + ["torch-eager-out", "best"]:
        label = {"best": "best peer of each kernel",
                 "torch-eager-out": "PyTorch, faster of eager and out="}.get(v, v)
        a, b = geomean(ratios[v]), geomean(ratios3[v])
        print("| %s | %s (%d) | %s (%d) |" % (
            label, "%.2fx" % a if a else "-", len(ratios[v]),
            "%.2fx" % b if b else "-", len(ratios3[v])))
    for row in rows:
        for error in row.get("errors", []):
            print()
            print("%s: %s" % (row["kernel"], error))
    print()
    print("Tuning (wall seconds):")
    print()
    print("| kernel | PerfDojo evaluations | PerfDojo s | MetaSchedule trials | MetaSchedule s |")
    print("|---|---|---|---|---|")
    for row in rows:
        p, t = row.get("perfdojo_tune", {}), row.get("tvm_tune")
        print("| %s | %s | %.0f | %s | %s |" % (
            row["kernel"], p.get("evaluations"), p.get("tune_s", 0),
            t["trials"] if t else "-", "%.0f" % t["tune_s"] if t else "-"))
    refs = [ms for row in rows for ms in row["rounds_ms"].get("reference", [])]
    if refs:
        mid = statistics.median(refs)
        print()
        print("Reference kernel (%s, timed in every round): median %.3g ms, "
              "rounds from %+.0f%% to %+.0f%% of it; %d of %d rounds more "
              "than 10%% off." % (
                  args.reference, mid, 100 * (min(refs) / mid - 1),
                  100 * (max(refs) / mid - 1),
                  sum(1 for r in refs if abs(r / mid - 1) > 0.1), len(refs)))
    print()
    print("Times: median of %d rounds (each the median of %d calls, or of "
          "5 ms of calls after 1.25 ms of warm-up for a shorter one), ± half "
          "the spread between rounds; %d threads; versions: %s." % (
              args.rounds, args.reps, args.threads,
              ", ".join("%s %s" % kv for kv in sorted(versions.items()))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="")
    ap.add_argument("--set", default="suite", choices=["suite", "unseen"])
    ap.add_argument("--peers", default="torch,tvm")
    ap.add_argument("--tvm", default="all",
                    help="kernels MetaSchedule tunes: all, none or a list; "
                    "K:S gives kernel K at least S seconds instead of "
                    "--tvm-min-seconds")
    ap.add_argument("--tvm-trials", type=int, default=2000)
    ap.add_argument("--tvm-trials-per-iter", type=int, default=16,
                    help="MetaSchedule's measurement batch; its records "
                    "land a batch at a time, so a kernel whose candidates "
                    "build slowly needs a smaller one to record any within "
                    "its time")
    ap.add_argument("--tvm-min-seconds", type=float, default=240)
    ap.add_argument("--budget", type=int, default=150)
    ap.add_argument("--pd-time-budget", type=float, default=600)
    ap.add_argument("--compile-modes", default="default,max-autotune")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tolerance", type=float, default=2e-3,
                    help="largest accepted |peer - PerfDojo| relative to the "
                         "largest |PerfDojo| of each output")
    ap.add_argument("--reference", default="matmul 256x256x256, expert")
    ap.add_argument("--work", default=os.path.join(HERE, "work"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--retune", action="store_true")
    ap.add_argument("--fresh", action="store_true",
                    help="report only this run's kernels (by default the "
                         "rows of earlier runs into --work are kept)")
    args = ap.parse_args()
    args.peers = [p for p in args.peers.split(",") if p]
    for peer in args.peers:
        if peer not in PEERS:
            ap.error("unknown peer '%s' (torch, tvm)" % peer)
        if not os.path.exists(PEERS[peer]):
            ap.error("%s is not installed: run bench/peers/setup.sh %s"
                     % (peer, peer))
    sys.path.insert(0, os.path.join(ROOT, "kernels"))
    import suite
    names = (args.kernels.split(",") if args.kernels else
             (suite.names() if args.set == "suite" else suite.names("unseen")))
    unknown = sorted(set(tvm_selection(args.tvm, args.tvm_min_seconds) or {})
                     - set(names))
    if unknown:
        ap.error("--tvm names %s, not among the kernels measured (%s)"
                 % (", ".join(unknown), ", ".join(names)))
    os.makedirs(args.work, exist_ok=True)
    reference_program = os.path.join(args.work, "reference.pd")
    if not os.path.exists(reference_program):
        naive = os.path.join(args.work, "reference-naive.pd")
        with open(naive, "w") as f:
            subprocess.run([sys.executable, os.path.join(ROOT, "kernels",
                                                         "suite.py"), "emit",
                            "matmul", "--shape", "M=256,N=256,K=256"],
                           stdout=f, check=True)
        subprocess.run([tool(args, "pd-tune"), naive, "--strategy=expert",
                        "--num-threads=%d" % args.threads, "--no-torch",
                        "--no-db", "--quiet", "--plot=-",
                        "-o", reference_program], check=True,
                       capture_output=True)
    # Rows measured by earlier runs into the same --work are kept (each
    # kernel's peers are timed in its own interleaved rounds) and reported
    # with this run's, which replace those of the same kernels.
    results = os.path.join(args.work, "results.json")
    kept = {}
    if os.path.exists(results) and not args.fresh:
        kept = {row["kernel"]: row for row in json.load(open(results))}
    versions = {}
    for name in names:
        try:
            row = measure(args, name, reference_program)
        except (RuntimeError, OSError) as e:
            log("%s: %s" % (name, e))
            row = {"kernel": name, "errors": [str(e)], "median_ms": {},
                   "spread": {}, "rounds_ms": {}}
        row["measured_at"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        kept[name] = row
        json.dump(list(kept.values()), open(results, "w"), indent=1)
    order = {n: i for i, n in enumerate(suite.names() + suite.names("unseen"))}
    rows = sorted(kept.values(), key=lambda r: order.get(r["kernel"], 1 << 30))
    for row in rows:
        versions.update(row.get("versions", {}))
    versions["PerfDojo"] = subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True).stdout.strip()
    report(args, rows, versions)


if __name__ == "__main__":
    main()
