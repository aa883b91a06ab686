#!/usr/bin/env python3
"""The RL agent (pd-train, pd-tune --strategy=rl) against random sampling
and annealing, on suite kernels left out of its training.

    .venv/bin/python bench/rl_eval.py [--build build] [--out-dir DIR]
        [--episodes 150] [--budgets 200,50] [--seeds 5,3] [--threads 2]
        [--curves docs/images] [--reuse-policies] [--reuse-runs]
        [--demonstrate expert] [--encoders learned,fixed]
        [--train-seeds 1,2] [--first-seed 6]
        [--methods random,anneal,rl-learned,rl-fixed,rl-fixed-value] > table.md

1. Writes the suite kernels at medium shapes (fractions of a millisecond,
   so that a budget of evaluations runs in minutes on this machine): a
   training set and a held-out set (kernels/suite.py emit --shape).
2. Trains two policies with pd-train on the training set plus random
   kernels of the generator: the learned token encoder and the fixed one
   (a random projection), the same episodes, seed and options (with
   --train-seeds, one policy per training seed: policy-ENCODER-tN for seed
   N other than 1); records the wall-clock time of training.
3. For each held-out kernel, budget and seed, runs pd-tune from the naive
   program: --strategy=random and anneal (--start-from=naive) and rl with
   each policy. All runs of one kernel share one tuning database, so a
   program is timed once and every method sees the same time for it.
4. Prints Markdown tables: per kernel and budget, each method's best
   speedup over the naive kernel (mean and min-max over seeds) and its
   wall-clock time; the geometric mean over the held-out kernels; how
   often the programs of each source of the rl sampler (the policy's best,
   its best place of a random move, a random draw) ran 3 % faster than
   their parent; and the training cost. Every pd-tune summary is kept in --out-dir, and every
   run's result in rl_eval-BUDGETS.json there (--reuse-runs takes them
   back, so that a later invocation adds methods, for example policies
   trained with --demonstrate, to the same table and tuning databases).
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TRAIN = {
    "softmax": "M=512,N=512",
    "matmul": "M=128,K=128,N=128",
    "layernorm_4096x4096": "M=512,N=512",
    "add": "M=512,N=1024",
    "relu_ffn": "N=2,C=8,H=32,W=32,O=32",
    "batchnorm_8x64x300x300": "N=2,C=8,H=32,W=32",
    "conv_8x64x64x56x56x3": "N=1,K=8,C=8,H=16,W=16,R=3,S=3",
}
HELD_OUT = {
    "rmsnorm": "M=512,N=512",
    "log_softmax": "M=512,N=512",
    "swiglu": "M=64,K=128,N=64",
}


def emit(name, shape, folder):
    path = os.path.join(folder, name + ".pd")
    text = subprocess.run(
        [sys.executable, os.path.join(ROOT, "kernels", "suite.py"), "emit",
         name, "--shape", shape], check=True, capture_output=True,
        text=True).stdout
    with open(path, "w") as f:
        f.write(text)
    return path


def policy_name(args, encoder, train_seed=1):
    name = encoder if args.demonstrate == "none" else "%s-%s" % (
        encoder, args.demonstrate)
    return name if train_seed == 1 else "%s-t%d" % (name, train_seed)


def train(args, encoder, train_seed, kernels):
    policy = os.path.join(args.out_dir, "policy-%s.pt" % policy_name(
        args, encoder, train_seed))
    for suffix in ("", ".replay", ".curve.csv", ".curve.svg"):
        if os.path.exists(policy + suffix):
            os.remove(policy + suffix)
    cmd = [os.path.join(args.build, "bin", "pd-train")] + kernels + [
        "--generated=%d" % args.generated, "--episodes=%d" % args.episodes,
        "--encoder=" + encoder, "--num-threads=%d" % args.threads,
        "--demonstrate=" + args.demonstrate,
        "--db=" + os.path.join(args.out_dir, "train.db"), "--seed=%d" % train_seed,
        "--quiet", "-o", policy]
    start = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return policy, time.time() - start


def tune(args, kernel, method, policy, budget, seed):
    name = os.path.basename(kernel)[:-3]
    out = os.path.join(args.out_dir,
                       "%s-%s-b%d-s%d.json" % (name, method, budget, seed))
    cmd = [os.path.join(args.build, "bin", "pd-tune"), kernel,
           "--budget=%d" % budget, "--seed=%d" % seed,
           "--num-threads=%d" % args.threads, "--no-torch", "--plot=-",
           "--quiet", "--json=" + out,
           "--db=" + os.path.join(args.out_dir, name + ".db")]
    if method.startswith("rl"):
        cmd += ["--strategy=rl", "--policy=" + policy]
        _, variants = split_method(method)
        if "static" in variants:
            cmd += ["--adaptive-explore=false"]
        if "value" in variants:
            cmd += ["--policy-rank=value"]
    else:
        cmd += ["--strategy=" + method, "--start-from=naive"]
    start = time.time()
    run = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - start
    if run.returncode != 0:
        print("%s %s: %s" % (name, method, run.stderr.strip()),
              file=sys.stderr)
        return None
    summary = json.load(open(out))
    # How often each source of the rl sampler's programs paid (ran 3 %
    # faster than their parent): programs and faster, per source.
    sources = [summary.get(k, {}).get(f, 0) for k in SOURCES
               for f in ("programs", "faster")]
    return summary["start_ms"] / summary["best_ms"], wall, sources


VARIANTS = ("static", "value")
SOURCES = ("policy_best", "policy_place", "random_draws")


def split_method(method):
    """rl-POLICY[-static][-value] -> (rl-POLICY, {variants})."""
    parts = method.split("-")
    variants = set()
    while parts and parts[-1] in VARIANTS:
        variants.add(parts.pop())
    return "-".join(parts), variants


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out-dir", default="/tmp/perfdojo-rl-eval")
    parser.add_argument("--episodes", type=int, default=150)
    parser.add_argument("--generated", type=int, default=4)
    parser.add_argument("--budgets", default="200,50")
    parser.add_argument("--seeds", default="5,3",
                        help="seeds per budget, in the order of --budgets")
    parser.add_argument("--first-seed", type=int, default=1,
                        help="the search seeds are FIRST, FIRST+1, ... (to "
                        "confirm a result on seeds it was not chosen on)")
    parser.add_argument("--train-seeds", default="1",
                        help="pd-train seeds: one policy per encoder and "
                        "seed, policy-ENCODER-tN for seed N other than 1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--demonstrate", default="none",
                        help="pd-train --demonstrate: none, or a heuristic "
                        "(expert) whose programs of the training kernels "
                        "are played as demonstrations; its policies are "
                        "named rl-ENCODER-HEURISTIC")
    parser.add_argument("--methods",
                        default="random,anneal,rl-learned,rl-fixed",
                        help="random, anneal, rl-POLICY (the policy's "
                        "sampler trusting the policy as far as it pays on "
                        "the kernel, the default), with the suffixes "
                        "-static (--adaptive-explore=false: a fixed share "
                        "of random draws) and -value (--policy-rank=value: "
                        "the policy's best by Q, not by its gain head)")
    parser.add_argument("--encoders", default="learned,fixed",
                        help="the policies to train (or reuse)")
    parser.add_argument("--reuse-policies", action="store_true",
                        help="play the policies an earlier run left in "
                        "--out-dir instead of training them again (to add "
                        "a budget)")
    parser.add_argument("--reuse-runs", action="store_true",
                        help="take the runs an earlier run of the same "
                        "budgets recorded in --out-dir instead of running "
                        "them again (to add methods to its table)")
    parser.add_argument("--curves", metavar="DIR",
                        help="copy each policy's learning curve (SVG) here, "
                        "as rl-curve-<encoder>.svg")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    kernels = os.path.join(args.out_dir, "kernels")
    os.makedirs(kernels, exist_ok=True)
    train_files = [emit(n, s, kernels) for n, s in TRAIN.items()]
    held_out = [emit(n, s, kernels) for n, s in HELD_OUT.items()]

    policies, train_seconds = {}, {}
    if args.reuse_policies:
        # Every policy an earlier run left, with or without demonstrations.
        for f in sorted(os.listdir(args.out_dir)):
            if f.startswith("policy-") and f.endswith(".pt"):
                policies["rl-" + f[len("policy-"):-3]] = os.path.join(
                    args.out_dir, f)
    for encoder, train_seed in [(e, int(t))
                                for e in args.encoders.split(",")
                                for t in args.train_seeds.split(",")]:
        name = policy_name(args, encoder, train_seed)
        existing = os.path.join(args.out_dir, "policy-%s.pt" % name)
        if args.reuse_policies and os.path.exists(existing):
            policies["rl-" + name] = existing
            continue
        print("training %s ..." % name, file=sys.stderr)
        policies["rl-" + name], train_seconds[name] = train(
            args, encoder, train_seed, train_files)
        if args.curves:
            shutil.copyfile(policies["rl-" + name] + ".curve.svg",
                            os.path.join(args.curves,
                                         "rl-curve-%s.svg" % name))

    budgets = [int(b) for b in args.budgets.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    methods = args.methods.split(",")
    for method in methods:
        if method not in ("random", "anneal") and \
                split_method(method)[0] not in policies:
            parser.error("unknown method '%s'" % method)
    results = {}  # (kernel, budget, method) -> [(speedup, wall)]
    saved = os.path.join(args.out_dir, "rl_eval-%s.json" % "-".join(
        map(str, budgets)))
    done = {}  # (kernel, budget, method, seed) -> (speedup, wall)
    if args.reuse_runs and os.path.exists(saved):
        for key, runs in json.load(open(saved)).get("runs", {}).items():
            done[tuple(key.split("|"))] = runs
    for budget, count in zip(budgets, seeds):
        for kernel in held_out:
            name = os.path.basename(kernel)[:-3]
            for seed in range(args.first_seed, args.first_seed + count):
                for method in methods:
                    key = (name, str(budget), method, str(seed))
                    if key in done:
                        r = tuple(done[key])
                        results.setdefault((name, budget, method),
                                           []).append(r)
                        continue
                    r = tune(args, kernel, method,
                             policies.get(split_method(method)[0]),
                             budget, seed)
                    if r:
                        done[key] = r
                        results.setdefault((name, budget, method), []).append(r)
                        print("%s b=%d s=%d %s: %.2fx in %.0f s" %
                              (name, budget, seed, method, r[0], r[1]),
                              file=sys.stderr)

    print("Best speedup over the naive kernel (mean, and min-max over seeds), "
          "from the naive program, %d threads.\n" % args.threads)
    for budget, count in zip(budgets, seeds):
        print("Budget %d evaluations, %d seeds (%d-%d):\n" % (
            budget, count, args.first_seed, args.first_seed + count - 1))
        print("| kernel | " + " | ".join(methods) + " |")
        print("|---|" + "---|" * len(methods))
        logs = {m: [] for m in methods}
        for kernel in held_out:
            name = os.path.basename(kernel)[:-3]
            cells = []
            for m in methods:
                runs = results.get((name, budget, m), [])
                if not runs:
                    cells.append("failed")
                    continue
                s = [r[0] for r in runs]
                logs[m].append(math.log(statistics.mean(s)))
                cells.append("%.2fx (%.2f-%.2f), %.0f s" % (
                    statistics.mean(s), min(s), max(s),
                    statistics.mean(r[1] for r in runs)))
            print("| %s | %s |" % (name, " | ".join(cells)))
        print("| geometric mean | " + " | ".join(
            "%.2fx" % math.exp(sum(v) / len(v)) if v else "-"
            for v in logs.values()) + " |\n")
        # The rl sampler's sources: how often each one's programs paid.
        for m in methods:
            if not m.startswith("rl"):
                continue
            total = [0] * (2 * len(SOURCES))
            for kernel in held_out:
                name = os.path.basename(kernel)[:-3]
                for r in results.get((name, budget, m), []):
                    if len(r) > 2 and len(r[2]) == len(total):
                        total = [a + b for a, b in zip(total, r[2])]
            print("- %s, programs that ran 3 %% faster than their parent: " %
                  m + ", ".join("%s %d of %d (%.0f %%)" % (
                      source, total[2 * i + 1], total[2 * i],
                      100.0 * total[2 * i + 1] / max(total[2 * i], 1))
                      for i, source in enumerate(SOURCES)))
        print()
    if train_seconds:
        print("Training: %d episodes on %d suite kernels and %d generated "
              "ones: " % (args.episodes, len(train_files), args.generated) +
              ", ".join("%s %.0f s" % (e, s)
                        for e, s in train_seconds.items()) + ".")
    else:
        print("The policies of an earlier run in %s were played." %
              args.out_dir)
    json.dump({"results": {"|".join(map(str, k)): v
                           for k, v in results.items()},
               "runs": {"|".join(k): v for k, v in done.items()},
               "train_seconds": train_seconds}, open(saved, "w"), indent=1)


if __name__ == "__main__":
    main()
