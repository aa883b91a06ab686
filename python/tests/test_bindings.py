"""The perfdojo package's bindings: kernels, running them, the environment,
heuristics and searches, the catalogue and the tuning database."""

import subprocess
import sys

import numpy as np
import pytest

import perfdojo
from conftest import ROOT


def softmax_reference(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# -- kernels -----------------------------------------------------------------
def test_parse_prints_the_canonical_text(softmax_text):
    k = perfdojo.Kernel.parse(softmax_text)
    assert k.name == "sm"
    assert k.text == softmax_text
    assert perfdojo.Kernel.parse(k.text).hash == k.hash
    assert [(b.name, b.role, b.dtype, b.shape) for b in k.inputs] == [
        ("x", "in", "f32", [64, 256])
    ]
    assert [b.name for b in k.outputs] == ["y"]
    assert "perfdojo.kernel" in k.mlir
    assert perfdojo.Kernel.from_mlir(k.mlir).text == k.text
    with pytest.raises(perfdojo.Error, match="unknown format 'onnx'"):
        perfdojo.Kernel.parse(softmax_text, format="onnx")


def test_parse_errors_name_file_line_and_column():
    text = "kernel a\nin x f32 [4] heap\nout y f32 [4] heap\n4 y[{0}]=x[{1}]\n"
    with pytest.raises(perfdojo.Error, match=r"^a\.pd:4:3: .*refers to scope \{1\}"):
        perfdojo.Kernel.parse(text, "a.pd")
    good = text.replace("x[{1}]", "x[{0}]")
    two = good + good.replace("kernel a", "kernel b")
    with pytest.raises(perfdojo.Error, match=r"holds 2 kernels \(a, b\)"):
        perfdojo.Kernel.parse(two)
    assert [k.name for k in perfdojo.Kernel.parse_all(two)] == ["a", "b"]


def test_load_text_and_mlir_files(softmax_file, tmp_path):
    k = perfdojo.Kernel.load(softmax_file)
    mlir = tmp_path / "sm.mlir"
    mlir.write_text(k.mlir)
    assert perfdojo.Kernel.load(mlir).text == k.text
    suite = perfdojo.Kernel.load(ROOT / "kernels" / "softmax.pd")
    assert suite.inputs[0].shape == [24576, 512]
    with pytest.raises(perfdojo.Error, match="cannot read"):
        perfdojo.Kernel.load(tmp_path / "missing.pd")


# -- running kernels -----------------------------------------------------------
def test_interpret_and_run_on_given_inputs(softmax_text):
    k = perfdojo.Kernel.parse(softmax_text)
    x = np.random.default_rng(3).standard_normal((64, 256)).astype(np.float32)
    expected = softmax_reference(x.astype(np.float64))
    interpreted = k.interpret({"x": x})["y"]
    assert interpreted.dtype == np.float32 and interpreted.shape == (64, 256)
    np.testing.assert_allclose(interpreted, expected, rtol=1e-5, atol=1e-7)
    result = k.evaluate({"x": x}, repetitions=3)
    assert result.ok and len(result.times) == 3 and result.compile_seconds > 0
    np.testing.assert_allclose(result.outputs["y"], expected, rtol=1e-5, atol=1e-7)
    checked = k.evaluate({"x": x}, check=True)
    assert checked.ok and 0 <= checked.max_error < 1e-5
    # Inputs not given come from the seed, as in every tool.
    a, b = k.interpret(seed=5)["y"], k.run(seed=5)["y"]
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert not np.allclose(a, k.interpret(seed=6)["y"])


def test_bad_inputs_are_refused_by_name(softmax_text):
    k = perfdojo.Kernel.parse(softmax_text)
    with pytest.raises(perfdojo.Error, match=r"input 'x' has shape \[3, 8\], the kernel's buffer \[64, 256\]"):
        k.interpret({"x": np.zeros((3, 8))})
    with pytest.raises(perfdojo.Error, match="has no buffer named 'z'"):
        k.run({"z": np.zeros(3)})
    with pytest.raises(perfdojo.Error, match=r"buffer 'y' of kernel 'sm' is not an input \(role out\)"):
        k.interpret({"y": np.zeros((64, 256))})
    with pytest.raises(perfdojo.Error, match="input 'x' is not numeric"):
        k.interpret({"x": "text"})


def test_a_gpu_program_is_a_compile_error_on_the_cpu():
    k = perfdojo.Kernel.parse(
        "kernel g\nin x f32 [32] heap\nout y f32 [32] heap\n32:g y[{0}]=x[{0}]\n"
    )
    result = k.evaluate()
    assert result.status == "compile-error"
    assert result.reason == "cannot run on this CPU: a scope is mapped grid"
    with pytest.raises(perfdojo.Error, match="compile-error"):
        k.run()
    # The interpreter runs any mapping.
    x = np.arange(32, dtype=np.float32)
    assert np.array_equal(k.interpret({"x": x})["y"], x)


# -- the environment -------------------------------------------------------------
def test_legal_moves_step_undo_replay(softmax_text):
    env = perfdojo.Environment(perfdojo.Kernel.parse(softmax_text))
    start = env.hash
    moves = env.legal_moves()
    assert moves and all(isinstance(m, perfdojo.Move) for m in moves)
    join = next(m for m in moves if m.name == "join_scopes")
    assert join.text == f"{join.name}@{join.location}"
    env.step(join)
    assert env.moves == [join.text] and env.hash != start
    assert env.kernel.hash == env.hash
    env.undo()
    assert env.hash == start and env.moves == []
    with pytest.raises(perfdojo.Error, match="starting kernel"):
        env.undo()
    with pytest.raises(perfdojo.IllegalMoveError, match="no operation writes 'nothing'"):
        env.step("join_scopes@nothing:0")
    assert env.hash == start
    env.replay([join.text, "join_scopes@m:0"])
    assert len(env.moves) == 2
    with pytest.raises(perfdojo.IllegalMoveError, match="tile_scope@m:0:7"):
        env.replay([join.text, "tile_scope@m:0:7"])
    assert env.moves == [join.text]


def test_measure_caches_by_program(softmax_text):
    env = perfdojo.Environment(perfdojo.Kernel.parse(softmax_text), repetitions=2)
    start = env.measure_start()
    assert start.ok and start.seconds > 0
    env.step("join_scopes@m:0")
    first = env.measure()
    assert first.ok and not first.reused
    count = env.evaluation_count
    env.undo()
    env.step("join_scopes@m:0")
    again = env.measure()
    assert again.reused and again.seconds == first.seconds
    assert env.evaluation_count == count
    batch = env.measure_batch([["join_scopes@m:0"], ["join_scopes@s:0"], ["bogus@x:0"]])
    assert batch[0].reused and batch[1].ok and batch[2].status == "compile-error"


def test_expert_is_pd_tunes_expert(softmax_file, tool, tmp_path):
    env = perfdojo.Environment(softmax_file, threads=1)
    env.apply_heuristic("expert")
    moves_file = tmp_path / "expert.moves"
    subprocess.run(
        [tool("pd-tune"), str(softmax_file), "--strategy=expert", "--no-db", "--no-torch",
         "--num-threads=1", "--quiet", "--plot=-", f"--moves-output={moves_file}"],
        check=True, capture_output=True, cwd=tmp_path,
    )
    listed = [l for l in moves_file.read_text().splitlines() if l and not l.startswith("#")]
    assert env.moves == listed and len(listed) > 5
    with pytest.raises(perfdojo.Error, match="a search, not a heuristic"):
        env.apply_heuristic("anneal")


def test_search_and_tuning_database(softmax_text, tmp_path):
    kernel = perfdojo.Kernel.parse(softmax_text)
    db = str(tmp_path / "tuning.db")
    env = perfdojo.Environment(kernel, repetitions=2, database=db)
    result = env.search("anneal", budget=4, seed=2, confirm_rounds=0)
    assert result.start.ok and result.best.ok and result.confirm_rounds == 0
    assert result.best.seconds <= result.start.seconds
    assert len(result.trace) == result.evaluations <= 4
    env.replay(result.best_moves)
    records = perfdojo.TuningDatabase(db, kernel).variants()
    assert env.hash in {r.hash for r in records}
    assert perfdojo.TuningDatabase(db, kernel).best().seconds == pytest.approx(result.best.seconds)
    # Confirmed, the answer's time is the median of its times; its first
    # time is the database's record of that program.
    confirmed = env.search("random", budget=4, seed=3, confirm_rounds=2)
    assert confirmed.confirm_rounds == 2 and confirmed.best.ok
    env.replay(confirmed.best_moves)
    first = {r.hash: r.seconds for r in perfdojo.TuningDatabase(db, kernel).variants()}
    assert first[env.hash] == pytest.approx(confirmed.first_seconds)
    # Another target's records are apart.
    assert perfdojo.TuningDatabase(db, kernel, target="elsewhere").variants() == []
    with pytest.raises(perfdojo.Error, match="unknown strategy 'bogus'"):
        env.search("bogus")


ROWSUM = """kernel rowsum
in  x f32 [128, 96] heap
out y f32 [128] heap

128 y[{0}]=0
128 96 y[{0}]+=x[{0},{1}]
"""


def test_rl_strategy(tmp_path, monkeypatch):
    """The rl strategy plays a policy trained by pd-train, as pd-tune does."""
    from conftest import BUILD
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    if not (BUILD / "lib" / ("PerfDojoTorchPolicy" + suffix)).exists():
        pytest.skip("built without libtorch: no policy module")
    kernel_file = tmp_path / "rowsum.pd"
    kernel_file.write_text(ROWSUM)
    policy = tmp_path / "policy.pt"
    subprocess.run(
        [str(BUILD / "bin" / "pd-train"), str(kernel_file), "--episodes=2",
         "--seed=1", "--num-threads=2", "-o", str(policy)],
        check=True, capture_output=True,
    )
    env = perfdojo.Environment(perfdojo.Kernel.parse(ROWSUM), threads=2)
    result = env.search("rl", policy=str(policy), budget=4, seed=1)
    assert result.best.ok and result.start.ok
    assert 1 <= result.evaluations <= 4
    env.replay(result.best_moves)
    # The rollout's length, the share of random expansions and learning
    # while searching, as pd-tune's --horizon, --explore, --policy-updates.
    before = policy.read_bytes()
    tuned = env.search("rl", policy=str(policy), budget=6, seed=1, horizon=2,
                       explore=1.0, policy_updates=2)
    assert tuned.best.ok and 1 <= tuned.evaluations <= 6
    assert policy.read_bytes() == before
    # The policy's best only (--adaptive-explore=false --explore=0), by
    # its gain head (the default) and by its Q-values.
    for rank in ("gain", "value"):
        greedy = env.search("rl", policy=str(policy), budget=6, seed=1,
                            explore=0.0, adaptive_explore=False,
                            policy_rank=rank)
        assert greedy.best.ok and 1 <= greedy.evaluations <= 6
    with pytest.raises(perfdojo.Error, match="unknown policy_rank 'q'"):
        env.search("rl", policy=str(policy), budget=4, policy_rank="q")
    with pytest.raises(perfdojo.Error, match="not a share between 0 and 1"):
        env.search("rl", policy=str(policy), budget=4, explore=1.5)
    with pytest.raises(perfdojo.Error, match="needs a policy file"):
        env.search("rl", budget=4)
    with pytest.raises(perfdojo.Error, match="no policy file"):
        env.search("rl", policy=str(tmp_path / "missing.pt"), budget=4)
    # With Python's torch imported, two libtorch builds would share the
    # process: refused before anything loads.
    monkeypatch.setitem(sys.modules, "torch", object())
    with pytest.raises(perfdojo.Error, match="two libtorch builds"):
        env.search("rl", policy=str(policy), budget=4)


def test_catalogue():
    moves = {m.name: m for m in perfdojo.moves()}
    assert len(moves) == len(perfdojo.moves()) >= 30
    assert moves["split_reduction"].inverse == "join_reduction"
    assert moves["tile_scope"].location_kind == "scope" and moves["tile_scope"].params


def test_check_finds_float32_results_far_from_the_interpreter():
    # (x + 1e8) - 1e8 is x in the float64 interpreter, 0 in float32.
    k = perfdojo.Kernel.parse(
        "kernel c\nin x f32 [16] heap\nout y f32 [16] heap\ntmp t f32 [16] heap\n"
        "16 t[{0}]=x[{0}]+1e+08\n16 y[{0}]=t[{0}]-1e+08\n"
    )
    result = k.evaluate(check=True)
    assert result.status == "wrong-answer" and result.max_error > 0.5
    assert "y" in result.reason
    assert k.evaluate().ok
