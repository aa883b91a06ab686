"""A PerfDojo kernel in its naive text form, as a TVM tensor expression.

    import pd_to_te
    kernel = pd_to_te.parse(open("kernels/softmax.pd").read())
    args = pd_to_te.to_te(kernel, tvm)      # [te.Tensor, ...] in, then out

Lets TVM's MetaSchedule tune the same computation PerfDojo starts from, for
any kernel written like the suite (kernels/ and kernels/unseen/), not only
those someone translated by hand. Only the naive form is accepted: one
statement per line, each line opening its own scopes with plain sizes (no
bars, no mappings), every buffer on the heap with full dimensions. That is
how kernels are written before any move; a tuned program is refused.

Each statement becomes one TE stage, buffers being renamed on every write
(static single assignment): ``y[...] = e`` a new version of y computed from
e; ``y[...] op= e`` over scopes that the index of y does not use, a
reduction over those scopes (te.sum, te.max, te.min or a product), combined
with the previous version of y unless that version is the reducer's
identity (the usual ``y = 0`` then ``y += ...``). The kernel's in buffers
are placeholders and its out buffers the last versions written; temporaries
stay inside the function, where MetaSchedule may inline them.

Runs in the TVM virtual environment (bench/peers/setup.sh tvm): needs only
the standard library and tvm, which the caller passes in.
"""

import math
import re

DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32",
          "f64": "float64", "i8": "int8", "i16": "int16", "i32": "int32",
          "i64": "int64"}
REDUCE_OPS = ("+=", "*=", "max=", "min=")
BINOPS = ("<=", ">=", "==", "!=", "<", ">", "+", "-", "*", "/")


class Unsupported(ValueError):
    """The kernel is not in the naive form the translation accepts."""


class Kernel:
    def __init__(self, name):
        self.name = name
        self.buffers = {}        # name -> (role, dtype, [dims])
        self.order = []          # declaration order
        self.statements = []     # (line number, [sizes], target, [index], op, expr)


def parse(text, where="<kernel>"):
    """Kernel from the naive text form; Unsupported names the line."""
    kernel = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        place = "%s:%d" % (where, number)
        if line.startswith("kernel "):
            if kernel is not None:
                raise Unsupported("%s: one kernel per file" % place)
            kernel = Kernel(line.split()[1])
            continue
        if kernel is None:
            raise Unsupported("%s: expected 'kernel NAME' first" % place)
        m = re.match(r"(in|out|tmp)\s+(\w+)\s+(\w+)\s+\[([^\]]*)\]\s+(\w+)\s*$",
                     line)
        if m:
            role, name, dtype, dims, location = m.groups()
            if dtype not in DTYPES:
                raise Unsupported("%s: element type '%s'" % (place, dtype))
            if ":" in dims or location != "heap":
                raise Unsupported("%s: buffer %s is not a plain heap buffer "
                                  "(a naive kernel's are)" % (place, name))
            kernel.buffers[name] = (role, DTYPES[dtype],
                                    [int(d) for d in dims.split(",")])
            kernel.order.append(name)
            continue
        tokens = line.split()
        sizes = []
        while tokens and re.fullmatch(r"[0-9|]+(:\w)?", tokens[0]):
            if not tokens[0].isdigit():
                raise Unsupported("%s: '%s': only naive kernels (plain scope "
                                  "sizes, no bars or mappings)"
                                  % (place, tokens[0]))
            sizes.append(int(tokens.pop(0)))
        stmt = "".join(tokens)
        m = re.fullmatch(r"(\w+)\[([^\]]*)\](\+=|\*=|max=|min=|=)(.+)", stmt)
        if not m:
            raise Unsupported("%s: cannot read the statement '%s'"
                              % (place, stmt))
        target, index, op, expr = m.groups()
        if target not in kernel.buffers:
            raise Unsupported("%s: unknown buffer '%s'" % (place, target))
        kernel.statements.append((number, sizes, target,
                                  split_top(index), op, expr))
    if kernel is None:
        raise Unsupported("%s: no kernel" % where)
    return kernel


