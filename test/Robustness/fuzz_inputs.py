#!/usr/bin/env python3
"""Feeds hostile inputs to the PerfDojo tools and checks that none crashes.

Every input is run through the tools that read its format:

  text form (.pd)  pd-translate --import-pd F
                   pd-run --max-mib 256 --print-text F   (--interpret=false
                                     when the kernel would run too long)
  MLIR (.mlir)     pd-opt F
                   pd-translate --export-pd F
                   pd-run --max-mib 256 --print-text F   (same)
                   pd-opt --pd-interpret=max-mib=256 F   (when it is quick)

Each run must exit with 0, or with 1 and a diagnostic on stderr. A crash is a
negative return code (a signal), an exit code >= 128, or stderr naming an
assertion, a stack dump, a fatal LLVM error or a sanitizer; an exit code other
than 0, 1 or a crash is a bad exit; exit 1 with an empty stderr is a missing
diagnostic; a run that takes longer than --timeout seconds is a timeout.

When a text input imports, its MLIR must export and import back to the same
MLIR, and the exported text must be a fixed point of import + export; when an
MLIR input verifies (pd-opt succeeds), its exported text must import. A
violation is a round-trip failure.

Inputs (all generated from --seed; none is random across runs):

  * every kernels/*.pd, and the MLIR of each, truncated at many byte offsets;
  * random byte flips and insertions of grammar characters, line deletions,
    duplications and swaps, and number replacements on the kernels and on
    their MLIR (--count variants in all);
  * random kernels generated from the grammar (mostly valid, so that they
    reach the round-trip checks and the interpreter);
  * binary garbage, alone and after a valid prefix;
  * huge and degenerate numbers (2^63, 2^64, 10^30, -1, 0, ...) in every
    numeric position of a text-form and of an MLIR kernel;
  * deep nests: 63, 64, 65 and 1000 positions on one line, long bar chains,
    deeply parenthesized indices, MLIR with 200 and 5000 nested scopes (in
    the custom and in the generic form), 5000 nested modules and a deeply
    nested attribute (--stress: 20000 and 300000 deep, and 10^6);
  * very long (1 MB) lines: names, numbers, indices, comments, blanks;
  * empty, blank and NUL-only input;
  * directed cases for the interpreter (division by zero, overflow, casts of
    nan, reads of unwritten elements, reserved words as names, ...) and a
    kernel with 20000 buffers and 20000 operations (verification must not
    be quadratic).

Prints one line per failure (with the input saved under --save-dir when
given) and a summary line:

  summary: inputs=N runs=N crashes=N timeouts=N bad_exits=N no_diagnostic=N roundtrip_failures=N

and exits 1 when any count but inputs and runs is non-zero (0 with
--exit-zero).

Standard library only. Example:

  fuzz_inputs.py --tools-dir build/bin --kernels kernels --count 300 --seed 1
"""

import argparse
import concurrent.futures
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

CRASH_MARKERS = (
    b"Assertion",
    b"Stack dump",
    b"PLEASE submit a bug report",
    b"LLVM ERROR",
    b"UNREACHABLE",
    b"Sanitizer",
    b"terminate called",
    b"Segmentation fault",
)

# Small, valid kernels that run in the interpreter in milliseconds: seeds for
# the mutations, so that mutated kernels reach the interpreter too.
SMALL_KERNELS = {
    "small_softmax": """kernel small_softmax
in  x f32 [4, 8] heap
out y f32 [4, 8] heap
tmp m f32 [4] heap
tmp s f32 [4] heap

4 m[{0}]=-inf
| 8 m[{0}]max=x[{0},{1}]
| s[{0}]=0
| 8 y[{0},{1}]=x[{0},{1}]-m[{0}]
| | y[{0},{1}]=exp(y[{0},{1}])
| | s[{0}]+=y[{0},{1}]
| 8 y[{0},{1}]=y[{0},{1}]/s[{0}]
""",
    "small_mixed": """kernel small_mixed
in  x f32 [8, 16] heap
in  n i32 [8] heap
out y f32 [8, 16] heap
out c i32 [8] heap
out e i8 [4] heap
tmp t f32 [8:1, 16] stack
tmp u f64 [4, 4:2] heap -> a, b

e[0]=-1
4 e[{0}]={0}
| e[{0}]=-e[{0}]
8:p 16 t[{0},{1}]=x[{0},{1}]*2
|   16:v y[{0},{1}]=fma(t[{0},{1}],x[{0},-{1}+15],1e-05)
|   c[{0}]=n[{0}]<3
|   c[{0}]=max(c[{0}],n[{0}])
|   c[{0}]+=7
4 4 a[{0},{1}]=cast({1})
| | b[{0},{1}]=sqrt(a[{0},{1}])
| | b[{0},{1}]=select(a[{0},{1}],b[{0},{1}],nan)

kernel small_gpu
in  x f32 [2, 4, 8] heap
out y f32 [2, 4, 8] heap
tmp sm f32 [4, 8] shared

2:g 4:b 8:w sm[{1},{2}]=x[{0},{1},{2}]
|   |   |   y[{0},{1},{2}]=sm[{1},-{2}+7]*0.5
|   |   8:u y[{0},{1},{2}]min=x[{0},{1},{2}]
""",
}

