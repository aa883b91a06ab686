"""Checks the guided sampler's sources in three pd-tune --json summaries of
one kernel and budget: only the policy's best (--explore=0
--adaptive-explore=false), only random draws (--explore=1), and the
adaptive choice (--explore=0), which must draw from all three sources (the
policy's best, its best place of a random move, a random draw). In each, the
programs of the sources add up to what the search measured after its
rollout, and no source has more programs faster than their parent than
programs."""
import json
import sys

SOURCES = ("policy_best", "policy_place", "random_draws")
policy_only, random_only, adaptive = (json.load(open(p)) for p in sys.argv[1:4])
problems = []
for name, s in (("policy-only", policy_only), ("random-only", random_only),
                ("adaptive", adaptive)):
    for source in SOURCES:
        c = s[source]
        if not 0 <= c["faster"] <= c["programs"]:
            problems.append("%s: %s has %d faster of %d programs" % (
                name, source, c["faster"], c["programs"]))
    drawn = sum(s[source]["programs"] for source in SOURCES)
    if not 0 < drawn <= s["evaluations"]:
        problems.append("%s: %d programs drawn by the sampler, %d evaluations"
                        % (name, drawn, s["evaluations"]))
if policy_only["random_draws"]["programs"] + \
        policy_only["policy_place"]["programs"] != 0:
    problems.append("policy-only drew a move name at random")
if random_only["policy_best"]["programs"] + \
        random_only["policy_place"]["programs"] != 0:
    problems.append("random-only took the policy's choice")
if min(adaptive[source]["programs"] for source in SOURCES) == 0:
    problems.append("adaptive did not draw from every source: %s" % adaptive)
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