def split_top(text, sep=","):
    """Split at `sep` outside brackets and parentheses."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def to_te(kernel, tvm, where="<kernel>"):
    """[placeholders of the in buffers..., tensors of the out buffers...]."""
    te, tir = tvm.te, tir_of(tvm)
    current = {}      # buffer -> te.Tensor of its latest version
    constant = {}     # buffer -> the constant its latest version holds
    for name in kernel.order:
        role, dtype, dims = kernel.buffers[name]
        if role == "in":
            current[name] = te.placeholder(dims, dtype=dtype, name=name)
    ins = [current[n] for n in kernel.order if kernel.buffers[n][0] == "in"]
    versions = {}

    for number, sizes, target, index, op, expr in kernel.statements:
        place = "%s:%d" % (where, number)
        role, dtype, dims = kernel.buffers[target]
        # Each index of the target is a mixed-radix number of scope
        # variables that covers its dimension once ({0}, or {1}*8+{2} with
        # scopes of 8 and 8 for 64 channels): the stage computes over the
        # target's dimensions and recovers each variable by division.
        out_depths, decode = [], []
        for i, part in enumerate(index):
            digits = radix_digits(part, sizes, dims[i], place, target)
            for depth, _ in digits:
                if depth in out_depths:
                    raise Unsupported("%s: {%d} indexes two dimensions of %s"
                                      % (place, depth, target))
                out_depths.append(depth)
            decode.append(digits)
        reduce_depths = [d for d in range(len(sizes)) if d not in out_depths]
        if reduce_depths and op == "=":
            raise Unsupported("%s: a store repeated over scopes its target "
                              "does not use" % place)
        previous = current.get(target)
        if op != "=" and previous is None:
            raise Unsupported("%s: %s is updated before it is written"
                              % (place, target))
        versions[target] = versions.get(target, 0) + 1
        stage = "%s_%d" % (target, versions[target])

        if reduce_depths:
            axes = [te.reduce_axis((0, sizes[d]), name="k%d" % d)
                    for d in reduce_depths]
            reduced = te.compute(
                dims, reduce_body(decode, sizes, reduce_depths, axes, expr,
                                  op, current, kernel, dtype, tvm, place),
                name=stage + "_r")
            identity = {"+=": 0.0, "*=": 1.0, "max=": -math.inf,
                        "min=": math.inf}[op]
            if constant.get(target) == identity:
                current[target] = reduced
            else:
                current[target] = te.compute(
                    dims, combine_body(op, previous, reduced, tir), name=stage)
        else:
            # The target's dimensions are in the order of its index.
            current[target] = te.compute(
                dims, map_body(decode, sizes, expr, op, previous, current,
                               kernel, dtype, tvm, place), name=stage)
        constant[target] = constant_of(expr) if op == "=" else None

    outs = []
    for name in kernel.order:
        if kernel.buffers[name][0] == "out":
            if name not in current:
                raise Unsupported("%s: out buffer %s is never written"
                                  % (where, name))
            outs.append(current[name])
    return ins + outs


def radix_digits(part, sizes, dim, place, target):
    """[(depth, weight)] of an index that is a mixed-radix number of scope
    variables covering `dim` exactly: the weights, smallest first, are 1
    and then the running products of the scopes' sizes."""
    digits = []
    for term in part.replace(" ", "").split("+"):
        m = re.fullmatch(r"\{(\d+)\}(?:\*(\d+))?", term)
        if not m or int(m.group(1)) >= len(sizes):
            raise Unsupported("%s: the written index '%s' of %s is not a sum "
                              "of scope variables times sizes"
                              % (place, part, target))
        digits.append((int(m.group(1)), int(m.group(2) or 1)))
    digits.sort(key=lambda d: d[1])
    weight = 1
    for depth, w in digits:
        if w != weight:
            break
        weight *= sizes[depth]
    else:
        if weight == dim:
            return digits
    raise Unsupported("%s: the statement does not write each element of %s "
                      "once" % (place, target))


def decoded(decode, sizes, out_vars, tvm):
    """{depth: TIR value} of the scope variables behind the target's index."""
    tir = tir_of(tvm)
    env = {}
    for digits, var in zip(decode, out_vars):
        for n, (depth, weight) in enumerate(digits):
            value = var if weight == 1 else tir.floordiv(var, weight)
            if n + 1 < len(digits):       # not the most significant digit
                value = tir.floormod(value, sizes[depth])
            env[depth] = value
    return env


# te.compute reads its function's signature and refuses keyword (default)
# arguments, so each stage's function is made by one of these.
def reduce_body(decode, sizes, reduce_depths, axes, expr, op, current,
                kernel, dtype, tvm, place):
    def body(*out_vars):
        env = decoded(decode, sizes, out_vars, tvm)
        env.update(zip(reduce_depths, axes))
        value = evaluate(expr, env, dict(current), kernel, dtype, tvm, place)
        return reducer(op, tvm)(value, axis=axes)
    return body


def combine_body(op, previous, reduced, tir):
    def body(*v):
        return combine(op, previous(*v), reduced(*v), tir)
    return body


def map_body(decode, sizes, expr, op, previous, current, kernel, dtype, tvm,
             place):
    snapshot = dict(current)

    def body(*out_vars):
        env = decoded(decode, sizes, out_vars, tvm)
        value = evaluate(expr, env, snapshot, kernel, dtype, tvm, place)
        if op == "=":
            return value
        return combine(op, previous(*out_vars), value, tir_of(tvm))
    return body


def constant_of(expr):
    text = expr.strip()
    if text in ("inf", "-inf"):
        return float(text)
    try:
        return float(text)
    except ValueError:
        return None


def reducer(op, tvm):
    te = tvm.te
    if op == "+=":
        return te.sum
    if op == "max=":
        return te.max
    if op == "min=":
        return te.min
    return te.comm_reducer(lambda x, y: x * y,
                           lambda t: tir_of(tvm).const(1, dtype=t), name="prod")


