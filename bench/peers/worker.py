#!/usr/bin/env python3
"""One peer computing one kernel, for the interleaved rounds of run.py.

    worker.py torch KERNEL.pd --work DIR --threads T [--compile-modes M,...]
    worker.py tvm-tune KERNEL.pd --work DIR --threads T --trials N
    worker.py tvm KERNEL.pd --work DIR --threads T

Run by the peer's own Python (bench/peers/.venv-torch or .venv-tvm, made
by bench/peers/setup.sh); run.py starts it and talks to it.

``torch`` and ``tvm`` serve: they read the kernel's inputs from
DIR/inputs.npz (written by run.py), prepare every variant (PyTorch eager,
``out=`` where the operation has it, ``torch.compile`` in each mode; TVM
the best schedule MetaSchedule recorded in DIR/tvm), run each once on the
inputs and write its outputs to DIR/out-<variant>.npz for run.py to check,
then print one JSON line ``{"ready": {variant: {...}}}``. After that, each
line ``time REPS`` on stdin is answered by ``{"times": {variant: [ms,
...]}}`` (one untimed run, then REPS timed calls of each variant; more of
both for a short variant, see timed) and
``quit`` ends the worker.

``tvm-tune`` tunes the kernel (translated by pd_to_te from its naive text
form) with MetaSchedule's evolutionary search and XGBoost cost model,
recording every measured schedule in DIR/tvm as it goes, after each batch
of 16 candidates (with batches of 64, the default, the first batch of
layernorm_16384x1024 took more than 4 minutes to run, and a tuning stopped
then had recorded nothing): run.py stops it when its tuning time is up,
and the records so far are what ``tvm`` serves.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))


def say(obj):
    print(json.dumps(obj), flush=True)


# The rule PerfDojo's evaluator applies to its programs (pd-run
# --min-timed-ms, docs/Evaluation.md): a short variant warms up until the
# warm-up took a quarter of MIN_TIMED_S and is timed until its calls add up
# to it, at most 1000 calls; a long one gets one untimed call and REPS.
MIN_TIMED_S = 0.005


def timed(fn, reps):
    warm, calls = 0.0, 0
    while calls < 1 or (warm < MIN_TIMED_S / 4 and calls < 10000):
        start = time.perf_counter()
        fn()
        warm += time.perf_counter() - start
        calls += 1
    times, total = [], 0.0
    while len(times) < reps or (total < MIN_TIMED_S and len(times) < 1000):
        start = time.perf_counter()
        fn()
        took = time.perf_counter() - start
        total += took
        times.append(took * 1e3)
    return times


def serve(variants, ready):
    say({"ready": ready})
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            return
        reps = int(words[1])
        say({"times": {name: timed(fn, reps) for name, fn in variants.items()}})


def torch_variants(args, inputs, numpy):
    import torch
    from compare_torch import shapes, torch_cases
    torch.set_num_threads(args.threads)
    name = os.path.basename(args.kernel)[:-3]
    eager, out = torch_cases(name, shapes(args.kernel), torch, inputs)
    variants, ready = {"eager": eager}, {}
    if out:
        variants["out"] = out
    for mode in [m for m in args.compile_modes.split(",") if m]:
        start = time.perf_counter()
        # A wrapper of its own code object per mode: Dynamo caches compiled
        # frames by code object, and would serve the first mode's code to
        # the second.
        wrapper = eval("lambda: fn()", {"fn": eager})
        compiled = torch.compile(wrapper, mode=None if mode == "default"
                                 else mode)
        compiled()
        variants["compile-" + mode] = compiled
        ready["compile-" + mode] = {"compile_s": time.perf_counter() - start}
    for variant, fn in variants.items():
        result = fn()
        numpy.savez(os.path.join(args.work, "out-torch-%s.npz" % variant),
                    result=result.numpy())
        ready.setdefault(variant, {})
    from torch._inductor import cpu_vec_isa
    isa = cpu_vec_isa.pick_vec_isa()
    ready["_versions"] = {"torch": torch.__version__,
                          "Inductor vector ISA": str(isa) if isa else "none"}
    return variants, ready


def tvm_target(tvm, threads):
    cpu = tvm.target.codegen.llvm_get_system_cpu()
    return tvm.target.Target({"kind": "llvm", "mcpu": cpu,
                              "num-cores": threads})


def tvm_module(args, tvm):
    import pd_to_te
    kernel = pd_to_te.parse(open(args.kernel).read(), args.kernel)
    tensors = pd_to_te.to_te(kernel, tvm, args.kernel)
    func = tvm.te.create_prim_func(tensors).with_attr("global_symbol", "main")
    return kernel, tvm.IRModule({"main": func})


def tvm_tune(args):
    import tvm
    from tvm.s_tir import meta_schedule as ms
    _, mod = tvm_module(args, tvm)
    # The builder's default limit (30 s a candidate) let the one trial of
    # add's one-schedule space fail on a busy host (2026-11-28), leaving no
    # schedule at all; a build's time is not what is measured, so it gets
    # more. Records land a batch at a time (--trials-per-iter): softmax's
    # first batch of 16 took 200 s to build on a Zen 4 host (2026-12-01)
    # and came back from the runner after the 300 s it had, leaving no
    # schedule; batches of 4 recorded 8 trials in 130 s there.
    ms.tune_tir(mod, tvm_target(tvm, args.threads),
                work_dir=os.path.join(args.work, "tvm"),
                max_trials_global=args.trials,
                num_trials_per_iter=args.trials_per_iter,
                num_tuning_cores=args.threads, seed=args.seed,
                builder=ms.builder.LocalBuilder(timeout_sec=180.0))
    say({"tuned": True})


def tvm_variants(args, inputs, numpy):
    import tvm
    from tvm.s_tir import meta_schedule as ms
    kernel, mod = tvm_module(args, tvm)
    target = tvm_target(tvm, args.threads)
    work = os.path.join(args.work, "tvm")
    records = os.path.join(work, "database_tuning_record.json")
    trials = sum(1 for _ in open(records)) if os.path.exists(records) else 0
    if not trials:
        raise SystemExit("%s: MetaSchedule recorded no schedule in %s"
                         % (args.kernel, work))
    start = time.perf_counter()
    database = ms.database.JSONDatabase(work_dir=work)
    schedule = ms.tir_integration.compile_tir(database, mod, target)
    if schedule is None:
        raise SystemExit("%s: no tuned schedule in %s" % (args.kernel, work))
    lib = tvm.compile(schedule.mod, target=target)
    dev = tvm.cpu()
    names = [n for n in kernel.order if kernel.buffers[n][0] in ("in", "out")]
    arrays = []
    for n in names:
        role, dtype, dims = kernel.buffers[n]
        arrays.append(tvm.runtime.tensor(inputs[n], dev) if role == "in"
                      else tvm.runtime.empty(dims, dtype, dev))
    fn = lib["main"]
    fn(*arrays)
    outs = {n: a.numpy() for n, a in zip(names, arrays)
            if kernel.buffers[n][0] == "out"}
    numpy.savez(os.path.join(args.work, "out-tvm-metaschedule.npz"), **outs)
    ready = {"metaschedule": {"trials": trials,
                              "build_s": time.perf_counter() - start},
             "_versions": {"tvm": tvm.__version__}}
    return {"metaschedule": lambda: fn(*arrays)}, ready


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("peer", choices=["torch", "tvm", "tvm-tune"])
    ap.add_argument("kernel")
    ap.add_argument("--work", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--trials-per-iter", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--compile-modes", default="default,max-autotune",
                    help="torch.compile modes timed as variants")
    args = ap.parse_args()
    if args.peer == "tvm-tune":
        return tvm_tune(args)
    import numpy
    with numpy.load(os.path.join(args.work, "inputs.npz")) as data:
        inputs = {k: data[k] for k in data.files}
    make = torch_variants if args.peer == "torch" else tvm_variants
    variants, ready = make(args, inputs, numpy)
    serve(variants, ready)


if __name__ == "__main__":
    main()
