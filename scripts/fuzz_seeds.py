#!/usr/bin/env python3
"""Collects the seed corpora of the libFuzzer targets (tools/fuzzers).

Writes one directory per target under OUT, one file per seed (named by the
SHA-1 of its content, so the same seed is written once):

  textform  kernels/*.pd, docs/tutorial/*.pd, every test/**/*.pd and every
            `.pd` chunk of a split-file test (`#--- name.pd`);
  mlir      every test/**/*.mlir, split at `// -----` as -split-input-file
            does, every `.mlir` chunk of a split-file test and, with
            --tools-dir, the MLIR of every kernel (pd-translate --import-pd);
  move      every move of bench/moves/*.moves and docs/tutorial/*.moves and
            every move of a `--pd-apply=` in the tests;
  apply     each of those move lists joined by commas (the value of
            pd-opt --pd-apply), and each single move;

and adds the committed seeds of tools/fuzzers/seeds/<target>/ (inputs that
once found bugs, kept as regressions). Prints one line per target with the
number of seeds. Standard library only. Example:

  fuzz_seeds.py --src . --tools-dir build-asan/bin --out build-asan/fuzz/seeds
"""

import argparse
import hashlib
import os
import re
import subprocess
import sys

TARGETS = ("textform", "mlir", "move", "apply")

# `#--- name` or `//--- name`: the start of a split-file chunk.
SPLIT_FILE_MARKER = re.compile(r"^(?:#|//)--- (\S+)\s*$")
# The value of --pd-apply (shorthand or moves=...), up to a blank or quote.
PD_APPLY = re.compile(r"--pd-apply[= ](?:\"?moves=)?([^\s\"'|{}]+)")
PD_APPLY_PIPELINE = re.compile(r"pd-apply\{moves=([^}\s\"']+)")


def read_text(path):
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        return f.read()


def split_file_chunks(text):
    """Yields (name, content) of every split-file chunk of a test."""
    name, lines = None, []
    for line in text.splitlines(keepends=True):
        match = SPLIT_FILE_MARKER.match(line)
        if match:
            if name is not None:
                yield name, "".join(lines)
            name, lines = match.group(1), []
        elif name is not None:
            lines.append(line)
    if name is not None:
        yield name, "".join(lines)


def moves_of_file(text):
    """The moves of a .moves file, in order, without comments."""
    moves = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#"):
            continue
        for marker in (" #", "\t#"):
            if marker in line:
                line = line[: line.index(marker)]
        line = line.strip()
        if line:
            moves.append(line)
    return moves


def files_under(root, suffix):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(suffix):
                yield os.path.join(dirpath, name)


def collect(src, tools_dir):
    seeds = {target: [] for target in TARGETS}
    test_dir = os.path.join(src, "test")

    for directory in ("kernels", os.path.join("docs", "tutorial"), "test"):
        for path in files_under(os.path.join(src, directory), ".pd"):
            seeds["textform"].append(read_text(path))
    for path in files_under(test_dir, ".mlir"):
        seeds["mlir"].extend(read_text(path).split("// -----"))
    move_lists = []
    for path in files_under(test_dir, ""):
        if not path.endswith((".test", ".mlir", ".pd")):
            continue
        text = read_text(path)
        for name, chunk in split_file_chunks(text):
            if name.endswith(".pd"):
                seeds["textform"].append(chunk)
            elif name.endswith(".mlir"):
                seeds["mlir"].append(chunk)
        for pattern in (PD_APPLY, PD_APPLY_PIPELINE):
            for match in pattern.finditer(text):
                if not match.group(1).startswith(("moves-file=", "kernel=")):
                    move_lists.append(match.group(1).split(","))
    for directory in (os.path.join("bench", "moves"),
                      os.path.join("docs", "tutorial")):
        for path in files_under(os.path.join(src, directory), ".moves"):
            move_lists.append(moves_of_file(read_text(path)))

    for moves in move_lists:
        seeds["move"].extend(moves)
        seeds["apply"].append(",".join(moves))
        seeds["apply"].extend(moves)

    if tools_dir:
        translate = os.path.join(tools_dir, "pd-translate")
        for path in files_under(os.path.join(src, "kernels"), ".pd"):
            result = subprocess.run([translate, "--import-pd", path],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                sys.exit("fuzz_seeds.py: %s does not import: %s" %
                         (path, result.stderr))
            seeds["mlir"].append(result.stdout)

    committed = os.path.join(src, "tools", "fuzzers", "seeds")
    for target in TARGETS:
        directory = os.path.join(committed, target)
        if os.path.isdir(directory):
            for name in sorted(os.listdir(directory)):
                with open(os.path.join(directory, name), "rb") as f:
                    seeds[target].append(f.read())
    return seeds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=".", help="the source tree")
    parser.add_argument("--tools-dir",
                        help="where pd-translate is (adds the kernels' MLIR)")
    parser.add_argument("--out", required=True,
                        help="the directory to write <target>/ under")
    args = parser.parse_args()

    seeds = collect(args.src, args.tools_dir)
    for target in TARGETS:
        directory = os.path.join(args.out, target)
        os.makedirs(directory, exist_ok=True)
        written = set()
        for seed in seeds[target]:
            data = seed if isinstance(seed, bytes) else seed.encode()
            if not data.strip():
                continue
            digest = hashlib.sha1(data).hexdigest()
            written.add(digest)
            with open(os.path.join(directory, digest), "wb") as f:
                f.write(data)
        print("seeds %s: %d in %s" % (target, len(written), directory))


if __name__ == "__main__":
    main()
