#!/usr/bin/env python3
"""ONNX model in, tuned C library out: the whole PerfDojo pipeline.

1. imports the model as one kernel (`--fuse=graph`: every operator's loops
   in one kernel, so moves can fuse across operators);
2. checks the imported kernel against ONNX's reference runtime;
3. tunes it (the expert, then an annealing search from its program) with
   every candidate compiled, checked and timed on this CPU;
4. writes the best moves and compiles the tuned program into a static and a
   shared library with a C header (pd-lib).

    . .venv/bin/activate
    python3 python/examples/onnx_to_library.py model.onnx -o out --budget 50
"""

import argparse
import os
import pathlib
import subprocess

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

import perfdojo
from perfdojo import onnx as po

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="an ONNX model with static shapes")
    parser.add_argument("-o", "--output", required=True, help="output folder")
    parser.add_argument("--budget", type=int, default=50, help="annealing evaluations")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pd-lib", default=str(ROOT / "build" / "bin" / "pd-lib"))
    args = parser.parse_args()
    out = pathlib.Path(args.output)

    imported = po.import_model(args.model, fuse="graph")
    imported.write(str(out))
    info = imported.kernels[0]
    kernel = perfdojo.Kernel.parse(info.text, info.name + ".pd")
    print(f"imported {args.model} as kernel '{kernel.name}': "
          f"{len(info.text.splitlines())} lines")

    # The imported kernel computes what ONNX's reference runtime computes.
    model = onnx.load(args.model)
    rng = np.random.default_rng(0)
    feeds = {}
    for value in model.graph.input:
        if any(value.name == init.name for init in model.graph.initializer):
            continue
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    expected = ReferenceEvaluator(model).run(None, feeds)
    got = po.run(imported, feeds, po.compiled(threads=args.threads))
    for value, reference in zip(model.graph.output, expected):
        np.testing.assert_allclose(got[value.name], reference, rtol=1e-3, atol=1e-5)
    print("checked against onnx.reference: ok")

    env = perfdojo.Environment(kernel, threads=args.threads, repetitions=5)
    result = env.search("anneal", budget=args.budget, start_from="expert")
    speedup = result.start.seconds / result.best.seconds
    print(f"tuned: {result.start.seconds * 1e3:.3f} ms -> {result.best.seconds * 1e3:.3f} ms "
          f"({speedup:.2f}x, {result.evaluations} programs measured, "
          f"{len(result.best_moves)} moves)")
    if result.stopped_early:
        print("  " + result.stopped_early)

    moves = out / f"{kernel.name}.moves"
    moves.write_text("".join(m + "\n" for m in result.best_moves))
    subprocess.run(
        [args.pd_lib, f"{out / (kernel.name + '.pd')}={moves}", "-o", str(out / "lib"),
         f"--name={kernel.name}", f"--num-threads={args.threads}"],
        check=True,
    )


if __name__ == "__main__":
    main()
