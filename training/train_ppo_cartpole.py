"""Train PPO on CartPole-v1 and export its actor as a numpy ``.npz``.

Run from a throwaway venv (never the project venv)::

    python3 -m venv /tmp/ppo-venv
    /tmp/ppo-venv/bin/pip install -r training/requirements.txt
    /tmp/ppo-venv/bin/python training/train_ppo_cartpole.py

Hyperparameters follow the RL-Zoo ``CartPole-v1`` PPO entry: 8 envs,
n_steps 32, batch 256, 20 epochs, gamma 0.98, GAE lambda 0.8, linear learning
rate schedule from 1e-3, clip range 0.2, ent_coef 0, 100k timesteps, default
``MlpPolicy`` (separate 64-64 tanh actor and critic).

The deterministic actor (``mlp_extractor.policy_net`` + ``action_net``) is
written to ``evaluations/prebuilt/weights/ppo_cartpole_actor.npz`` in the
layout read by ``evaluations.prebuilt.policies.NumpyMLPPolicy`` (``Wi`` of
shape (in, out), ``bi`` of shape (out,), tanh between layers, argmax at the
end). The script then checks that the numpy forward agrees with torch on
5,000 random observations and evaluates the exported policy for 100 episodes.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

REPO = Path(__file__).resolve().parents[1]
POLICIES_PY = REPO / "evaluations" / "prebuilt" / "policies.py"
DEFAULT_OUT = REPO / "evaluations" / "prebuilt" / "weights" / "ppo_cartpole_actor.npz"


def linear_schedule(initial: float):
    """SB3 schedule: ``progress_remaining`` goes 1 -> 0 over training."""

    def schedule(progress_remaining: float) -> float:
        return progress_remaining * initial

    return schedule


def load_numpy_policy_class():
    """Import NumpyMLPPolicy straight from its file (no Django package import)."""
    spec = importlib.util.spec_from_file_location("_prebuilt_policies", POLICIES_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.NumpyMLPPolicy


def export_actor(model: PPO) -> dict[str, np.ndarray]:
    """Collect the Linear layers of policy_net then action_net as W (in,out), b."""
    layers = [m for m in model.policy.mlp_extractor.policy_net if isinstance(m, torch.nn.Linear)]
    acts = [m for m in model.policy.mlp_extractor.policy_net if not isinstance(m, torch.nn.Linear)]
    assert all(isinstance(a, torch.nn.Tanh) for a in acts), acts
    layers.append(model.policy.action_net)
    arrays: dict[str, np.ndarray] = {}
    for i, lin in enumerate(layers):
        arrays[f"W{i}"] = lin.weight.detach().cpu().numpy().T.astype(np.float32).copy()
        arrays[f"b{i}"] = lin.bias.detach().cpu().numpy().astype(np.float32).copy()
    return arrays


def check_agreement(model: PPO, np_policy, n: int, seed: int) -> None:
    """Compare numpy vs torch logits/actions on random observations."""
    rng = np.random.default_rng(seed)
    # Cover (and exceed) the region CartPole actually visits before termination.
    high = np.array([4.8, 5.0, 0.42, 5.0], dtype=np.float32)
    obs = rng.uniform(-high, high, size=(n, 4)).astype(np.float32)
    with torch.no_grad():
        t_obs = torch.as_tensor(obs)
        latent = model.policy.mlp_extractor.forward_actor(t_obs)
        t_logits = model.policy.action_net(latent).numpy()
        t_actions, _ = model.predict(obs, deterministic=True)
    n_logits = np_policy.logits(obs)
    n_actions = np.array([np_policy(o) for o in obs])
    max_diff = float(np.max(np.abs(t_logits - n_logits)))
    mismatches = int(np.sum(n_actions != t_actions))
    # A mismatch is only tolerable on an (almost) exact tie of the two logits.
    gap = np.abs(t_logits[:, 0] - t_logits[:, 1])
    bad = int(np.sum((n_actions != t_actions) & (gap > 1e-5)))
    print(f"agreement on {n} random obs: max |logit diff| = {max_diff:.2e} "
          f"(max |logit| = {np.max(np.abs(t_logits)):.1f}), "
          f"action mismatches = {mismatches} (non-tie: {bad})")
    scale = max(1.0, float(np.max(np.abs(t_logits))))
    assert max_diff < 1e-5 * scale, (max_diff, scale)
    assert bad == 0, bad


def evaluate(policy, episodes: int) -> tuple[float, float]:
    env = gym.make("CartPole-v1")
    returns = []
    for seed in range(episodes):
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            obs, r, term, trunc, _ = env.step(policy(obs))
            total += float(r)
            done = term or trunc
        returns.append(total)
    env.close()
    returns = np.array(returns)
    return float(np.mean(returns >= 500)), float(returns.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timesteps", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, gymnasium {gym.__version__}, numpy {np.__version__}")

    env = make_vec_env("CartPole-v1", n_envs=8, seed=args.seed)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=32,
        batch_size=256,
        n_epochs=20,
        gamma=0.98,
        gae_lambda=0.8,
        learning_rate=linear_schedule(1e-3),
        clip_range=0.2,
        ent_coef=0.0,
        seed=args.seed,
        device="cpu",
        verbose=0,
    )
    t0 = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    wall = time.perf_counter() - t0
    print(f"trained {args.timesteps} timesteps in {wall:.1f} s wall")

    arrays = export_actor(model)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, **arrays)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    for k, v in arrays.items():
        print(f"  {k}: {v.shape} {v.dtype}")

    np_policy = load_numpy_policy_class()(args.out)
    check_agreement(model, np_policy, n=5_000, seed=args.seed + 1)

    success, mean_ret = evaluate(np_policy, episodes=100)
    print(f"numpy policy, CartPole-v1, 100 seeds: success(return==500) = {success:.0%}, "
          f"mean return = {mean_ret:.1f}")


if __name__ == "__main__":
    main()
