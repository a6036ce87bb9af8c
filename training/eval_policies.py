"""Evaluate the prebuilt numpy controllers (and a random baseline) in-process.

Run with the project venv from the repository root::

    .venv/bin/python training/eval_policies.py [--episodes 100]

Each policy plays ``--episodes`` episodes of its gymnasium env (reset seeds
0..N-1, gymnasium's default time limits) and the script prints, per env and
policy, the success rate under the env's criterion and the mean return. The
random baseline samples from ``env.action_space`` (seeded with the episode
seed).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # keep evaluations/ free of __pycache__
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from evaluations.prebuilt import policies  # noqa: E402

# env id -> (criterion description, success(return, terminated, truncated))
CRITERIA = {
    "CartPole-v1": ("return == 500 (full episode)", lambda ret, term, trunc: ret >= 500),
    "MountainCar-v0": ("terminated (flag reached) <= 200 steps", lambda ret, term, trunc: term),
    "Acrobot-v1": ("terminated (tip up) < 500 steps", lambda ret, term, trunc: term),
    "Pendulum-v1": ("return > -200", lambda ret, term, trunc: ret > -200),
    "LunarLander-v3": ("return >= 200", lambda ret, term, trunc: ret >= 200),
}


def rollout(env_id: str, policy, episodes: int) -> tuple[float, float]:
    """Return (success rate, mean return); ``policy=None`` means random."""
    _, success = CRITERIA[env_id]
    env = gym.make(env_id)
    wins, returns = 0, []
    for seed in range(episodes):
        obs, _ = env.reset(seed=seed)
        env.action_space.seed(seed)
        total, term, trunc = 0.0, False, False
        while not (term or trunc):
            action = env.action_space.sample() if policy is None else policy(obs)
            obs, reward, term, trunc, _ = env.step(action)
            total += float(reward)
        wins += bool(success(total, term, trunc))
        returns.append(total)
    env.close()
    return wins / episodes, float(np.mean(returns))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100)
    args = parser.parse_args()

    ppo = policies.NumpyMLPPolicy(policies.PPO_CARTPOLE_WEIGHTS)
    runs = [
        ("CartPole-v1", "cartpole_pd", policies.cartpole_pd),
        ("CartPole-v1", "NumpyMLPPolicy (PPO)", ppo),
        ("CartPole-v1", "random", None),
        ("MountainCar-v0", "mountaincar_energy", policies.mountaincar_energy),
        ("MountainCar-v0", "random", None),
        ("Acrobot-v1", "acrobot_torque", policies.acrobot_torque),
        ("Acrobot-v1", "random", None),
        ("Pendulum-v1", "pendulum_swingup", policies.pendulum_swingup),
        ("Pendulum-v1", "random", None),
        ("LunarLander-v3", "lunarlander_heuristic", policies.lunarlander_heuristic),
        ("LunarLander-v3", "random", None),
    ]
    header = f"| {'env':<15}| {'policy':<22}| {'success criterion':<40}| {'success':>8} | {'mean return':>11} |"
    print(f"{args.episodes} episodes per row (reset seeds 0..{args.episodes - 1}), "
          f"gymnasium {gym.__version__}\n")
    print(header)
    print("|" + "|".join("-" * n for n in (16, 23, 41, 10, 13)) + "|")
    t0 = time.perf_counter()
    for env_id, name, policy in runs:
        rate, mean_ret = rollout(env_id, policy, args.episodes)
        print(f"| {env_id:<15}| {name:<22}| {CRITERIA[env_id][0]:<40}| {rate:>8.0%} | {mean_ret:>11.1f} |")
    print(f"\n({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