# Directed inputs: things that once were (or could be) mistakes.
DIRECTED_PD = {
    "int_div_zero": "kernel k\nin  x i32 [4] heap\nout y i32 [4] heap\n\n"
                    "4 y[{0}]=x[{0}]/0\n",
    "int_min_div": "kernel k\nout y i8 [4] heap\n\n4 y[{0}]=-128\n"
                   "| y[{0}]=y[{0}]/-1\n",
    "i64_min_div": "kernel k\nout y i64 [1] heap\n\n"
                   "y[0]=-9223372036854775808\ny[0]=y[0]/-1\n",
    "cast_nan": "kernel k\nout y i32 [4] heap\ntmp t f32 [4] heap\n\n"
                "4 t[{0}]=nan\n| y[{0}]=cast(t[{0}])\n",
    "cast_inf_i64": "kernel k\nout y i64 [4] heap\ntmp t f64 [4] heap\n\n"
                    "4 t[{0}]=inf\n| y[{0}]=cast(t[{0}])\n",
    "read_unwritten": "kernel k\nout y f32 [4] heap\ntmp t f32 [4] heap\n\n"
                      "4 y[{0}]=t[{0}]\n",
    "reduce_unwritten": "kernel k\nout y f32 [4] heap\n\n4 y[{0}]+=1\n",
    "select_int_cond": "kernel k\nin  c i8 [4] heap\nin  x f16 [4] heap\n"
                       "out y f16 [4] heap\n\n4 y[{0}]=select(c[{0}],x[{0}],-inf)\n",
    "bf16_ops": "kernel k\nin  x bf16 [4] heap\nout y bf16 [4] heap\n\n"
                "4 y[{0}]=rsqrt(x[{0}])\n| y[{0}]=sigmoid(y[{0}])\n",
    "iter_huge_value": "kernel k\nout y f32 [1] heap\n\n"
                       "1099511627776 y[0]={0}\n",
    "coeff_int64_min": "kernel k\nout y f32 [4] heap\n\n"
                       "1 y[-{0}*9223372036854775807-{0}]=1\n",
    "coeff_int64_max": "kernel k\nout y f32 [4] heap\n\n"
                       "1 y[{0}*9223372036854775807]=1\n",
    "const_int64_min_index": "kernel k\nout y f32 [4] heap\n\n"
                             "y[-9223372036854775807-1]=1\n",
    "reserved_in": "kernel k\nout in f32 [4] heap\n\nin[0]=1\n",
    "reserved_kernel": "kernel k\nout kernel f32 [4] heap\n\nkernel[0]=1\n",
    "reserved_inf_input": "kernel k\nout y f32 [4] heap\ntmp inf f32 [4] heap\n\n"
                          "inf[0]=1\ny[0]=inf[0]\n",
    "reuse_one_everything": "kernel k\nout y f32 [2] heap\n"
                            "tmp t f32 [1099511627776:1, 1099511627776:1] heap\n\n"
                            "2 t[{0},{0}]=1\n| y[{0}]=t[{0},{0}]\n",
    "storage_2_48": "kernel k\nout y f32 [1] heap\n"
                    "tmp t f32 [1099511627776:256, 1099511627776:256, 4] heap\n\n"
                    "y[0]=1\n",
    "storage_over_2_48": "kernel k\nout y f32 [1] heap\n"
                         "tmp t f32 [1099511627776, 1099511627776] heap\n\ny[0]=1\n",
    "shared_arrays": "kernel k\nout y f32 [4] heap\ntmp t f32 [4] heap -> a, b, c\n\n"
                     "4 a[{0}]=1\n| b[{0}]=a[{0}]+1\n| y[{0}]=c[{0}]\n",
    "many_kernels": "".join("kernel k%d\nout y f32 [1] heap\n\ny[0]=%d\n" % (i, i)
                            for i in range(200)),
    "kernel_only": "kernel k\n",
    "dup_kernel": "kernel k\nout y f32 [1] heap\n\ny[0]=1\n" * 2,
    "neg_zero_nan": "kernel k\nout y f64 [4] heap\n\ny[0]=-0\ny[1]=-nan\n"
                    "y[2]=-inf\ny[3]=4.9406564584124654e-324\n",
    "tiny_underflow": "kernel k\nout y f64 [1] heap\n\ny[0]=1e-999\n",
    "four_grids": "kernel k\nout y f32 [1] heap\n\n1:g 1:g 1:g 1:g y[0]=1\n",
    "gpu_in_parallel": "kernel k\nout y f32 [1] heap\n\n1:p 1:g y[0]=1\n",
}

