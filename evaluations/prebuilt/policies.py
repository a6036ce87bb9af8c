"""Reference controllers for the prebuilt classic-control scenarios.

Every controller here is plain numpy (no torch, no rlmesh): each one maps a
single observation (a 1-D numpy array, exactly as returned by the gymnasium
env) to an action that can be passed straight to ``env.step``. They are the
"known-good" agents the platform uses to sanity-check an environment
end-to-end; the success rates quoted in each docstring were measured with
``training/eval_policies.py`` over 100 episodes (reset seeds 0..99) using
gymnasium 1.4.0 and its default time limits.

``cartpole_pd`` (CartPole-v1)
    A linear (PD-style) state-feedback rule: push right iff
    ``theta + 0.5*theta_dot + 0.01*x + 0.1*x_dot > 0``. The pole terms keep
    the pole upright; the small cart terms stop the cart drifting off the
    track. Balances for the full 500 steps in every episode.

``mountaincar_energy`` (MountainCar-v0)
    Energy pumping: always accelerate in the direction the car is already
    moving, so every push adds kinetic energy until the car clears the right
    hill. Reaches the flag well within the 200-step limit.

``acrobot_torque`` (Acrobot-v1)
    Energy pumping for the two-link pendulum: apply torque with the sign of
    ``omega1 + 0.5*omega2`` (a weighted joint velocity), which injects energy
    into the swing until the tip crosses the target height.

``pendulum_swingup`` (Pendulum-v1)
    Classic energy-shaping swing-up. With gymnasium's dynamics
    (``theta_ddot = 15*sin(theta) + 3*u``, theta = 0 upright) the energy
    ``E = 0.5*omega**2 + 15*(cos(theta) - 1)`` is 0 at rest upright and obeys
    ``dE/dt = 3*u*omega``; the controller applies ``u = -E*omega`` to drive E
    to 0, then switches to a PD stabiliser once ``cos(theta) > 0.9``. Torque is
    clipped to [-2, 2].

``lunarlander_heuristic`` (LunarLander-v3, discrete)
    Delegates to the hand-written heuristic that ships with gymnasium
    (``gymnasium.envs.box2d.lunar_lander.heuristic``): a PD controller on
    angle and hover height, converted to the four discrete engine actions.

``NumpyMLPPolicy`` (CartPole-v1 by default)
    A numpy forward pass of an MLP actor exported from a PyTorch policy; the
    shipped weights (``PPO_CARTPOLE_WEIGHTS``) are the deterministic actor of
    a stable-baselines3 PPO agent trained by ``training/train_ppo_cartpole.py``.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

__all__ = [
    "PPO_CARTPOLE_WEIGHTS",
    "NumpyMLPPolicy",
    "acrobot_torque",
    "cartpole_pd",
    "lunarlander_heuristic",
    "mountaincar_energy",
    "pendulum_swingup",
]

#: Exported actor of the PPO CartPole agent (see ``training/README.md``).
PPO_CARTPOLE_WEIGHTS = Path(__file__).with_name("weights") / "ppo_cartpole_actor.npz"


def cartpole_pd(obs) -> int:
    """Linear state-feedback controller for CartPole-v1.

    Observation: ``[x, x_dot, theta, theta_dot]`` (cart position, cart
    velocity, pole angle in rad, pole angular velocity).
    Action: ``1`` (push right) iff
    ``theta + 0.5*theta_dot + 0.01*x + 0.1*x_dot > 0``, else ``0`` (push left).

    Measured: 100% success (criterion: episode reaches the 500-step limit,
    i.e. return == 500), mean return 500.0 over 100 seeds.
    """
    x, x_dot, theta, theta_dot = (float(v) for v in np.asarray(obs).reshape(-1)[:4])
    return int(theta + 0.5 * theta_dot + 0.01 * x + 0.1 * x_dot > 0.0)


def mountaincar_energy(obs) -> int:
    """Energy-pumping controller for MountainCar-v0.

    Observation: ``[position, velocity]``.
    Action: ``2`` (accelerate right) if ``velocity >= 0`` else ``0``
    (accelerate left); action ``1`` (no push) is never used.

    Measured: 100% success (criterion: terminated, i.e. reached the flag at
    position >= 0.5 before the 200-step limit), mean return -120.0 over 100
    seeds (episode length 113-124 steps).
    """
    velocity = float(np.asarray(obs).reshape(-1)[1])
    return 2 if velocity >= 0.0 else 0


def acrobot_torque(obs) -> int:
    """Energy-pumping controller for Acrobot-v1.

    Observation: ``[cos th1, sin th1, cos th2, sin th2, omega1, omega2]``.
    Action: ``2`` (+1 torque on the actuated joint) if
    ``omega1 + 0.5*omega2 > 0`` else ``0`` (-1 torque); action ``1`` (no
    torque) is never used.

    Measured: 92% success (criterion: terminated, i.e. the tip swung above the
    target height before the 500-step limit), mean return -169.0 over 100
    seeds.
    """
    o = np.asarray(obs).reshape(-1)
    return 2 if float(o[4]) + 0.5 * float(o[5]) > 0.0 else 0


def pendulum_swingup(obs) -> np.ndarray:
    """Energy-shaping swing-up plus PD balance for Pendulum-v1.

    Observation: ``[cos theta, sin theta, theta_dot]`` with ``theta = 0``
    upright.
    Action: ``np.ndarray`` of shape ``(1,)``, dtype float32, torque clipped to
    ``[-2, 2]``. Away from the top (``cos theta <= 0.9``) it uses
    ``u = -E*omega`` with ``E = 0.5*omega**2 + 15*(cos theta - 1)`` (so
    ``dE/dt = 3*u*omega = -3*E*omega**2`` drives E towards the upright energy
    0); near the top it uses the PD law ``u = -10*theta - 2*omega``.

    Measured: 76% success (criterion: episode return > -200 over the 200-step
    episode), mean return -142.4 over 100 seeds. The failures are mostly
    starts near the bottom, where the torque limit forces several pumping
    swings and the angle cost alone exceeds 200.
    """
    o = np.asarray(obs, dtype=np.float64).reshape(-1)
    cos_t, sin_t, omega = float(o[0]), float(o[1]), float(o[2])
    theta = np.arctan2(sin_t, cos_t)
    if cos_t > 0.9:
        u = -10.0 * theta - 2.0 * omega
    else:
        energy = 0.5 * omega * omega + 15.0 * (cos_t - 1.0)
        u = -energy * omega
    return np.clip(np.array([u], dtype=np.float32), -2.0, 2.0)


# gymnasium's heuristic only reads ``env.unwrapped.continuous`` from its env
# argument, so a tiny stand-in avoids needing a live env object.
_DISCRETE_LANDER = SimpleNamespace(unwrapped=SimpleNamespace(continuous=False))


def lunarlander_heuristic(obs) -> int:
    """gymnasium's built-in heuristic lander for LunarLander-v3 (discrete).

    Observation: ``[x, y, vx, vy, angle, angular_vel, leg1_contact,
    leg2_contact]``.
    Action: ``0`` noop, ``1`` fire left engine, ``2`` fire main engine, ``3``
    fire right engine. Delegates to
    ``gymnasium.envs.box2d.lunar_lander.heuristic(env, s)``, whose ``env``
    argument is only used for ``env.unwrapped.continuous``; a stand-in with
    ``continuous=False`` is passed. Requires gymnasium's box2d extra.

    Measured: 91% success (criterion: episode return >= 200), mean return
    252.8 over 100 seeds.
    """
    from gymnasium.envs.box2d.lunar_lander import heuristic

    return int(heuristic(_DISCRETE_LANDER, np.asarray(obs).reshape(-1)))


class NumpyMLPPolicy:
    """Deterministic numpy forward pass of an exported MLP actor.

    The ``.npz`` file holds float32 arrays ``W0, b0, W1, b1, ..., Wn, bn``
    where ``Wi`` has shape ``(in_features, out_features)`` (i.e. the transpose
    of ``torch.nn.Linear.weight``) and ``bi`` has shape ``(out_features,)``.
    The forward pass is ``h = tanh(h @ Wi + bi)`` for every hidden layer and
    plain ``logits = h @ Wn + bn`` for the last; the action is
    ``argmax(logits)``. For ``PPO_CARTPOLE_WEIGHTS`` the layout is Linear
    4->64, tanh, Linear 64->64, tanh, Linear 64->2 (keys W0 (4,64), b0 (64,),
    W1 (64,64), b1 (64,), W2 (64,2), b2 (2,)).

    Observation (CartPole-v1 weights): ``[x, x_dot, theta, theta_dot]``.
    Action: ``int`` in ``{0, 1}`` (0 push left, 1 push right).

    Measured with ``PPO_CARTPOLE_WEIGHTS``: 100% success (criterion: episode
    reaches the 500-step limit, i.e. return == 500), mean return 500.0 over
    100 seeds.
    """

    def __init__(self, path: str | Path = PPO_CARTPOLE_WEIGHTS):
        self.path = Path(path)
        with np.load(self.path) as data:
            n_layers = sum(1 for k in data.files if k.startswith("W"))
            if n_layers == 0:
                raise ValueError(f"{self.path}: no W0.. weight arrays found")
            self.weights = [np.asarray(data[f"W{i}"], dtype=np.float32) for i in range(n_layers)]
            self.biases = [np.asarray(data[f"b{i}"], dtype=np.float32) for i in range(n_layers)]
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            if w.ndim != 2 or b.shape != (w.shape[1],):
                raise ValueError(f"{self.path}: layer {i} has W{w.shape} b{b.shape}")
            if i and w.shape[0] != self.weights[i - 1].shape[1]:
                raise ValueError(f"{self.path}: layer {i} input size mismatch")

    @property
    def obs_dim(self) -> int:
        return int(self.weights[0].shape[0])

    @property
    def n_actions(self) -> int:
        return int(self.weights[-1].shape[1])

    def logits(self, obs) -> np.ndarray:
        """Action logits for one observation (shape ``(obs_dim,)``) or a batch
        (shape ``(N, obs_dim)``)."""
        h = np.asarray(obs, dtype=np.float32)
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ w + b
            if i < last:
                h = np.tanh(h)
        return h

    def __call__(self, obs) -> int:
        """Greedy action (argmax of the logits) for one observation."""
        return int(np.argmax(self.logits(np.asarray(obs).reshape(-1))))
