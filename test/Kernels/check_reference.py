#!/usr/bin/env python3
"""Checks the kernel suite (kernels/*.pd) against its numpy references.

``--set unseen`` checks the unseen set instead (kernels/unseen/*.pd, the
kernels never used to tune the heuristics); everything below applies to it
the same way, with kernels/unseen/ as the folder of .pd files.

Reference mode (default): for each kernel (all, or the ones named), emit its
small version (``suite.py emit NAME --small``) to a temporary .pd, run

    pd-run --interpret --seed 7 --dump-dir DIR file.pd

load ``DIR/<buffer>.npy`` for every ``in`` and ``out`` buffer (float64, logical
shape), compute the float64 reference from the dumped inputs and compare:
an output passes iff max|out - ref| <= tol * max(max|ref|, 1e-30), tol = 1e-6.
Prints ``PASS name max_rel_err=...`` or ``FAIL name ...`` per kernel and exits
nonzero when any kernel fails.

Canonical mode (``--check-canonical``): for every kernels/*.pd, checks that
``pd-translate --import-pd F | pd-translate --export-pd`` reproduces the file
byte for byte, that ``suite.py emit NAME`` (full shape) equals the file, and
that the small version round-trips too. Prints ``PASS canonical name`` or
``FAIL canonical name: ...`` per file.

Tools: ``--pd-run`` (or env PD_RUN), ``--pd-translate`` (or env PD_TRANSLATE;
default: beside pd-run). ``--kernels`` is the kernels/ folder (default: the
one of this checkout).
"""

import argparse
import difflib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_KERNELS = os.path.normpath(os.path.join(HERE, "..", "..", "kernels"))


