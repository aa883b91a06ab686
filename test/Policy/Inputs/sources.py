"""Checks the guided sampler's sources in three pd-tune --json summaries of
one kernel and budget: only the policy's best (--explore=0
--adaptive-explore=false), only random draws (--explore=1), and the
adaptive choice (--explore=0), which must draw from both. In each, the
programs of the two sources add up to what the search measured after its
rollout, and no source has more programs faster than their parent than
programs."""
import json
import sys

policy_only, random_only, adaptive = (json.load(open(p)) for p in sys.argv[1:4])
problems = []
for name, s in (("policy-only", policy_only), ("random-only", random_only),
                ("adaptive", adaptive)):
    for source in ("policy_best", "random_draws"):
        c = s[source]
        if not 0 <= c["faster"] <= c["programs"]:
            problems.append("%s: %s has %d faster of %d programs" % (
                name, source, c["faster"], c["programs"]))
    drawn = s["policy_best"]["programs"] + s["random_draws"]["programs"]
    if not 0 < drawn <= s["evaluations"]:
        problems.append("%s: %d programs drawn by the sampler, %d evaluations"
                        % (name, drawn, s["evaluations"]))
if policy_only["random_draws"]["programs"] != 0:
    problems.append("policy-only drew at random")
if random_only["policy_best"]["programs"] != 0:
    problems.append("random-only took the policy's best")
if min(adaptive["policy_best"]["programs"],
       adaptive["random_draws"]["programs"]) == 0:
    problems.append("adaptive drew from one source only: %s" % adaptive)
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