DIRECTED_MLIR = {
    "quoted_kernel_name": 'perfdojo.kernel @"a b" {\n'
                          "  perfdojo.buffer out y f32 [4] heap\n"
                          "  perfdojo.compute y[0] = 1.0\n}\n",
    "dotted_kernel_name": "perfdojo.kernel @a.b {\n"
                          "  perfdojo.buffer out y f32 [4] heap\n"
                          "  perfdojo.compute y[0] = 1.0\n}\n",
    "empty_scope": "perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [4] heap\n"
                   "  perfdojo.scope 4 {\n  }\n  perfdojo.compute y[0] = 1.0\n}\n",
    "generic_empty_region": 'perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [4] heap\n'
                            '  "perfdojo.scope"() <{size = 4 : i64, mapping = '
                            '#perfdojo<mapping seq>}> ({}) : () -> ()\n'
                            "  perfdojo.compute y[0] = 1.0\n}\n",
    "generic_two_blocks": 'perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [4] heap\n'
                          '  "perfdojo.scope"() <{size = 4 : i64, mapping = '
                          '#perfdojo<mapping seq>}> ({\n'
                          "    perfdojo.compute y[0] = 1.0\n  ^bb1:\n"
                          "    perfdojo.compute y[1] = 1.0\n  }) : () -> ()\n}\n",
    "generic_block_arg": 'perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [4] heap\n'
                         '  "perfdojo.scope"() <{size = 4 : i64, mapping = '
                         '#perfdojo<mapping seq>}> ({\n  ^bb0(%a: i32):\n'
                         "    perfdojo.compute y[0] = 1.0\n  }) : () -> ()\n}\n",
    "scope_size_zero": 'perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [4] heap\n'
                       '  "perfdojo.scope"() <{size = 0 : i64, mapping = '
                       '#perfdojo<mapping seq>}> ({\n'
                       "    perfdojo.compute y[0] = 1.0\n  }) : () -> ()\n}\n",
    "scope_size_negative": "perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [4] heap\n"
                           "  perfdojo.scope -5 {\n    perfdojo.compute y[0] = 1.0\n  }\n}\n",
    "generic_compute_bad_attrs": 'perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [4] heap\n'
                                 '  "perfdojo.compute"() <{inputs = [1 : i32, "s", unit], '
                                 "kind = #perfdojo<kind fma>, out = #perfdojo.access<y[0]>, "
                                 "reduction = #perfdojo<reduction none>}> : () -> ()\n}\n",
    "generic_compute_missing_attrs": 'perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [4] heap\n'
                                     '  "perfdojo.compute"() : () -> ()\n}\n',
    "generic_buffer_bad_attrs": 'perfdojo.kernel @k {\n  "perfdojo.buffer"() <{arrays = [1], '
                                "element_type = i7, location = #perfdojo<location heap>, "
                                "reuse = array<i64: 0, 0>, role = #perfdojo<role out>, "
                                'shape = array<i64>, sym_name = ""}> : () -> ()\n}\n',
    "generic_buffer_reuse_mismatch": 'perfdojo.kernel @k {\n  "perfdojo.buffer"() <{arrays = ["y"], '
                                     "element_type = f32, location = #perfdojo<location heap>, "
                                     "reuse = array<i64>, role = #perfdojo<role out>, "
                                     'shape = array<i64: 4>, sym_name = "y"}> : () -> ()\n'
                                     "  perfdojo.compute y[0] = 1.0\n}\n",
    "access_attr_nonlinear": 'perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [4] heap\n'
                             '  perfdojo.scope 4 {\n    "perfdojo.compute"() <{inputs = [1.0], '
                             "kind = #perfdojo<kind copy>, "
                             'out = #perfdojo.access<"y", affine_map<(d0) -> (d0 mod 2)>>, '
                             "reduction = #perfdojo<reduction none>}> : () -> ()\n  }\n}\n",
    "iter_attr_huge": 'perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [4] heap\n'
                      '  "perfdojo.compute"() <{inputs = [#perfdojo.iter<4294967295>], '
                      "kind = #perfdojo<kind copy>, out = #perfdojo.access<y[0]>, "
                      "reduction = #perfdojo<reduction none>}> : () -> ()\n}\n",
    "nested_modules": "module { module { perfdojo.kernel @k {\n"
                      "  perfdojo.buffer out y f32 [4] heap\n"
                      "  perfdojo.compute y[0] = 1.0\n}}}\n",
    "no_kernel": "module {}\n",
    "kernel_in_scope": "perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [4] heap\n"
                       "  perfdojo.scope 1 {\n    perfdojo.kernel @j {\n    }\n  }\n"
                       "  perfdojo.compute y[0] = 1.0\n}\n",
    "buffer_outside_kernel": "perfdojo.buffer out y f32 [4] heap\n",
    "compute_outside_kernel": "perfdojo.compute y[0] = 1.0\n",
    "neg_constant": "perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [4] heap\n"
                    "  perfdojo.compute y[0] = neg(1.0)\n}\n",
    "coeff_int64_min_asm": "perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [4] heap\n"
                           "  perfdojo.scope 1 {\n"
                           "    perfdojo.compute y[{0} * -9223372036854775808] = 1.0\n"
                           "  }\n}\n",
    "reserved_array_names": "perfdojo.kernel @k {\n  perfdojo.buffer out in f32 [4] heap\n"
                            "  perfdojo.compute in[0] = 1.0\n}\n",
}

NUMBERS = ["9223372036854775808", "18446744073709551616",
           "1000000000000000000000000000000", "-1", "0", "9223372036854775807",
           "1099511627777", "-9223372036854775808", "4294967296"]

GRAMMAR_CHARS = b"|:{}[]()-+*/=<>!,.0123456789eE #\t\nabgpuvwxyz_"


class Runner:
    def __init__(self, args):
        self.tools = {name: os.path.abspath(os.path.join(args.tools_dir, name))
                      for name in ("pd-translate", "pd-opt", "pd-run")}
        for path in self.tools.values():
            if not os.access(path, os.X_OK):
                sys.exit("fuzz_inputs.py: no executable %s" % path)
        self.timeout = args.timeout
        self.max_interp_ops = args.max_interp_ops
        self.work = args.work
        self.save_dir = args.save_dir

    def run(self, argv, path):
        """Runs one tool; returns (rc, stdout, stderr, problem or None).
        Output goes to files, so that a tool printing gigabytes does not
        exhaust memory: stdout is read when under 64 MiB (None otherwise),
        stderr is cut to its first and last 64 KiB."""
        cmd = [self.tools[argv[0]]] + argv[1:] + [path]
        out_path, err_path = path + ".stdout", path + ".stderr"
        try:
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=err, timeout=self.timeout)
            rc = r.returncode
        except subprocess.TimeoutExpired:
            rc = None
        except OSError as e:
            sys.exit("fuzz_inputs.py: cannot run %s: %s" % (cmd[0], e))
        stdout = None  # too large to check
        if os.path.getsize(out_path) <= 64 << 20:
            with open(out_path, "rb") as f:
                stdout = f.read()
        size = os.path.getsize(err_path)
        with open(err_path, "rb") as f:
            if size <= 1 << 20:
                stderr = f.read()
            else:
                stderr = f.read(64 << 10)
                f.seek(size - (64 << 10))
                stderr += (b"\n[... %d bytes of diagnostics ...]\n" % size +
                           f.read())
        os.remove(out_path)
        os.remove(err_path)
        if rc is None:
            return None, None, stderr, "timeout"
        problem = None
        if rc < 0 or rc >= 128 or any(m in stderr for m in CRASH_MARKERS):
            problem = "crash"
        elif rc not in (0, 1):
            problem = "bad_exit"
        elif rc == 1 and not stderr.strip():
            problem = "no_diagnostic"
        return rc, stdout, stderr, problem


