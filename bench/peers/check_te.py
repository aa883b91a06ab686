#!/usr/bin/env python3
"""Checks pd_to_te's translation against PerfDojo's interpreter.

    .venv/bin/python bench/peers/check_te.py [--set suite|unseen|all]

For every kernel of the set at its small shape: the float64 reference
interpreter (perfdojo.Kernel.interpret) computes the outputs on random
inputs; TVM, in bench/peers/.venv-tvm, builds the translated tensor
expression without tuning and computes them on the same inputs. Prints one
line per kernel with the largest difference relative to the largest output
and exits 1 when one is above 1e-4 or a translation fails, so that
MetaSchedule is known to tune the kernel PerfDojo tunes.
"""

import argparse
import ast
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TVM_PYTHON = os.path.join(HERE, ".venv-tvm", "bin", "python")

TVM_HALF = r'''
import sys, numpy, tvm
sys.path.insert(0, sys.argv[1])
import pd_to_te
kernel = pd_to_te.parse(open(sys.argv[2]).read(), sys.argv[2])
func = tvm.te.create_prim_func(pd_to_te.to_te(kernel, tvm, sys.argv[2]))
lib = tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}),
                  target="llvm")
data = numpy.load(sys.argv[3])
dev = tvm.cpu()
names = [n for n in kernel.order if kernel.buffers[n][0] in ("in", "out")]
arrays = [tvm.runtime.tensor(data[n], dev) if kernel.buffers[n][0] == "in"
          else tvm.runtime.empty(kernel.buffers[n][2], kernel.buffers[n][1], dev)
          for n in names]
lib["main"](*arrays)
numpy.savez(sys.argv[4], **{n: a.numpy() for n, a in zip(names, arrays)
                            if kernel.buffers[n][0] == "out"})
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="all", choices=["suite", "unseen", "all"])
    args = ap.parse_args()
    import numpy
    import perfdojo
    suite_py = os.path.join(ROOT, "kernels", "suite.py")
    sets = ["suite", "unseen"] if args.set == "all" else [args.set]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for kernel_set in sets:
            params = subprocess.run(
                [sys.executable, suite_py, "params", "--set", kernel_set],
                capture_output=True, text=True, check=True).stdout
            for line in params.splitlines():
                name, rest = line.split(None, 1)
                small = ast.literal_eval(rest.split(" small ", 1)[1])
                text = subprocess.run(
                    [sys.executable, suite_py, "emit", name, "--set",
                     kernel_set, "--shape",
                     ",".join("%s=%d" % kv for kv in small.items())],
                    capture_output=True, text=True, check=True).stdout
                path = os.path.join(tmp, name + ".pd")
                open(path, "w").write(text)
                kernel = perfdojo.Kernel.parse(text, path)
                rng = numpy.random.default_rng(0)
                inputs = {b.name: rng.uniform(-1, 1, b.shape).astype(numpy.float32)
                          for b in kernel.inputs}
                expected = kernel.interpret(inputs)
                numpy.savez(os.path.join(tmp, "in.npz"), **inputs)
                out = os.path.join(tmp, "out.npz")
                run = subprocess.run([TVM_PYTHON, "-c", TVM_HALF, HERE, path,
                                      os.path.join(tmp, "in.npz"), out],
                                     capture_output=True, text=True)
                if run.returncode:
                    last = run.stderr.strip().splitlines()[-1:]
                    print("%-26s translation failed: %s" % (name, last))
                    failed += 1
                    continue
                worst = 0.0
                with numpy.load(out) as got:
                    for buf, ref in expected.items():
                        scale = float(numpy.max(numpy.abs(ref))) or 1.0
                        worst = max(worst, float(numpy.max(numpy.abs(
                            got[buf].astype(numpy.float64) - ref))) / scale)
                bad = worst > 1e-4
                failed += bad
                print("%-26s %.1e%s" % (name, worst, "  MISMATCH" if bad else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