def load_suite(kernels_dir):
    sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
    path = os.path.join(kernels_dir, "suite.py")
    spec = importlib.util.spec_from_file_location("pd_kernel_suite", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tail(text, lines=15):
    return "\n".join(text.strip().splitlines()[-lines:])


def check_reference(suite, name, pd_run, work, seed, tol, timeout,
                    reference_from=None, kernel_set="suite"):
    """Returns (ok, message) for one kernel. ``reference_from`` names another
    kernel whose reference to compare with (to test this checker)."""
    kernel = suite.kernel(name, small=True, kernel_set=kernel_set)
    kdir = os.path.join(work, name)
    dump = os.path.join(kdir, "dump")
    os.makedirs(dump, exist_ok=True)
    pd_file = os.path.join(kdir, name + ".pd")
    with open(pd_file, "w", newline="\n") as f:
        f.write(kernel.text())
    cmd = [pd_run, "--interpret", "--seed", str(seed), "--dump-dir", dump,
           pd_file]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "pd-run timed out after %ss: %s" % (timeout, " ".join(cmd))
    if proc.returncode != 0:
        return False, ("pd-run exited with %d: %s\n%s"
                       % (proc.returncode, " ".join(cmd), tail(proc.stdout)))

    def load(bname, dims):
        path = os.path.join(dump, bname + ".npy")
        if not os.path.exists(path):
            raise RuntimeError("pd-run wrote no %s" % path)
        arr = np.load(path)
        if tuple(arr.shape) != tuple(dims):
            raise RuntimeError("%s has shape %s, expected %s"
                               % (path, tuple(arr.shape), tuple(dims)))
        return arr.astype(np.float64)

    try:
        inputs = {b: load(b, d) for b, d in kernel.roles("in")}
        outputs = {b: load(b, d) for b, d in kernel.roles("out")}
    except RuntimeError as err:
        return False, str(err)
    for b, arr in inputs.items():
        if not np.all(np.isfinite(arr)) or arr.min() < -1 or arr.max() >= 1:
            return False, "input %s is not uniform in [-1, 1)" % b
    if reference_from:
        ref = suite.reference(reference_from, inputs, small=True,
                              kernel_set=kernel_set)
    else:
        ref = suite.reference(name, inputs, small=True, kernel_set=kernel_set)

    ok, parts = True, []
    for b, out in outputs.items():
        expect = ref[b]
        scale = max(float(np.max(np.abs(expect))), 1e-30)
        diff = np.abs(out - expect)
        diff[~np.isfinite(diff)] = np.inf
        err = float(np.max(diff))
        rel = err / scale
        label = "max_rel_err" if len(outputs) == 1 else b + ".max_rel_err"
        parts.append("%s=%.3g" % (label, rel))
        if not err <= tol * scale:
            ok = False
            worst = np.unravel_index(int(np.argmax(diff)), out.shape)
            parts.append("(%s%s: got %r, expected %r)"
                         % (b, list(map(int, worst)), float(out[worst]),
                            float(expect[worst])))
    return ok, " ".join(parts)


def run_translate(pd_translate, args, data, timeout):
    proc = subprocess.run([pd_translate] + args, input=data,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError("%s %s exited with %d:\n%s"
                           % (pd_translate, " ".join(args), proc.returncode,
                              tail(proc.stderr.decode(errors="replace"))))
    return proc.stdout


def round_trip(pd_translate, path, timeout):
    """``pd-translate --import-pd PATH | pd-translate --export-pd``"""
    mlir = run_translate(pd_translate, ["--import-pd", path], None, timeout)
    return run_translate(pd_translate, ["--export-pd"], mlir, timeout)


def first_diff(expected, got, label):
    diff = difflib.unified_diff(
        expected.decode(errors="replace").splitlines(True),
        got.decode(errors="replace").splitlines(True),
        label, "round trip", n=1)
    return tail("".join(diff), 12)


def check_canonical(suite, kernels_dir, pd_translate, only, work, timeout,
                    kernel_set="suite"):
    files = sorted(f for f in (os.listdir(kernels_dir)
                               if os.path.isdir(kernels_dir) else [])
                   if f.endswith(".pd"))
    failures = 0
    names = set(suite.names(kernel_set))
    write = ("suite.py write" if kernel_set == "suite"
             else "suite.py write --set %s" % kernel_set)
    for stem in sorted(set(f[:-3] for f in files) | names):
        if only and stem not in only:
            continue
        path = os.path.join(kernels_dir, stem + ".pd")
        problems = []
        if stem not in names:
            problems.append("%s is not a%s kernel"
                            % (path, " suite" if kernel_set == "suite"
                               else "n %s" % kernel_set))
        if not os.path.exists(path):
            problems.append("%s is missing (run %s)" % (path, write))
        try:
            if os.path.exists(path):
                with open(path, "rb") as f:
                    data = f.read()
                got = round_trip(pd_translate, path, timeout)
                if got != data:
                    problems.append("round trip differs:\n"
                                    + first_diff(data, got, path))
                if stem in names:
                    emitted = suite.emit(
                        stem, kernel_set=kernel_set).encode()
                    if emitted != data:
                        problems.append("suite.py emit %s differs:\n%s"
                                        % (stem, first_diff(data, emitted,
                                                            path)))
            if stem in names:
                small = suite.emit(stem, small=True,
                                   kernel_set=kernel_set).encode()
                small_path = os.path.join(work, stem + ".small.pd")
                with open(small_path, "wb") as f:
                    f.write(small)
                got = round_trip(pd_translate, small_path, timeout)
                if got != small:
                    problems.append("small version round trip differs:\n"
                                    + first_diff(small, got, "--small"))
        except (RuntimeError, subprocess.TimeoutExpired) as err:
            problems.append(str(err))
        if problems:
            failures += 1
            print("FAIL canonical %s: %s" % (stem, "\n".join(problems)))
        else:
            print("PASS canonical %s" % stem)
    return failures


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="kernels to check (default: all)")
    ap.add_argument("--pd-run", default=os.environ.get("PD_RUN"))
    ap.add_argument("--pd-translate", default=os.environ.get("PD_TRANSLATE"))
    ap.add_argument("--kernels", default=DEFAULT_KERNELS,
                    help="the kernels/ folder holding suite.py and the .pd files")
    ap.add_argument("--set", dest="kernel_set", default="suite",
                    choices=["suite", "unseen"],
                    help="the kernel set: suite (kernels/*.pd, the default) "
                         "or unseen (kernels/unseen/*.pd)")
    ap.add_argument("--check-canonical", action="store_true",
                    help="check the .pd files are canonical instead")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--reference-from", metavar="NAME",
                    help="compare with kernel NAME's reference instead (a "
                         "self-test of this checker: it must then fail)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary folder and print its path")
    args = ap.parse_args(argv)

    suite = load_suite(args.kernels)
    kset = args.kernel_set
    known = suite.names(kset)
    for n in args.names + ([args.reference_from] if args.reference_from
                           else []):
        if n not in known:
            ap.error("unknown kernel '%s' (known: %s)"
                     % (n, ", ".join(known)))
    # The .pd files: kernels/ for the suite, kernels/unseen/ for the unseen set.
    pd_dir = (args.kernels if kset == "suite"
              else os.path.join(args.kernels, kset))

    if args.check_canonical:
        tool = args.pd_translate
        if not tool and args.pd_run:
            tool = os.path.join(os.path.dirname(args.pd_run), "pd-translate")
        if not tool:
            ap.error("--check-canonical needs --pd-translate or PD_TRANSLATE")
    elif not args.pd_run:
        ap.error("needs --pd-run or PD_RUN")

    work = tempfile.mkdtemp(prefix="pd-kernels-")
    try:
        if args.check_canonical:
            failures = check_canonical(suite, pd_dir, tool,
                                       set(args.names), work, args.timeout,
                                       kset)
        else:
            failures = 0
            for name in args.names or known:
                try:
                    ok, msg = check_reference(suite, name, args.pd_run, work,
                                              args.seed, args.tol,
                                              args.timeout,
                                              args.reference_from, kset)
                except Exception as err:  # report it, then check the others
                    ok, msg = False, "%s: %s" % (type(err).__name__, err)
                print("%s %s %s" % ("PASS" if ok else "FAIL", name, msg))
                sys.stdout.flush()
                failures += 0 if ok else 1
    finally:
        if args.keep:
            print("kept %s" % work, file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