def estimate_ops(mlir):
    """Operations the interpreter would execute, from printed MLIR."""
    total, stack = 0, []
    for line in mlir.decode("latin-1").splitlines():
        s = line.strip()
        m = re.match(r"perfdojo\.scope (\d+)", s)
        if m:
            stack.append(int(m.group(1)))
        elif s.endswith("{"):
            stack.append(1)
        elif s.startswith("perfdojo.compute"):
            n = 1
            for e in stack:
                n *= e
            total += n
        if s == "}" and stack:
            stack.pop()
    return total


def check_input(runner, index, name, kind, data):
    """Runs every tool on one input; returns (runs, [failure, ...])."""
    path = os.path.join(runner.work, "in%05d.%s" % (index, kind))
    with open(path, "wb") as f:
        f.write(data)
    failures, runs = [], 0

    def run(argv, p=path):
        nonlocal runs
        runs += 1
        rc, out, err, problem = runner.run(argv, p)
        if problem:
            failures.append((problem, " ".join(argv) + " " + os.path.basename(p),
                             err))
        return rc, out, err

    def runpd(mlir, p):
        # pd-run interprets only what finishes quickly; it always parses and
        # prints the text form back.
        interp = estimate_ops(mlir) <= runner.max_interp_ops if mlir else False
        run(["pd-run", "--max-mib", "256", "--print-text"] +
            ([] if interp else ["--interpret=false"]), p)
        return interp

    if kind == "pd":
        rc, mlir, _ = run(["pd-translate", "--import-pd"])
        runpd(mlir if rc == 0 else None, path)
        if rc == 0 and mlir is not None:
            check_roundtrip_from_text(runner, path, mlir, run, failures)
    else:
        rc, canon, _ = run(["pd-opt"])
        erc, text, eerr = run(["pd-translate", "--export-pd"])
        if runpd(canon if rc == 0 else None, path):
            run(["pd-opt", "--pd-interpret=max-mib=256"])
        if rc == 0 and erc == 0 and text is not None:
            tpath = path + ".pd"
            with open(tpath, "wb") as f:
                f.write(text)
            irc, _, ierr = run(["pd-translate", "--import-pd"], tpath)
            if irc != 0:
                failures.append(("roundtrip_failure",
                                 "pd-opt accepts, export-pd prints text that "
                                 "import-pd rejects", ierr))
    if failures and runner.save_dir:
        os.makedirs(runner.save_dir, exist_ok=True)
        shutil.copy(path, os.path.join(runner.save_dir,
                                       "%05d_%s.%s" % (index, name, kind)))
    for p in (path, path + ".pd", path + ".mlir", path + ".2.mlir"):
        if os.path.exists(p):
            os.remove(p)
    return runs, failures


def check_roundtrip_from_text(runner, path, mlir, run, failures):
    """MLIR -> text -> MLIR is the identity, and the text is canonical."""
    mpath = path + ".mlir"
    with open(mpath, "wb") as f:
        f.write(mlir)
    rc, text, err = run(["pd-translate", "--export-pd"], mpath)
    if rc != 0 or text is None:
        failures.append(("roundtrip_failure",
                         "import-pd output does not export", err))
        return
    tpath = path + ".pd"
    with open(tpath, "wb") as f:
        f.write(text)
    rc, mlir2, err = run(["pd-translate", "--import-pd"], tpath)
    if rc != 0:
        failures.append(("roundtrip_failure",
                         "exported text does not import", err))
        return
    if mlir2 != mlir:
        failures.append(("roundtrip_failure",
                         "MLIR -> text -> MLIR changes the MLIR", b""))
        return
    m2path = path + ".2.mlir"
    with open(m2path, "wb") as f:
        f.write(mlir2)
    rc, text2, err = run(["pd-translate", "--export-pd"], m2path)
    if rc != 0 or text2 != text:
        failures.append(("roundtrip_failure",
                         "canonical text is not a fixed point", err))


# ---------------------------------------------------------------------------
# Input generators
# ---------------------------------------------------------------------------


