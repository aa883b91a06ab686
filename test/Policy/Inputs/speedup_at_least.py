#!/usr/bin/env python3
"""speedup_at_least.py SUMMARY.json X: exits 0 when pd-tune's --json summary
shows a speedup of at least X over the starting kernel, 1 otherwise, and
prints the speedup either way."""
import json
import sys

summary = json.load(open(sys.argv[1]))
speedup = summary["start_ms"] / summary["best_ms"]
print("speedup %.1fx (at least %sx wanted)" % (speedup, sys.argv[2]))
sys.exit(0 if speedup >= float(sys.argv[2]) else 1)
