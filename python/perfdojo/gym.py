"""The optimization game as a Gymnasium environment (``PerfDojo-v0``).

    import gymnasium, perfdojo
    env = gymnasium.make("PerfDojo-v0", kernel="kernels/softmax.pd")
    obs, info = env.reset(seed=0)
    mask = info["action_mask"]            # 1 where the action is legal
    obs, reward, terminated, truncated, info = env.step(1)

Observation: the program's canonical text form (a `gymnasium.spaces.Text`);
with ``observation="dict"`` also a numeric encoding of it
(``{"text": ..., "features": float32 vector}``, see `program_features`).

Actions: ``Discrete(max_actions + 1)``. Action 0 is *stop* (ends the
episode); action ``i >= 1`` is the ``i``-th legal move of the current
program, in the order `perfdojo.Environment.legal_moves` lists them (the
first `max_actions` when there are more). ``info["action_mask"]`` (and
`action_masks()`, as masked-PPO implementations expect) marks the legal
ones; ``info["legal_moves"]`` names them. A masked-out action changes
nothing, earns nothing and sets ``info["invalid_action"]``.

Reward (the paper's, section 3): after a move, ``c / T`` where ``T`` is the
measured time of the program after the move (compiled for this CPU, checked
against the kernel, median of the timed runs; a program met before is not
run again) and ``c`` the starting kernel's time, so a reward is the speedup
over the starting kernel. A program that fails its check (or crashes, or
times out) ends the episode with reward 0. Stop earns 0. Episodes are
truncated after `max_steps` moves.
"""

from __future__ import annotations

import math
import re
import string
from typing import Any, Optional, Union

import gymnasium
import numpy as np
from gymnasium import spaces

import perfdojo

#: Every character the text form uses.
TEXT_CHARSET = frozenset(string.ascii_letters + string.digits + string.punctuation + " \n")

#: Names of the entries of `program_features`.
FEATURE_NAMES = (
    "operations",
    "scopes",
    "max_depth",
    "sequential_scopes",
    "unrolled_scopes",
    "parallel_scopes",
    "vector_scopes",
    "gpu_scopes",
    "buffers",
    "temporaries",
    "log2_stored_elements",
    "reductions",
    "moves_taken",
)

#: Upper bound of every feature (counts of a program's parts, log2 sizes).
FEATURE_BOUND = 1e6

_MAPPING = re.compile(r"^\d+(?::([upvgbw]))?$")


def program_features(text: str, moves_taken: int = 0) -> np.ndarray:
    """A fixed-length numeric encoding of a program's text form: counts of
    operations, of scopes by mapping, the deepest nest, buffers and
    temporaries, log2 of the elements stored, reductions, moves taken."""
    ops = scopes = depth = reductions = 0
    mapping = {None: 0, "u": 0, "p": 0, "v": 0, "gpu": 0}
    buffers = temporaries = 0
    stored = 0.0
    for line in text.splitlines():
        tokens = line.split()
        if not tokens or tokens[0] == "kernel":
            continue
        if tokens[0] in ("in", "out", "tmp"):
            buffers += 1
            temporaries += tokens[0] == "tmp"
            dims = line[line.index("[") + 1 : line.index("]")].split(",")
            count = 1
            for d in dims:
                size, _, reuse = d.strip().partition(":")
                count *= int(reuse or size)
            stored += count
            continue
        ops += 1
        positions = tokens[:-1]
        depth = max(depth, len(positions))
        for p in positions:
            m = _MAPPING.match(p)
            if not m:
                continue  # a bar: a scope opened above
            scopes += 1
            kind = m.group(1)
            mapping["gpu" if kind in ("g", "b", "w") else kind] += 1
        statement = tokens[-1]
        reductions += any(a in statement for a in ("]+=", "]*=", "]max=", "]min="))
    features = np.array(
        [
            ops,
            scopes,
            depth,
            mapping[None],
            mapping["u"],
            mapping["p"],
            mapping["v"],
            mapping["gpu"],
            buffers,
            temporaries,
            math.log2(stored) if stored > 0 else 0.0,
            reductions,
            moves_taken,
        ],
        dtype=np.float32,
    )
    return np.minimum(features, FEATURE_BOUND)


