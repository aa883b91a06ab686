"""perfdojo.gym: the PerfDojo-v0 Gymnasium environment."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import perfdojo
from conftest import ROOT
from perfdojo.gym import PerfDojoEnv, expert_moves, expert_policy, play, random_policy


def test_make_the_suite_softmax():
    env = gymnasium.make("PerfDojo-v0", kernel=str(ROOT / "kernels" / "softmax.pd"))
    obs, info = env.reset()
    assert obs.startswith("kernel softmax\n")
    assert info["action_mask"][0] == 1 and info["action_mask"].sum() == len(info["legal_moves"]) + 1


@pytest.mark.parametrize("observation", ["text", "dict"])
def test_check_env(softmax_file, observation):
    check_env(PerfDojoEnv(str(softmax_file), observation=observation), skip_render_check=True)


def test_random_episode(softmax_file):
    env = PerfDojoEnv(str(softmax_file), max_steps=6, repetitions=2)
    episode = play(env, random_policy(np.random.default_rng(0)), seed=0)
    assert len(episode["moves"]) == len(episode["rewards"]) == 6
    assert all(r > 0 for r in episode["rewards"])
    # The moves were legal: they replay.
    game = perfdojo.Environment(str(softmax_file))
    game.replay(episode["moves"])
    assert game.hash == episode["hash"]


def test_expert_episode_reaches_the_experts_program(softmax_file):
    env = PerfDojoEnv(str(softmax_file), repetitions=2)
    episode = play(env, expert_policy(str(softmax_file)), seed=0)
    expected = expert_moves(str(softmax_file))
    assert episode["moves"] == expected
    game = perfdojo.Environment(str(softmax_file))
    game.apply_heuristic("expert")
    assert episode["hash"] == game.hash
    # The expert's program is faster than the kernel: its last reward,
    # c / T, is a speedup above 1.
    assert episode["rewards"][-1] > 1


def test_stop_invalid_and_failed_actions(softmax_file):
    env = PerfDojoEnv(str(softmax_file), max_actions=4)
    obs, info = env.reset()
    assert len(info["legal_moves"]) == 4 and info["action_mask"].sum() == 5
    # A masked-out action changes nothing.
    env.game.replay([])
    obs2, reward, terminated, truncated, info2 = env.step(4)
    assert reward > 0
    _, _, _, _, info3 = env.step(env.action_space.n - 1)
    assert env.action_space.n == 5
    obs, info = env.reset()
    _, reward, terminated, _, info = env.step(0)
    assert terminated and reward == 0 and info["stopped"]
    # A program that cannot be measured in time ends the episode unrewarded.
    slow = PerfDojoEnv(str(softmax_file), time_limit=1e-9)
    slow._start_seconds = 1.0
    slow.reset()
    _, reward, terminated, _, info = slow.step(1)
    assert terminated and reward == 0 and info["status"] != "ok"


def test_invalid_action_is_a_noop(softmax_file):
    env = PerfDojoEnv(str(softmax_file), max_actions=512)
    obs, info = env.reset()
    n = len(info["legal_moves"])
    obs2, reward, terminated, truncated, info2 = env.step(n + 1)
    assert obs2 == obs and reward == 0 and info2["invalid_action"] and not terminated
