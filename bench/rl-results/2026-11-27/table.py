"""The table of Learning.md's 2026-11-27 evaluation, from rl_eval.py's
progress logs (eval1.log, eval2.log: each run's best speedup over the naive
kernel and its wall time) and pd-tune's --json summaries in runs/ (the rl
runs' sources): python3 table.py eval1.log eval2.log. swiglu counts seeds
1-3 only, the seeds every method but the two -static ones finished."""
import re, sys, math, json, os, collections
runs = {}
for log in sys.argv[1:]:
    for line in open(log):
        m = re.match(r"(\S+) b=200 s=(\d+) (\S+): ([\d.]+)x in (\d+) s", line)
        if m:
            runs[(m.group(1), m.group(3), int(m.group(2)))] = (float(m.group(4)), float(m.group(5)))
kernels = ["rmsnorm", "log_softmax", "swiglu"]
methods = ["random", "anneal", "rl-fixed", "rl-fixed-static", "rl-learned", "rl-learned-static", "rl-fixed-expert"]
# seeds where every method ran, per kernel
print("| kernel | " + " | ".join(methods) + " |")
print("|---|" + "---|" * len(methods))
logs = collections.defaultdict(list)
for k in kernels:
    common = None
    for m in methods:
        s = {seed for (kk, mm, seed) in runs if kk == k and mm == m}
        if s:
            common = s if common is None else common & s
    cells = []
    for m in methods:
        v = [runs[(k, m, s)] for s in range(1, 4 if k == "swiglu" else 6) if (k, m, s) in runs]
        if not v:
            cells.append("-"); continue
        sp = [x[0] for x in v]
        mean = sum(sp) / len(sp)
        logs[m].append(math.log(mean))
        cells.append("%.2fx (%.2f-%.2f; %d), %.0f s" % (mean, min(sp), max(sp), len(sp), sum(x[1] for x in v) / len(v)))
    print("| %s | %s |" % (k, " | ".join(cells)))
print("| geometric mean | " + " | ".join("%.2fx" % math.exp(sum(v) / len(v)) if len(v) == 3 else "-" for v in (logs[m] for m in methods)) + " |")
# sources
print()
for m in methods:
    if not m.startswith("rl"): continue
    pol = [0, 0]; rnd = [0, 0]
    for k in kernels:
        for s in range(1, 6):
            f = os.path.join(os.environ.get("RL_OUT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs")), "%s-%s-b200-s%d.json") % (k, m, s)
            if os.path.exists(f) and (k, m, s) in runs:
                d = json.load(open(f))
                if "policy_best" in d:
                    pol[0] += d["policy_best"]["programs"]; pol[1] += d["policy_best"]["faster"]
                    rnd[0] += d["random_draws"]["programs"]; rnd[1] += d["random_draws"]["faster"]
    print("%s: policy's best %d programs (%d faster than parent), random draws %d (%d faster)" % (m, pol[0], pol[1], rnd[0], rnd[1]))
