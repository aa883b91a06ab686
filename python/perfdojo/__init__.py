"""PerfDojo: ML kernel optimization as a game.

A kernel is a small tree of loops ("scopes") over named arrays, written in a
text form (docs/TextForm.md). Moves are atomic, legality-checked rewrites of
that tree, so every reachable program computes what the kernel computes; a
program is measured for real: compiled for this CPU, checked against the
kernel, timed.

    import perfdojo
    kernel = perfdojo.Kernel.load("kernels/softmax.pd")
    env = perfdojo.Environment(kernel)
    print([str(m) for m in env.legal_moves()][:5])
    env.step("join_scopes@m:0")
    print(env.measure())

`perfdojo.gym` holds the Gymnasium environment (``PerfDojo-v0``) and
`perfdojo.onnx` the ONNX importer. Every failure raises `perfdojo.Error`
(a refused move `perfdojo.IllegalMoveError`) with the tools' message.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from . import _core
from ._core import (
    Buffer,
    Error,
    IllegalMoveError,
    Measurement,
    Move,
    MoveInfo,
    SearchResult,
    Variant,
)

__all__ = [
    "Buffer",
    "Environment",
    "Error",
    "IllegalMoveError",
    "Kernel",
    "Measurement",
    "Move",
    "MoveInfo",
    "RunResult",
    "SearchResult",
    "TuningDatabase",
    "Variant",
    "default_database_path",
    "host_target",
    "moves",
]

#: NumPy type of each element type of the text form (bf16 has none: its
#: values come back as float32, which holds every bf16 value exactly).
DTYPES = {
    "f16": np.float16,
    "bf16": np.float32,
    "f32": np.float32,
    "f64": np.float64,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
}

Inputs = Optional[Mapping[str, "np.typing.ArrayLike"]]


def _as_float64(name: str, value) -> np.ndarray:
    try:
        return np.ascontiguousarray(value, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise Error(f"input '{name}' is not numeric: {e}") from None


class RunResult:
    """One compiled run: the outputs, and the times of the timed runs."""

    def __init__(self, core: "_core.RunResult", dtypes: Mapping[str, type]):
        self.status: str = core.status
        self.reason: str = core.reason
        self.compile_seconds: float = core.compile_seconds
        self.max_error: float = core.max_error
        self.times: list[float] = list(core.times)
        self.outputs: dict[str, np.ndarray] = {
            name: array.astype(dtypes[name], copy=False)
            for name, array in core.outputs
        }

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def median(self) -> float:
        """Median seconds of the timed runs (nan without any)."""
        return float(np.median(self.times)) if self.times else math.nan

    def __repr__(self) -> str:
        if not self.ok:
            return f"RunResult({self.status}, {self.reason!r})"
        return f"RunResult(ok, median {self.median:.3g} s over {len(self.times)} runs)"


class Kernel:
    """One kernel: its buffers, its text form and MLIR, and ways to run it.

    Build one with `Kernel.parse` (text form or MLIR held in a string) or
    `Kernel.load` (a ``.pd`` or ``.mlir`` file); a source holding several
    kernels gives them all through `parse_all` / `load_all`.
    """

    def __init__(self, core: "_core.Kernel"):
        if not isinstance(core, _core.Kernel):
            raise TypeError("use Kernel.parse or Kernel.load to make a kernel")
        self._core = core

    # -- construction -----------------------------------------------------
    @staticmethod
    def parse_all(text: str, name: str = "<string>", format: str = "pd") -> list["Kernel"]:
        """Every kernel of `text`, in the text form (`format` ``"pd"``) or
        in MLIR (``"mlir"``); `name` names the source in errors."""
        return [Kernel(k) for k in _core.parse_text(text, name, format)]

    @staticmethod
    def parse(text: str, name: str = "<string>", format: str = "pd") -> "Kernel":
        """The one kernel of `text` (an error if it holds several)."""
        return _single(Kernel.parse_all(text, name, format), name)

    @staticmethod
    def from_mlir(text: str, name: str = "<string>") -> "Kernel":
        """The one kernel of an MLIR module (the perfdojo dialect)."""
        return Kernel.parse(text, name, "mlir")

    @staticmethod
    def load_all(path: Union[str, os.PathLike], format: str = "") -> list["Kernel"]:
        """Every kernel of a file, ``.pd`` or ``.mlir`` (or as `format` says)."""
        return [Kernel(k) for k in _core.load_file(os.fspath(path), format)]

    @staticmethod
    def load(path: Union[str, os.PathLike], format: str = "") -> "Kernel":
        """The one kernel of a file (an error if it holds several)."""
        return _single(Kernel.load_all(path, format), os.fspath(path))

    # -- what it is -------------------------------------------------------
    @property
    def name(self) -> str:
        return self._core.name

    @property
    def text(self) -> str:
        """The canonical text form."""
        return self._core.text

    @property
    def mlir(self) -> str:
        """The kernel in the perfdojo dialect (MLIR)."""
        return self._core.mlir

    @property
    def hash(self) -> str:
        """Hash of the canonical text (16 hex digits): names a program."""
        return self._core.hash

    @property
    def buffers(self) -> list[Buffer]:
        return list(self._core.buffers)

    @property
    def inputs(self) -> list[Buffer]:
        return [b for b in self.buffers if b.role == "in"]

    @property
    def outputs(self) -> list[Buffer]:
        return [b for b in self.buffers if b.role == "out"]

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Kernel({self.name!r}, {len(self.buffers)} buffers)"

    # -- running it ------------------------------------------------------
    def _inputs(self, inputs: Inputs) -> list[tuple[str, np.ndarray]]:
        if inputs is None:
            return []
        if not isinstance(inputs, Mapping):
            raise TypeError("inputs must map buffer names to arrays")
        return [(str(k), _as_float64(str(k), v)) for k, v in inputs.items()]

    def _dtypes(self) -> dict[str, type]:
        return {b.name: DTYPES.get(b.dtype, np.float64) for b in self.buffers}

    def interpret(
        self,
        inputs: Inputs = None,
        *,
        seed: int = 1,
        max_mib: int = 8192,
        max_operations: int = 4 << 30,
    ) -> dict[str, np.ndarray]:
        """Runs the reference interpreter (float64 inside).

        Inputs not given are filled from `seed` (floats uniform in [-1, 1),
        integers in [-8, 8]), as every PerfDojo tool does. Returns every
        ``out`` buffer, in its element type (an element never written is
        NaN in a float output).
        """
        dtypes = self._dtypes()
        outputs = _core.interpret(
            self._core, self._inputs(inputs), seed, max_mib, max_operations
        )
        return {n: a.astype(dtypes[n], copy=False) for n, a in outputs}

    def evaluate(
        self,
        inputs: Inputs = None,
        *,
        seed: int = 1,
        threads: int = 1,
        warmup: int = 0,
        repetitions: int = 1,
        time_limit: float = 60.0,
        check: bool = False,
        tolerance: float = 2e-3,
        max_mib: int = 8192,
    ) -> RunResult:
        """Compiles the kernel for this CPU and runs it in a child process:
        `warmup` untimed runs, then `repetitions` timed ones.

        A crash, a timeout or a compile error comes back as the result's
        status and reason (it never takes Python down). With `check`, the
        outputs are compared with the interpreter's on the same inputs: a
        difference beyond `tolerance` (relative to each output's largest
        magnitude) makes the status ``wrong-answer``; `max_error` is the
        largest difference seen.
        """
        core = _core.run_compiled(
            self._core,
            self._inputs(inputs),
            seed,
            threads,
            warmup,
            repetitions,
            time_limit,
            check,
            tolerance,
            max_mib,
        )
        return RunResult(core, self._dtypes())

    def run(self, inputs: Inputs = None, **options) -> dict[str, np.ndarray]:
        """Compiled outputs, as `evaluate` gives them; raises on a failure."""
        result = self.evaluate(inputs, **options)
        if not result.ok:
            raise Error(f"kernel '{self.name}': {result.status}: {result.reason}")
        return result.outputs


def _single(kernels: list[Kernel], where: str) -> Kernel:
    if len(kernels) != 1:
        names = ", ".join(k.name for k in kernels)
        raise Error(
            f"{where} holds {len(kernels)} kernels ({names}); use parse_all/load_all"
        )
    return kernels[0]


def default_database_path() -> str:
    """The tuning database pd-tune uses by default (its folder is created)."""
    return _core.default_database_path()


class Environment:
    """The game: a state (a program reached from `kernel` by legal moves).

    `legal_moves`, `step`, `undo`, `replay` play it; `measure` compiles the
    current program for this CPU, checks it against the kernel (beyond
    `tolerance` it is ``wrong-answer`` and its time does not count) and times
    it (the median of `repetitions` runs on `threads` threads). Measurements
    are cached by program, and recorded in a tuning database when
    `database` names one (``"default"``: pd-tune's).
    """

    def __init__(
        self,
        kernel: Union[Kernel, str, os.PathLike],
        *,
        threads: int = 1,
        warmup: int = 1,
        repetitions: int = 5,
        time_limit: float = 60.0,
        seed: int = 1,
        tolerance: float = 2e-3,
        check_against_interpreter: bool = False,
        database: Optional[str] = None,
    ):
        if not isinstance(kernel, Kernel):
            kernel = Kernel.load(kernel)
        if database == "default":
            database = default_database_path()
        self.start = kernel
        self.threads = threads
        self._core = _core.Environment(
            kernel._core,
            threads,
            warmup,
            repetitions,
            time_limit,
            seed,
            tolerance,
            check_against_interpreter,
            database,
        )

    def reset(self) -> None:
        """Back to the starting kernel."""
        self._core.reset()

    @property
    def kernel(self) -> Kernel:
        """The current program (a copy)."""
        return Kernel(self._core.kernel)

    @property
    def moves(self) -> list[str]:
        """The moves from the starting kernel to the current program."""
        return list(self._core.moves)

    @property
    def text(self) -> str:
        return self._core.text

    @property
    def hash(self) -> str:
        return self._core.hash

    def legal_moves(self) -> list[Move]:
        """Every legal move of the current program."""
        return list(self._core.legal_moves())

    def step(self, move: Union[str, Move]) -> None:
        """Applies a move (``name@location[:params]`` or a `Move`); raises
        `IllegalMoveError` with the reason when it is refused (the state is
        then unchanged)."""
        self._core.step(move.text if isinstance(move, Move) else str(move))

    def undo(self) -> None:
        """Takes the last move back."""
        self._core.undo()

    def replay(self, moves: Iterable[Union[str, Move]]) -> None:
        """Resets, then applies `moves`; stops at the first one refused
        (raising), leaving the moves before it applied."""
        self._core.replay([m.text if isinstance(m, Move) else str(m) for m in moves])

    def measure(self) -> Measurement:
        """Measures the current program (or returns its earlier measurement)."""
        return self._core.measure()

    def measure_start(self) -> Measurement:
        """Measures the starting kernel (the reference of every check)."""
        return self._core.measure_start()

    def measure_batch(self, sequences: Sequence[Sequence[str]]) -> list[Measurement]:
        """Measures the programs the move sequences reach, as one batch."""
        return list(self._core.measure_batch([list(s) for s in sequences]))

    @property
    def evaluation_count(self) -> int:
        """Measurements actually run (not reused) so far."""
        return self._core.evaluation_count

    def apply_heuristic(self, level: str = "expert", target: str = "cpu") -> None:
        """Plays heuristic `level` (naive, greedy or expert) from the current
        program, move by move (as ``pd-tune --strategy=LEVEL`` does)."""
        self._core.apply_heuristic(level, target)

    def search(
        self,
        strategy: str = "anneal",
        *,
        budget: int = 100,
        seed: int = 1,
        time_budget: float = 0.0,
        graph: str = "edges",
        generation: int = 1,
        start_from: str = "expert",
        confirm_rounds: int = 3,
        policy: str = "",
        horizon: int = 8,
        explore: float = 0.25,
        adaptive_explore: bool = True,
        policy_rank: str = "gain",
        policy_updates: int = 0,
    ) -> SearchResult:
        """Runs a heuristic or a search (random, anneal) from the starting
        kernel, as pd-tune does; the environment ends at some program of it:
        `replay(result.best_moves)` reaches the best. A search then times its
        4 best programs again in `confirm_rounds` interleaved rounds and
        answers with the lowest median (`result.best.seconds`; its first
        time, the one the tuning database keeps, is `result.first_seconds`);
        0 keeps the first best time.

        `strategy="rl"` plays a trained policy (`policy`: pd-train's output
        for this target) as `pd-tune --strategy=rl` does, within `budget`
        evaluations: its greedy rollout of `horizon` moves at most, then a
        sampler it guides, a share `explore` (0 to 1) of whose expansions
        are random, the others the policy's best or, with
        `adaptive_explore`, the policy's best, its best place of a random
        move, or a random draw, by how often each has paid on this kernel
        so far; the policy's best by its gain head (`policy_rank=
        "gain"`, the predicted speedup of the move) or by its Q-values
        (`"value"`); `policy_updates` gradient steps after each measurement
        let the policy learn from the search's own measurements (0: as
        trained; the policy file is never written). Its network runs in the libtorch that
        PerfDojo was built with (Debian's), loaded into this process; with
        PyPI's `torch` imported already the two libtorch builds would share
        the process, which PerfDojo refuses (run `pd-tune --strategy=rl`
        in its own process instead)."""
        if strategy == "rl" and "torch" in sys.modules:
            raise Error(
                "the rl strategy loads PerfDojo's libtorch into this process, "
                "and Python's torch module is imported already (two libtorch "
                "builds in one process); run it in a process without torch, "
                "or use pd-tune --strategy=rl --policy=FILE"
            )
        return self._core.search(
            strategy, budget, seed, time_budget, graph, generation, start_from, "cpu",
            confirm_rounds, policy, horizon, explore, adaptive_explore,
            policy_rank, policy_updates,
        )


class TuningDatabase:
    """The records of one kernel on one target in a tuning database."""

    def __init__(
        self,
        path: str,
        kernel: Kernel,
        *,
        target: Optional[str] = None,
        threads: int = 1,
    ):
        self._core = _core.TuningDatabase(path, kernel._core, target, threads)

    @property
    def path(self) -> str:
        return self._core.path

    def variants(self) -> list[Variant]:
        return list(self._core.variants())

    def best(self) -> Optional[Variant]:
        return self._core.best()

    def lookup(self, hash: str) -> Optional[Variant]:
        return self._core.lookup(hash)


def moves() -> list[MoveInfo]:
    """The move catalogue."""
    return list(_core.catalogue())


def host_target(threads: int = 1) -> str:
    """This machine as a tuning target (the database key's target)."""
    return _core.host_target(threads)


def _register_gymnasium() -> None:
    """Registers ``PerfDojo-v0`` with Gymnasium when it is installed (the
    environment itself, perfdojo.gym, is imported by gymnasium.make)."""
    try:
        import gymnasium
    except ImportError:
        return
    if "PerfDojo-v0" not in gymnasium.registry:
        gymnasium.register(id="PerfDojo-v0", entry_point="perfdojo.gym:PerfDojoEnv")


_register_gymnasium()