class PerfDojoEnv(gymnasium.Env):
    """PerfDojo's game for Gymnasium; see the module's documentation.

    Args:
        kernel: a `perfdojo.Kernel`, or the path of a ``.pd``/``.mlir`` file.
        max_actions: the largest number of legal moves offered at once.
        max_steps: moves per episode before truncation.
        observation: ``"text"`` or ``"dict"`` (text plus features).
        max_text_length: the observation space's longest text.
        threads, repetitions, warmup, time_limit, tolerance, database:
            how programs are measured (see `perfdojo.Environment`).
        render_mode: ``"ansi"`` (the text form) or None.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        kernel: Union["perfdojo.Kernel", str],
        *,
        max_actions: int = 512,
        max_steps: int = 64,
        observation: str = "text",
        max_text_length: int = 1 << 16,
        threads: int = 1,
        repetitions: int = 3,
        warmup: int = 1,
        time_limit: float = 60.0,
        tolerance: float = 2e-3,
        database: Optional[str] = None,
        render_mode: Optional[str] = None,
    ):
        if observation not in ("text", "dict"):
            raise ValueError(f"observation must be 'text' or 'dict', not {observation!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be 'ansi' or None, not {render_mode!r}")
        if max_actions < 1 or max_steps < 1:
            raise ValueError("max_actions and max_steps must be at least 1")
        self.game = perfdojo.Environment(
            kernel,
            threads=threads,
            warmup=warmup,
            repetitions=repetitions,
            time_limit=time_limit,
            tolerance=tolerance,
            database=database,
        )
        self.max_actions = max_actions
        self.max_steps = max_steps
        self.observation_mode = observation
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(max_actions + 1)
        text = spaces.Text(
            max_length=max_text_length, min_length=1, charset="".join(sorted(TEXT_CHARSET))
        )
        if observation == "text":
            self.observation_space = text
        else:
            self.observation_space = spaces.Dict(
                {
                    "text": text,
                    "features": spaces.Box(
                        0.0, FEATURE_BOUND, shape=(len(FEATURE_NAMES),), dtype=np.float32
                    ),
                }
            )
        self._start_seconds: Optional[float] = None
        self._legal: list[perfdojo.Move] = []
        self._steps = 0

    # -- helpers ----------------------------------------------------------
    @property
    def start_seconds(self) -> float:
        """The starting kernel's time, c in the reward c / T (measured once)."""
        if self._start_seconds is None:
            m = self.game.measure_start()
            if not m.ok:
                raise perfdojo.Error(
                    f"the starting kernel cannot be measured: {m.status}: {m.reason}"
                )
            self._start_seconds = m.seconds
        return self._start_seconds

    def _observe(self):
        text = self.game.text
        if len(text) > self.observation_space_text().max_length:
            raise perfdojo.Error(
                f"the program's text ({len(text)} characters) exceeds max_text_length"
            )
        if self.observation_mode == "text":
            return text
        return {"text": text, "features": program_features(text, len(self.game.moves))}

    def observation_space_text(self) -> spaces.Text:
        space = self.observation_space
        return space if isinstance(space, spaces.Text) else space["text"]

    def action_masks(self) -> np.ndarray:
        """1 where an action is legal now (stop always is)."""
        mask = np.zeros(self.max_actions + 1, dtype=np.int8)
        mask[0] = 1
        mask[1 : 1 + min(len(self._legal), self.max_actions)] = 1
        return mask

    def action_of(self, move: Union[str, "perfdojo.Move"]) -> int:
        """The action that plays `move` now (ValueError if it is not offered)."""
        text = move.text if isinstance(move, perfdojo.Move) else str(move)
        for i, m in enumerate(self._legal[: self.max_actions]):
            if m.text == text:
                return i + 1
        raise ValueError(f"{text} is not among the legal moves offered now")

    def _info(self, **extra) -> dict[str, Any]:
        info = {
            "action_mask": self.action_masks(),
            "legal_moves": [m.text for m in self._legal[: self.max_actions]],
            "moves": self.game.moves,
            "hash": self.game.hash,
        }
        info.update(extra)
        return info

    # -- the Gymnasium API -------------------------------------------------
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        super().reset(seed=seed)
        self.game.reset()
        self._steps = 0
        self._legal = self.game.legal_moves()
        return self._observe(), self._info()

    def step(self, action):
        action = int(action)
        if action == 0:
            return self._observe(), 0.0, True, False, self._info(stopped=True)
        if not (1 <= action <= min(len(self._legal), self.max_actions)):
            truncated = self._steps >= self.max_steps
            return self._observe(), 0.0, False, truncated, self._info(invalid_action=True)
        move = self._legal[action - 1]
        self.game.step(move)
        self._steps += 1
        measurement = self.game.measure()
        if not measurement.ok:
            self._legal = []
            return (
                self._observe(),
                0.0,
                True,
                False,
                self._info(
                    move=move.text, status=measurement.status, reason=measurement.reason
                ),
            )
        reward = self.start_seconds / measurement.seconds if measurement.seconds > 0 else 0.0
        self._legal = self.game.legal_moves()
        terminated = not self._legal
        truncated = self._steps >= self.max_steps
        return (
            self._observe(),
            float(reward),
            terminated,
            truncated,
            self._info(move=move.text, status=measurement.status, seconds=measurement.seconds),
        )

    def render(self):
        if self.render_mode == "ansi":
            return self.game.text
        return None


def expert_moves(kernel: Union["perfdojo.Kernel", str], *, threads: int = 1) -> list[str]:
    """The moves the expert heuristic plays from `kernel` (as
    ``pd-tune --strategy=expert`` does, without measuring anything)."""
    game = perfdojo.Environment(kernel, threads=threads)
    game.apply_heuristic("expert")
    return game.moves


def play(env: PerfDojoEnv, policy, *, seed: Optional[int] = None) -> dict[str, Any]:
    """Plays one episode: `policy(obs, info, env)` returns an action. Returns
    the moves, the rewards, the return and the final program's hash."""
    obs, info = env.reset(seed=seed)
    rewards: list[float] = []
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(obs, info, env))
        if info.get("move"):
            rewards.append(reward)
        if terminated or truncated:
            break
    return {
        "moves": info["moves"],
        "rewards": rewards,
        "return": float(sum(rewards)),
        "hash": info["hash"],
        "text": env.game.text,
    }


def random_policy(rng: np.random.Generator):
    """A policy that plays a uniformly random legal move (never stop)."""

    def policy(obs, info, env):
        legal = np.flatnonzero(info["action_mask"][1:]) + 1
        return int(rng.choice(legal)) if len(legal) else 0

    return policy


def expert_policy(kernel: Union["perfdojo.Kernel", str], *, threads: int = 1):
    """A policy that plays the expert's moves, then stops."""
    moves = expert_moves(kernel, threads=threads)

    def policy(obs, info, env):
        done = len(info["moves"])
        return env.action_of(moves[done]) if done < len(moves) else 0

    return policy
