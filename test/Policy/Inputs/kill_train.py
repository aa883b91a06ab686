#!/usr/bin/env python3
"""Kills a pd-train run with SIGKILL after its first checkpoint, then resumes.

    kill_train.py PD_TRAIN POLICY KERNEL... -- OPTION...

Starts pd-train for 12 episodes with a checkpoint every 2, waits until the
policy file exists, lets it run a little more, kills it (kill -9), then
runs the same command with --resume and checks that it went on from the
checkpoint (not from episode 0) to episode 12, and that the learning curve
holds each of the 12 episodes once.
"""
import os
import signal
import subprocess
import sys
import time

split = sys.argv.index("--")
tool, policy = sys.argv[1:3]
kernels, options = sys.argv[3:split], sys.argv[split + 1:]
command = [tool] + kernels + options + [
    "--episodes=12", "--checkpoint-every=2", "-o", policy]
run = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
deadline = time.time() + 300
while time.time() < deadline and run.poll() is None:
    if os.path.exists(policy):
        break
    time.sleep(0.05)
if run.poll() is not None:
    sys.exit("pd-train ended (status %s) before it could be killed" % run.returncode)
if not os.path.exists(policy):
    sys.exit("no checkpoint after 300 s")
time.sleep(1.0)
run.send_signal(signal.SIGKILL)
run.wait()
print("killed")
resumed = subprocess.run(command + ["--resume"], capture_output=True, text=True)
if resumed.returncode != 0:
    sys.exit("the resumed run failed: " + resumed.stderr)
first = resumed.stderr.splitlines()[0]
print(first.split(", policy")[0])
start = int(first.split("episodes ")[1].split(" ->")[0])
if start < 2 or start % 2:
    sys.exit("resumed from episode %d, not from a checkpoint" % start)
episodes = [line.split(",")[0]
            for line in open(policy + ".curve.csv").read().splitlines()[1:]]
if episodes != [str(i) for i in range(12)]:
    sys.exit("the curve's episodes are %s" % episodes)
print(resumed.stdout.splitlines()[0].split(",")[0])