def truncations(data, rng, count):
    """`count` cut points: the ends, every line boundary (up to a limit) and
    random offsets."""
    n = len(data)
    cuts = {0, 1, n - 1} if n > 1 else {0}
    for m in re.finditer(rb"\n", data):
        cuts.add(m.start())
        cuts.add(m.start() + 1)
    cuts = sorted(c for c in cuts if 0 <= c < n)
    if len(cuts) > count // 2:
        cuts = sorted(rng.sample(cuts, count // 2))
    while len(cuts) < count and len(cuts) < n:
        cuts.append(rng.randrange(n))
    return sorted(set(cuts))


def mutate(data, rng):
    """One to four random edits of bytes, lines or numbers."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(8)
        if not data:
            data = bytearray(rng.choice(GRAMMAR_CHARS) for _ in range(4))
        if op == 0:  # flip a byte to anything
            i = rng.randrange(len(data))
            data[i] = rng.randrange(256)
        elif op == 1:  # replace a byte by a grammar character
            i = rng.randrange(len(data))
            data[i] = rng.choice(GRAMMAR_CHARS)
        elif op == 2:  # insert grammar characters
            i = rng.randrange(len(data) + 1)
            data[i:i] = bytes(rng.choice(GRAMMAR_CHARS)
                              for _ in range(rng.randint(1, 3)))
        elif op == 3:  # delete a byte range
            i = rng.randrange(len(data))
            del data[i:i + rng.randint(1, 8)]
        else:  # line edits and number replacement
            lines = bytes(data).split(b"\n")
            j = rng.randrange(len(lines))
            if op == 4:
                del lines[j]
            elif op == 5:
                lines.insert(j, lines[rng.randrange(len(lines))])
            elif op == 6:
                k = rng.randrange(len(lines))
                lines[j], lines[k] = lines[k], lines[j]
            else:
                nums = list(re.finditer(rb"\d+", lines[j]))
                if nums:
                    m = rng.choice(nums)
                    new = rng.choice(NUMBERS + ["1", "2", "63", "64", "65",
                                                "1099511627776"]).encode()
                    lines[j] = lines[j][:m.start()] + new + lines[j][m.end():]
            data = bytearray(b"\n".join(lines))
    return bytes(data)


DTYPES = ["f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64"]
FUNCS = {"max": 2, "min": 2, "abs": 1, "exp": 1, "log": 1, "sqrt": 1,
         "rsqrt": 1, "tanh": 1, "sigmoid": 1, "erf": 1, "floor": 1,
         "ceil": 1, "round": 1, "sin": 1, "cos": 1, "tan": 1, "asin": 1,
         "acos": 1, "atan": 1, "sinh": 1, "cosh": 1, "asinh": 1, "acosh": 1,
         "atanh": 1, "sign": 1, "pow": 2, "fmod": 2, "mod": 2, "cast": 1,
         "fma": 3, "select": 3}
INFIX = ["+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!="]
CONSTANTS = ["0", "1", "-1", "0.5", "1e-05", "-1.5", "2.5e+03", "inf", "-inf",
             "nan", "3", "127", "-128"]


def random_kernel(rng, name):
    """A random kernel in the text form, most of the time valid: random
    buffers, nests (with bars), mappings that follow the nesting rules,
    in-bounds indices, primitives and reductions; now and then a rule is
    broken on purpose. The spacing is random (not canonical), so that
    normalization is exercised too."""
    def sometimes(p=0.005):
        return rng.random() < p

    buffers = []  # (role, name, dtype, shape, dims, arrays, location)
    for i in range(rng.randint(1, 5)):
        role = "out" if i == 0 else rng.choice(["in", "out", "tmp", "tmp"])
        shape = [rng.randint(1, 6) for _ in range(rng.randint(1, 3))]
        dims = []
        for n in shape:
            if role == "tmp" and n > 1 and rng.random() < 0.3:
                dims.append("%d:%d" % (n, rng.randint(1, n - 1)))
            else:
                dims.append(str(n))
        arrays = ["b%d" % i]
        if rng.random() < 0.2:
            arrays += ["b%d_%d" % (i, j) for j in range(rng.randint(1, 2))]
        loc = "heap" if role != "tmp" else rng.choice(
            ["heap", "stack", "reg", "shared"])
        buffers.append((role, "b%d" % i, rng.choice(DTYPES), shape, dims,
                        arrays, loc))
    lines = ["kernel " + name]
    for role, bname, dtype, shape, dims, arrays, loc in buffers:
        line = "%s %s %s [%s] %s" % (role, bname, dtype, ", ".join(dims), loc)
        if len(arrays) > 1 or rng.random() < 0.1:
            line += " -> " + ", ".join(arrays)
        lines.append(line)
    lines.append("")
    arrays = [(a, b) for b in buffers for a in b[5]]
    writable = [(a, b) for a, b in arrays if b[0] != "in"]

    def index(extents, n):
        """A linear index that stays in [0, n) for the given extents."""
        usable = [d for d, e in enumerate(extents) if e <= n]
        r = rng.random()
        if sometimes(0.001) and extents:
            return "{%d}*%d" % (rng.randrange(len(extents)), rng.randint(1, 3))
        if usable and r < 0.15 and len(usable) > 1:
            d, e = rng.sample(usable, 2)
            if extents[d] + extents[e] - 1 <= n:
                return "{%d}+{%d}" % (d, e)
        if usable and r < 0.75:
            d = rng.choice(usable)
            slack = n - extents[d]
            if rng.random() < 0.3:
                return "-{%d}+%d" % (d, n - 1 - rng.randint(0, slack))
            if extents[d] == 1 or rng.random() < 0.8:
                off = rng.randint(0, slack)
                return "{%d}" % d + ("+%d" % off if off else "")
            k = rng.randint(1, max(1, (n - 1) // (extents[d] - 1)))
            return "{%d}*%d" % (d, k) if k > 1 else "{%d}" % d
        return str(rng.randrange(n))

    def access(name, buf, extents):
        return "%s[%s]" % (name, ",".join(index(extents, n) for n in buf[3]))

    def operand(extents, dtype, any_type=False):
        r = rng.random()
        if r < 0.65:
            same = [(a, b) for a, b in arrays if b[2] == dtype]
            pool = arrays if any_type or not same or sometimes() else same
            a, b = rng.choice(pool)
            return access(a, b, extents)
        if r < 0.8 and extents:
            return "{%d}" % rng.randrange(len(extents))
        if dtype.startswith("i") and not sometimes():
            return rng.choice(["0", "1", "-1", "3", "127", "-128"])
        return rng.choice(CONSTANTS)

    chain = []  # (extent, mapping) of the scopes the last line reached
    written = set()
    for b in buffers:  # usually initialize everything, so that the
        # interpreter runs the rest instead of stopping at the first read
        if b[0] != "in" and rng.random() < 0.8:
            sizes = " ".join(str(n) for n in b[3])
            lines.append("%s %s[%s]=%s" % (
                sizes, b[1], ",".join("{%d}" % d for d in range(len(b[3]))),
                rng.choice(["1", "2", "0.5"] if b[2][0] == "f" else ["1", "2"])))
            written.add(b[1])
    for _ in range(rng.randint(1, 14)):
        bars = rng.randint(0, len(chain))
        scopes = chain[:bars]
        positions = ["|" + " " * rng.randint(0, 3) for _ in range(bars)]
        if not any(m == ":v" for _, m in scopes) or sometimes():
            for k in range(rng.choice([0, 0, 1, 1, 2, 3])):
                if len(scopes) >= 64:
                    break
                outer = [m for _, m in scopes]
                gpu = any(m in (":g", ":b", ":w") for m in outer)
                legal = ["", "", "", ":u"]
                if not gpu:
                    legal.append(":p")
                if ":p" not in outer and outer.count(":g") < 3:
                    legal.append(":g")
                if ":g" in outer and ":w" not in outer and outer.count(":b") < 3:
                    legal.append(":b")
                if ":b" in outer:
                    legal.append(":w")
                m = rng.choice(legal)
                if sometimes():
                    m = rng.choice([":u", ":p", ":v", ":g", ":b", ":w"])
                size = rng.choice([1, 2, 3, 4, 5, 6, 8])
                positions.append("%d%s" % (size, m))
                scopes.append((size, m))
                if rng.random() < 0.2:  # a vector scope holds operations only
                    positions[-1] = "%d:v" % size
                    scopes[-1] = (size, ":v")
                    break
        chain = scopes
        extents = [e for e, _ in scopes]
        out, obuf = rng.choice(writable)
        dtype = obuf[2]
        assign = rng.choice(["=", "=", "=", "+=", "*=", "max=", "min="])
        r = rng.random()
        if r < 0.3:
            expr = operand(extents, dtype)
        elif r < 0.4:
            a = operand(extents, dtype)
            expr = a if a[0] in "-0123456789" or a in ("inf", "nan") else "-" + a
        elif r < 0.7:
            expr = (operand(extents, dtype) + rng.choice(INFIX) +
                    operand(extents, dtype))
        else:
            funcs = sorted(FUNCS)
            if dtype.startswith("i") and not sometimes():
                funcs = ["abs", "cast", "fma", "fmod", "max", "min", "mod",
                         "select", "sign"]
            f = rng.choice(funcs)
            expr = "%s(%s)" % (f, ",".join(
                operand(extents, dtype, any_type=(f == "cast" or
                                                  (f == "select" and i == 0)))
                for i in range(FUNCS[f])))
        stmt = access(out, obuf, extents) + assign + expr
        sep = rng.choice([" ", " ", "  ", "\t"])
        lines.append(sep.join(positions + [stmt]))
        written.add(obuf[1])
    for b in buffers:  # every output must be written
        if b[0] == "out" and b[1] not in written and not sometimes():
            lines.append("%s[%s]=0" % (b[1], ",".join("0" for _ in b[3])))
    return "\n".join(lines) + "\n"


def numeric_positions(text):
    """Every maximal digit run, as (start, end)."""
    return [(m.start(), m.end()) for m in re.finditer(r"\d+", text)]


NUMERIC_TEMPLATE_PD = """kernel k
in  x f32 [4, 8] heap
out y f32 [4, 8] heap
tmp t f32 [4:2, 8] stack -> t, u

4:p 8 y[{0},{1}]=x[{0},{1}*1+0]+1.5e-05
|   8:v t[{0},-{1}+7]=max(x[{0},{1}],2)
|   |   u[{0},{1}]=select(t[{0},{1}],{1},0.25)
|   y[(1+{0})*0-2+2+{0},3]=1
"""

NUMERIC_TEMPLATE_MLIR = """perfdojo.kernel @k {
  perfdojo.buffer in x f32 [4, 8] heap
  perfdojo.buffer out y f32 [4, 8] heap
  perfdojo.buffer tmp t f32 [4:2, 8] stack -> t, u
  perfdojo.scope 4 parallel {
    perfdojo.scope 8 {
      perfdojo.compute y[{0}, {1}] = add(x[{0}, {1} * 1 + 0], 1.5e-05)
    }
    perfdojo.scope 8 vector {
      perfdojo.compute t[{0}, -{1} + 7] = max(x[{0}, {1}], 2.0)
      perfdojo.compute u[{0}, {1}] = select(t[{0}, {1}], {1}, 0.25)
    }
    perfdojo.compute y[(1 + {0}) * 0 - 2 + 2 + {0}, 3] = 1.0
  }
}
"""


def gen_inputs(args, rng):
    """Yields (name, kind, bytes)."""
    kernels = sorted(f for f in os.listdir(args.kernels) if f.endswith(".pd"))
    texts = {}
    for f in kernels:
        with open(os.path.join(args.kernels, f), "rb") as fh:
            texts[f[:-3]] = fh.read()
    for name, text in SMALL_KERNELS.items():
        texts[name] = text.encode()
    # The MLIR of every kernel, from the importer itself.
    mlirs = {}
    for name, text in texts.items():
        r = subprocess.run([os.path.join(args.tools_dir, "pd-translate"),
                            "--import-pd", "-"], input=text,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=args.timeout)
        if r.returncode == 0:
            mlirs[name] = r.stdout
        else:
            print("note: %s does not import: %s" % (name, r.stderr.decode(
                "latin-1").strip()))

    # 1. Truncations.
    for name in sorted(texts):
        for cut in truncations(texts[name], rng, args.truncations):
            yield "trunc_%s_%d" % (name, cut), "pd", texts[name][:cut]
    for name in sorted(mlirs):
        for cut in truncations(mlirs[name], rng, max(2, args.truncations // 2)):
            yield "trunc_%s_%d" % (name, cut), "mlir", mlirs[name][:cut]

    # 2. Random mutations: 2/3 text, 1/3 MLIR.
    tnames, mnames = sorted(texts), sorted(mlirs)
    for i in range(args.count):
        if i % 3 != 2:
            name = rng.choice(tnames)
            yield "mut%d_%s" % (i, name), "pd", mutate(texts[name], rng)
        else:
            name = rng.choice(mnames)
            yield "mut%d_%s" % (i, name), "mlir", mutate(mlirs[name], rng)

    # 3. Random kernels from the grammar (mostly valid: they reach the
    # round-trip checks and the interpreter), one to three per file.
    for i in range(args.generated):
        text = "".join(random_kernel(rng, "g%d_%d" % (i, j)) + "\n"
                       for j in range(rng.choice([1, 1, 1, 2, 3])))
        yield "generated%d" % i, "pd", text.encode()

    # 4. Binary garbage, alone and after a valid prefix.
    for i in range(args.garbage):
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 2048)))
        kind = "pd" if i % 2 == 0 else "mlir"
        yield "garbage%d" % i, kind, junk
        prefix = texts["small_softmax"] if kind == "pd" else mlirs["small_softmax"]
        cut = rng.randrange(len(prefix))
        yield "garbage_after%d" % i, kind, prefix[:cut] + junk

    # 5. Huge numbers in every numeric position.
    for kind, template in (("pd", NUMERIC_TEMPLATE_PD),
                           ("mlir", NUMERIC_TEMPLATE_MLIR)):
        for j, (s, e) in enumerate(numeric_positions(template)):
            for v in NUMBERS[:args.numbers]:
                yield ("num_%s_%d_%s" % (kind, j, v.lstrip("-")[:6]), kind,
                       (template[:s] + v + template[e:]).encode())

    # 6. Deep nests.
    head = "kernel k\nout y f32 [2] heap\n\n"
    for depth in (63, 64, 65, 1000):
        yield "positions%d" % depth, "pd", (head + "1 " * depth + "y[0]=1\n").encode()
        yield "positions_var%d" % depth, "pd", (
            head + "1 " * depth + "y[{%d}]={%d}\n" % (depth - 1, depth - 1)).encode()
        yield "bars%d" % depth, "pd", (
            head + "1 " * 64 + "y[0]=1\n" + "| " * depth + "1 y[0]=1\n").encode()
    yield "mapped_positions", "pd", (head + "1:g 1:b 1:w " * 30 + "y[0]=1\n").encode()
    for depth in (32, 33, 1000, 100000):
        yield "parens%d" % depth, "pd", (
            head + "y[" + "(" * depth + "0" + ")" * depth + "]=1\n").encode()
        yield "parens%d" % depth, "mlir", (
            "perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [2] heap\n"
            "  perfdojo.compute y[" + "(" * depth + "0" + ")" * depth + "] = 1.0\n}\n").encode()
    for depth in (63, 64, 65, 200, 5000):
        yield "mlir_scopes%d" % depth, "mlir", (
            "perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [2] heap\n"
            + "perfdojo.scope 1 {\n" * depth + "perfdojo.compute y[0] = 1.0\n"
            + "}\n" * depth + "}\n").encode()
    def generic_scopes(depth):
        return ("perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [2] heap\n" +
                '"perfdojo.scope"() <{size = 1 : i64, mapping = '
                '#perfdojo<mapping seq>}> ({\n' * depth +
                "perfdojo.compute y[0] = 1.0\n" + "}) : () -> ()\n" * depth +
                "}\n").encode()

    def modules(depth):
        return ("module {\n" * depth + "}\n" * depth).encode()

    def attribute(depth):
        return ("perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [2] heap\n"
                "  perfdojo.compute y[0] = 1.0 {a = " + "[" * depth +
                "]" * depth + "}\n}\n").encode()

    yield "mlir_generic_scopes5000", "mlir", generic_scopes(5000)
    yield "mlir_modules5000", "mlir", modules(5000)
    yield "mlir_attr_nest1000", "mlir", attribute(1000)
    if args.stress:
        # Minutes, gigabytes of diagnostics, or a crash, with today's tools.
        for depth in (20000, 300000):
            yield "mlir_generic_scopes%d" % depth, "mlir", generic_scopes(depth)
            yield "mlir_modules%d" % depth, "mlir", modules(depth)
        yield "mlir_attr_nest1000000", "mlir", attribute(1000000)

    # 7. Very long lines (1 MB).
    mb = 1 << 20
    yield "long_comment", "pd", (b"# " + b"x" * mb + b"\n" + texts["small_softmax"])
    yield "long_kernel_name", "pd", (b"kernel " + b"k" * mb + b"\nout y f32 [1] heap\n\ny[0]=1\n")
    yield "long_array_name", "pd", (b"kernel k\nout " + b"y" * mb + b" f32 [1] heap\n\n"
                                    + b"y" * mb + b"[0]=1\n")
    yield "long_number", "pd", (b"kernel k\nout y f32 [1] heap\n\ny[0]=" + b"9" * mb + b"\n")
    yield "long_fraction", "pd", (b"kernel k\nout y f32 [1] heap\n\ny[0]=0." + b"1" * mb + b"\n")
    yield "long_exponent", "pd", (b"kernel k\nout y f32 [1] heap\n\ny[0]=1e-" + b"0" * mb + b"1\n")
    yield "long_index", "pd", (b"kernel k\nout y f32 [1] heap\n\ny[0" + b"+1-1" * (mb // 4) + b"]=1\n")
    yield "long_dims", "pd", (b"kernel k\nout y f32 [" + b"1, " * (mb // 3) + b"1] heap\n\ny[0]=1\n")
    yield "long_arrays", "pd", (b"kernel k\nout y f32 [1] heap -> y" +
                                b"".join(b", a%d" % i for i in range(mb // 8)) + b"\n\ny[0]=1\n")
    yield "long_blanks", "pd", (b"kernel k\nout y f32 [1] heap\n\n" + b" " * mb + b"y[0]=1" + b"\t" * mb + b"\n")
    yield "long_positions", "pd", (b"kernel k\nout y f32 [1] heap\n\n" + b"1 " * (mb // 2) + b"y[0]=1\n")
    yield "many_lines", "pd", (b"kernel k\nout y f32 [1] heap\n\n" + b"y[0]=1\n" * 20000)
    yield "long_mlir_name", "mlir", (b"perfdojo.kernel @" + b"k" * mb +
                                     b" {\n  perfdojo.buffer out y f32 [1] heap\n"
                                     b"  perfdojo.compute y[0] = 1.0\n}\n")
    yield "long_mlir_index", "mlir", (b"perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [1] heap\n"
                                      b"  perfdojo.compute y[0" + b" + 1 - 1" * (mb // 8) + b"] = 1.0\n}\n")
    yield "long_mlir_number", "mlir", (b"perfdojo.kernel @k {\n  perfdojo.buffer out y f32 [1] heap\n"
                                       b"  perfdojo.compute y[0] = " + b"9" * mb + b".0\n}\n")

    # 8. Empty and degenerate input.
    for kind in ("pd", "mlir"):
        yield "empty", kind, b""
        yield "newlines", kind, b"\n" * 1000
        yield "blanks", kind, b" \t" * 1000
        yield "nul", kind, b"\0"
        yield "nuls", kind, b"\0" * 1000
        yield "bom", kind, b"\xef\xbb\xbf" + (texts["small_softmax"] if kind == "pd"
                                               else mlirs["small_softmax"])
        yield "utf16", kind, (texts["small_softmax"] if kind == "pd"
                              else mlirs["small_softmax"]).decode().encode("utf-16")

    # 9. Directed cases. Many buffers and many operations: array lookups
    # must not make verification quadratic (20000 of each).
    n = 20000
    yield "many_buffers_many_ops", "pd", (
        "kernel k\nout y f32 [1] heap\n" +
        "".join("tmp t%d f32 [1] heap\n" % i for i in range(n)) + "\n" +
        "".join("t%d[0]=1\n" % i for i in range(n)) + "y[0]=t0[0]\n").encode()
    for name, text in sorted(DIRECTED_PD.items()):
        yield "directed_" + name, "pd", text.encode()
    for name, text in sorted(DIRECTED_MLIR.items()):
        yield "directed_" + name, "mlir", text.encode()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tools-dir", required=True,
                   help="folder with pd-translate, pd-opt and pd-run")
    p.add_argument("--kernels", required=True, help="the kernels/ folder")
    p.add_argument("--count", type=int, default=300,
                   help="random mutations of the kernels (default 300)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--truncations", type=int, default=12,
                   help="cut points per text kernel (half for MLIR)")
    p.add_argument("--generated", type=int, default=200,
                   help="random kernels generated from the grammar")
    p.add_argument("--garbage", type=int, default=10,
                   help="binary garbage inputs (each also after a prefix)")
    p.add_argument("--numbers", type=int, default=len(NUMBERS),
                   help="how many of the huge numbers to put in each position")
    p.add_argument("--stress", action="store_true",
                   help="add the expensive inputs too: 20000- and 300000-deep "
                        "generic-form scope and module nests, a 10^6-deep "
                        "attribute")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="seconds per tool run (default 10)")
    p.add_argument("--timeout-scale", type=float, default=1.0,
                   help="multiply --timeout by this: tools built with "
                        "sanitizers run several times slower (default 1)")
    p.add_argument("--max-interp-ops", type=int, default=2_000_000,
                   help="run pd-run without --interpret=false only on kernels "
                        "of at most this many operations")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--save-dir", default="",
                   help="copy every failing input here")
    p.add_argument("--work-dir", default="",
                   help="scratch folder for the inputs (default: a new "
                        "temporary folder); emptied at the end")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 even when failures were found (the summary "
                        "line says what was found)")
    p.add_argument("--verbose", action="store_true",
                   help="print stderr of every failure in full")
    args = p.parse_args()
    args.timeout *= args.timeout_scale

    rng = random.Random(args.seed)
    if args.work_dir:
        shutil.rmtree(args.work_dir, ignore_errors=True)
        os.makedirs(args.work_dir)
        args.work = args.work_dir
    else:
        args.work = tempfile.mkdtemp(prefix="pd-fuzz-")
    runner = Runner(args)
    try:
        inputs = list(gen_inputs(args, rng))
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(
                lambda t: check_input(runner, t[0], *t[1]),
                enumerate(inputs)))
    finally:
        shutil.rmtree(args.work, ignore_errors=True)

    counts = {"crash": 0, "timeout": 0, "bad_exit": 0, "no_diagnostic": 0,
              "roundtrip_failure": 0}
    runs = 0
    for (name, kind, data), (n, failures) in zip(inputs, results):
        runs += n
        for problem, what, err in failures:
            counts[problem] += 1
            text = err.decode("latin-1").strip()
            if not args.verbose:
                text = "\n    ".join(text.splitlines()[:6])
            print("FAIL %s: %s.%s (%d bytes): %s\n    %s" % (
                problem, name, kind, len(data), what, text))
    print("summary: inputs=%d runs=%d crashes=%d timeouts=%d bad_exits=%d "
          "no_diagnostic=%d roundtrip_failures=%d" % (
              len(inputs), runs, counts["crash"], counts["timeout"],
              counts["bad_exit"], counts["no_diagnostic"],
              counts["roundtrip_failure"]))
    return 1 if any(counts.values()) and not args.exit_zero else 0


if __name__ == "__main__":
    sys.exit(main())
