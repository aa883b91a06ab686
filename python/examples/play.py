#!/usr/bin/env python3
"""Plays PerfDojo-v0 episodes with a random policy and with the expert
heuristic, and prints each episode's moves, return and final speedup.
Trains nothing: a starting point for an RL agent.

    . .venv/bin/activate
    python3 python/examples/play.py kernels/softmax.pd --episodes 3 --max-steps 8
"""

import argparse
import time

import gymnasium
import numpy as np

import perfdojo  # registers PerfDojo-v0
from perfdojo.gym import expert_policy, play, random_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernel", help="a .pd or .mlir kernel")
    parser.add_argument("--episodes", type=int, default=3, help="random episodes")
    parser.add_argument("--max-steps", type=int, default=16, help="moves per episode")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    env = gymnasium.make(
        "PerfDojo-v0", kernel=args.kernel, max_steps=args.max_steps, threads=args.threads
    ).unwrapped
    rng = np.random.default_rng(args.seed)
    runs = [("random", random_policy(rng))] * args.episodes
    runs.append(("expert", expert_policy(args.kernel, threads=args.threads)))
    # The expert may need more moves than random episodes are given.
    for i, (name, policy) in enumerate(runs):
        if name == "expert":
            env.max_steps = 1 << 16
        start = time.perf_counter()
        episode = play(env, policy, seed=args.seed + i)
        seconds = time.perf_counter() - start
        final = episode["rewards"][-1] if episode["rewards"] else 0.0
        print(
            f"{name:6} episode {i}: {len(episode['moves'])} moves, return "
            f"{episode['return']:.2f}, final speedup {final:.2f}x, {seconds:.1f} s"
        )
        print("   ", ", ".join(episode["moves"]) or "(no move)")


if __name__ == "__main__":
    main()