def combine(op, a, b, tir):
    if op == "+=":
        return a + b
    if op == "*=":
        return a * b
    if op == "max=":
        return tir.max(a, b)
    return tir.min(a, b)


def index_value(text, env, place):
    """An index (a linear expression of scope variables) as a TIR value."""
    code = re.sub(r"\{(\d+)\}", lambda m: "V[%s]" % m.group(1), text)
    if not re.fullmatch(r"[V\[\]0-9+\-*() ]*", code):
        raise Unsupported("%s: cannot read the index '%s'" % (place, text))
    for d in re.findall(r"V\[(\d+)\]", code):
        if int(d) not in env:
            raise Unsupported("%s: {%s} is not an enclosing scope"
                              % (place, d))
    return eval(code, {"__builtins__": {}}, {"V": env})


def evaluate(expr, env, current, kernel, dtype, tvm, place):
    """The statement's expression, as a TIR value of type `dtype`."""
    te, tir = tvm.te, tir_of(tvm)
    text = expr.strip()

    def operand(t):
        t = t.strip()
        m = re.fullmatch(r"(\w+)\[(.*)\]", t)
        if m:
            name = m.group(1)
            if name not in current:
                raise Unsupported("%s: %s is read before it is written"
                                  % (place, name))
            idx = [index_value(p, env, place) for p in split_top(m.group(2))]
            value = current[name](*idx)
            return value
        m = re.fullmatch(r"\{(\d+)\}", t)
        if m:
            return tir.Cast(dtype, env[int(m.group(1))])
        try:
            return tir.const(float(t), dtype)
        except ValueError:
            raise Unsupported("%s: cannot read the operand '%s'" % (place, t))

    m = re.fullmatch(r"(\w+)\((.*)\)", text)
    if m and m.group(1) not in kernel.buffers:
        fn, args = m.group(1), [operand(a) for a in split_top(m.group(2))]
        return function(fn, args, dtype, tvm, place)
    # A binary operator at the top level (not a sign, not an exponent's).
    depth = 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and i > 0:
            for op in BINOPS:
                if text.startswith(op, i) and not (
                        c in "+-" and text[i - 1] in "eE"
                        and text[i - 2:i - 1].isdigit()):
                    a, b = operand(text[:i]), operand(text[i + len(op):])
                    return binary(op, a, b, dtype, tir)
    if text.startswith("-") and not re.fullmatch(r"-[0-9.eE+\-]+|-inf", text):
        return -operand(text[1:])
    return operand(text)


def binary(op, a, b, dtype, tir):
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return a / b
    compare = {"<": tir.LT, "<=": tir.LE, ">": tir.GT, ">=": tir.GE,
               "==": tir.EQ, "!=": tir.NE}[op]
    return tir.Cast(dtype, compare(a, b))


def function(fn, args, dtype, tvm, place):
    te, tir = tvm.te, tir_of(tvm)
    unary = {"exp": te.exp, "log": te.log, "sqrt": te.sqrt,
             "rsqrt": te.rsqrt, "tanh": te.tanh, "sigmoid": te.sigmoid,
             "erf": te.erf, "abs": te.abs, "floor": te.floor,
             "ceil": te.ceil, "round": te.round, "sin": te.sin,
             "cos": te.cos, "tan": te.tan, "asin": te.asin,
             "acos": te.acos, "atan": te.atan, "sinh": te.sinh,
             "cosh": te.cosh, "asinh": te.asinh, "acosh": te.acosh,
             "atanh": te.atanh}
    if fn in unary and len(args) == 1:
        return unary[fn](args[0])
    if fn == "max" and len(args) == 2:
        return tir.max(*args)
    if fn == "min" and len(args) == 2:
        return tir.min(*args)
    if fn == "fma" and len(args) == 3:
        return args[0] * args[1] + args[2]
    if fn == "pow" and len(args) == 2:
        return te.power(*args)
    if fn == "fmod" and len(args) == 2:
        return tir.fmod(*args)
    if fn == "cast" and len(args) == 1:
        return tir.Cast(dtype, args[0])
    if fn == "select" and len(args) == 3:
        zero = tir.const(0, args[0].dtype)
        return tir.Select(tir.NE(args[0], zero), args[1], args[2])
    if fn == "sign" and len(args) == 1:
        zero = tir.const(0, dtype)
        return tir.Select(args[0] > zero, tir.const(1, dtype),
                          tir.Select(args[0] < zero, tir.const(-1, dtype),
                                     args[0] * zero))
    raise Unsupported("%s: the function %s of %d operands has no TVM "
                      "translation here" % (place, fn, len(args)))


def tir_of(tvm):
    """TVM's TIR expression module: tvm.tirx from 0.27 on, tvm.tir before."""
    return getattr(tvm, "tirx", None) or tvm.tir
