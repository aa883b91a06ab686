#!/usr/bin/env python3
"""Kills a pd-tune run with SIGKILL mid-search and checks its database.

    kill_tune.py PD_TUNE KERNEL DB

Starts an anneal of 40 evaluations, waits until the database holds at
least 6 variants, kills the process (kill -9), then checks that SQLite finds
the database intact and that every row is whole (a status, and a time for
the ok ones). Then runs the same command again: it retraces the killed
run's candidates from the database (measuring only the starting kernel,
whose outputs are the reference) and goes on to the budget.
"""
import re
import os
import signal
import sqlite3
import subprocess
import sys
import time

tool, kernel, db = sys.argv[1:4]
command = [tool, kernel, "--strategy=anneal", "--budget=40", "--num-threads=2",
           "--no-torch", "--plot=-", "--quiet", "--db=" + db]
run = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
deadline = time.time() + 120
rows = 0
while time.time() < deadline and run.poll() is None:
    time.sleep(0.05)
    try:
        with sqlite3.connect(db, timeout=5) as c:
            rows = c.execute("SELECT COUNT(*) FROM variants").fetchone()[0]
    except sqlite3.Error:
        continue
    if rows >= 6:
        break
if run.poll() is not None:
    sys.exit("pd-tune ended before it was killed (exit %d)" % run.returncode)
os.kill(run.pid, signal.SIGKILL)
run.wait()
print("killed: signal %d" % -run.returncode)

c = sqlite3.connect(db)
print("integrity:", c.execute("PRAGMA integrity_check").fetchone()[0])
bad = c.execute("SELECT COUNT(*) FROM variants WHERE status = '' OR "
                "(status = 'ok' AND NOT seconds > 0)").fetchone()[0]
rows = c.execute("SELECT COUNT(*) FROM variants").fetchone()[0]
print("rows: %s" % ("at least 6" if rows >= 6 else rows))
print("incomplete rows: %d" % bad)
c.close()

resumed = subprocess.run(command, capture_output=True, text=True, check=True)
m = re.search(r"anneal, (\d+) evaluations \(\d+ failed .*?, (\d+) measured now",
              resumed.stdout)
evaluations, measured = int(m.group(1)), int(m.group(2))
print("resumed: %d evaluations" % evaluations)
# Every candidate recorded before the kill was reused.
print("measured again at most: %s" % (measured <= evaluations - rows + 1))
