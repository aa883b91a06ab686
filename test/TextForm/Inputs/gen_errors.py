import os, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(__file__))
from cases import cases, bytecases
# Regenerates test/TextForm/errors.test from the cases in cases.py and the
# messages the current pd-translate prints. Review the diff before
# committing: the test pins every message, line, column and caret.
#   python3 test/TextForm/Inputs/gen_errors.py build/bin/pd-translate \
#       test/TextForm/errors.test
T = os.path.abspath(sys.argv[1])
tmp = tempfile.mkdtemp()
out = []
out.append("""# Parse and verification errors of the text form (pd-translate --import-pd).
# Every case is its own file; the check covers the whole diagnostic: the
# file:line:column, the message, the source line and the caret under the
# column. Verifier errors found after parsing carry the file:line:column of
# the offending line too.
#
# RUN: rm -rf %t && split-file %s %t
# RUN: %python %t/mkbytes.py %t
""")
allcases = [(c, t, False) for c, t in cases] + [(c, t, True) for c, t in bytecases]
def check_lines(prefix, name, text, isbytes):
    lines = text.rstrip("\n").split("\n")
    res = []
    first = True
    for l in lines:
        if first:
            assert ": error: " in l, l
            path, rest = l.split(": error: ", 1)
            loc = path[path.index(name):]
            res.append(f"# {prefix}:{{{{.*}}}}{loc}: error: {rest}")
            first = False
            continue
        if ": note: " in l:
            break  # notes (e.g. "see current operation") are not checked
        # source line / caret line
        if "{{" in l or "[[" in l:
            raise SystemExit("needs escaping: " + l)
        if isbytes and not l.strip().startswith("^"):
            bad = [k for k, ch in enumerate(l) if ch != "\t" and (ord(ch) < 0x20 or ord(ch) >= 0x7f)]
            if bad:
                res.append(f"# {prefix}-NEXT:{l[:bad[0]]}{{{{.+}}}}")
                continue
        res.append(f"# {prefix}-NEXT:{l}")
    return res
for i, (comment, text, isbytes) in enumerate(allcases, 1):
    name = f"case{i}.pd"
    p = os.path.join(tmp, name)
    with open(p, "wb") as f:
        f.write(text.encode("utf-8") if "\u00e9" in text else text.encode("latin-1"))
    r = subprocess.run([T, "--import-pd", p], capture_output=True)
    assert r.returncode == 1, (comment, r.returncode, r.stderr)
    err = r.stderr.decode("latin-1")
    prefix = f"CASE{i}"
    out.append(f"# {comment}")
    out.append(f"# RUN: not pd-translate --import-pd %t/{name} 2>&1 | FileCheck %s --check-prefix={prefix} --strict-whitespace --match-full-lines")
    cl = check_lines(prefix, name, err, isbytes)
    # the empty file: the source line is empty
    fixed = []
    for l in cl:
        if l == f"# {prefix}-NEXT:":
            l = f"# {prefix}-EMPTY:"
        fixed.append(l)
    out.extend(fixed)
    out.append("")
# pd-run reports parse errors the same way
out.append("# pd-run reports the same diagnostics.")
k = [c for c, _, _ in allcases].index("bar after a size") + 1
out.append(f"# RUN: not pd-run %t/case{k}.pd 2>&1 | FileCheck %s --check-prefix=PDRUNDIAG --match-full-lines")
out.append(f"# PDRUNDIAG:{{{{.*}}}}case{k}.pd:5:3: error: '|' cannot follow a scope size: a line continues enclosing scopes first, then opens new ones")
out.append("")
# split-file parts
out.append("#--- mkbytes.py")  # marker, replaced by the generated script below
text = "\n".join(out) + "\n"
parts = []
for i, (comment, t, isbytes) in enumerate(allcases, 1):
    if isbytes:
        continue
    parts.append(f"//--- case{i}.pd\n{t}")
mk = ["import os, sys", "cases = {"]
for i, (comment, t, isbytes) in enumerate(allcases, 1):
    if isbytes:
        data = t.encode("utf-8") if "\u00e9" in t else t.encode("latin-1")
        mk.append(f"    'case{i}.pd': {data!r},")
mk.append("}")
mk.append("for name, data in cases.items():")
mk.append("    with open(os.path.join(sys.argv[1], name), 'wb') as f:")
mk.append("        f.write(data)")
text = text.replace("#--- mkbytes.py\n", "")
text += "//--- mkbytes.py\n" + "\n".join(mk) + "\n" + "".join(parts)
open(sys.argv[2], "w").write(text)
print(len(allcases), "cases")
