"""Prebuilt ``prebuilt/smolvla/libero``: LeRobot's own SmolVLA policy on LIBERO, served from ``.venv-lerobot``.

lerobot 0.4.4 pins ``torch<2.11`` and its own transformers, so the model runs in a venv of its own
(``scripts/setup-lerobot.sh``)::

    RLMESH_SMOLVLA_LIBERO_DIR=/srv/smolvla/libero RLMESH_SMOLVLA_BACKBONE_DIR=/srv/smolvla/smolvlm2-500m \\
        .venv-lerobot/bin/python -m rlmesh.serve evaluations.prebuilt.lerobot.smolvla:SmolVLALibero --address 127.0.0.1:7310

The weights are the operator's (docs/running/smolvla-weights.md): a policy checkpoint folder (``config.json``,
``model.safetensors``, ``policy_preprocessor.json``, ``policy_postprocessor.json`` and their statistics files) and
the SmolVLM2 backbone's config, tokenizer and processor files. The platform refuses the model at
``models[i].model`` while they are missing (:func:`weights_problem`); nothing here ever builds random weights.

This module imports neither Django nor torch at import time (torch and lerobot only inside :meth:`load`), so the
platform can import :data:`POLICY_SETTING`, :data:`BACKBONE_SETTING`, :data:`DOCS_PAGE` and
:func:`weights_problem`.

Each observation is mapped as lerobot's LIBERO evaluation (``lerobot_eval.rollout``) maps one: lerobot's
``preprocess_observation`` (``pixels.image`` / ``pixels.image2`` uint8 H×W×3 → ``observation.images.image`` /
``.image2`` float 1×3×H×W in [0, 1]; ``agent_pos`` (8) → ``observation.state``), the instruction as ``task``, the
checkpoint's saved preprocessor (newline, tokenizer, device, normalisation), ``select_action`` and the saved
postprocessor (unnormalisation). The env side of that pipeline, ``LiberoProcessorStep`` (LIBERO's renders rotated
by 180°; end-effector position, axis-angle and gripper as the 8-float state), is what ``prebuilt/libero`` already
delivers, so it is not applied twice: a model-side flip would show the policy upside-down images. The action is 7
float32 (delta end-effector pose + gripper), clipped to [-1, 1].

SmolVLA plans a chunk of ``n_action_steps`` actions (50 in the published checkpoints) and replays it from a queue.
The queue is kept **per episode** (rlmesh's predict ``context``: its ``episode_id`` and ``state``), so one model
server can serve the concurrent episodes of several env sessions: each episode starts with an empty queue and never
sees another's actions, and its entry is dropped at the episode's end (``on_episode_end``). The flow-matching noise
of each chunk is drawn from a generator seeded by the episode seed, so an episode's actions are a function of its
seed and observations.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import rlmesh

#: Setting (and environment variable of the model server) naming the SmolVLA LIBERO checkpoint folder.
POLICY_SETTING = "RLMESH_SMOLVLA_LIBERO_DIR"
#: Setting naming the SmolVLM2 backbone folder (config, tokenizer, processor files).
BACKBONE_SETTING = "RLMESH_SMOLVLA_BACKBONE_DIR"
#: The operator's page on installing the weights.
DOCS_PAGE = "docs/running/smolvla-weights.md"
#: What each folder must hold (the processors' ``*.safetensors`` statistics are named in their JSON files).
POLICY_FILES = ("config.json", "model.safetensors", "policy_preprocessor.json", "policy_postprocessor.json")
BACKBONE_FILES = ("config.json", "tokenizer_config.json", "processor_config.json")
#: This model server, as the catalog's ``prebuilt/smolvla/libero`` serves it.
SMOLVLA_SOURCE = "python+lerobot://evaluations.prebuilt.lerobot.smolvla:SmolVLALibero"
#: Variables that keep huggingface_hub and transformers off the network.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "HF_HUB_DISABLE_TELEMETRY": "1"}


def pin_threads(torch, threads) -> None:
    """Run torch's CPU operators on ``threads`` (≥ 1) threads; 0 leaves torch's default (one per core). The count is
    part of what fixes a CPU episode's bits: a matrix product's sums split by thread, so measured on the tiny ACT the
    same episode's actions differ between 1 and 2 threads; the platform passes ``RLMESH_MODEL_THREADS`` and records it
    on the workload, so a host with more cores runs the same episode."""
    if int(threads) >= 1:
        torch.set_num_threads(int(threads))
#: Observation keys the instruction may arrive under (else: the observation's one text leaf).
INSTRUCTION_KEYS = ("task", "instruction", "language_instruction", "task_description", "prompt")


def weights_problem(policy_dir: str | os.PathLike | None, backbone_dir: str | os.PathLike | None) -> str | None:
    """Why the SmolVLA LIBERO weights cannot be loaded from these folders (unset, missing, or lacking files), in
    words naming the setting and :data:`DOCS_PAGE`; None when both folders hold the files lerobot reads."""
    problems = []
    for setting, folder, files in ((POLICY_SETTING, policy_dir, POLICY_FILES),
                                   (BACKBONE_SETTING, backbone_dir, BACKBONE_FILES)):
        if not folder:
            problems.append(f"{setting} is not set")
            continue
        path = Path(folder)
        if not path.is_dir():
            problems.append(f"{setting}={folder} is not a folder")
            continue
        missing = [f for f in files if not (path / f).is_file()]
        if missing:
            problems.append(f"{setting}={folder} lacks {', '.join(missing)}")
    if not problems:
        return None
    return (f"the SmolVLA LIBERO weights are not installed on this platform ({'; '.join(problems)}); "
            f"an operator installs them as the manual's page /docs/running/smolvla-weights/ ({DOCS_PAGE}) describes")


def instruction_of(observation) -> str:
    """The task instruction in a LIBERO observation: the first of :data:`INSTRUCTION_KEYS` present, else its only
    text leaf; ``""`` when there is none."""
    candidates = [observation[k] for k in INSTRUCTION_KEYS if k in observation]
    if not candidates:
        candidates = [v for v in observation.values() if _text(v) is not None]
    return (_text(candidates[0]) or "") if candidates else ""


def _text(value) -> str | None:
    if isinstance(value, np.ndarray) and value.dtype.kind in "USO" and value.size == 1:
        value = value.reshape(()).item()
    if isinstance(value, bytes):
        return value.decode()
    return value if isinstance(value, str) else None


class SmolVLALibero(rlmesh.numpy.Model):
    """LeRobot's SmolVLA (``SmolVLAPolicy.from_pretrained``) on LIBERO observations; see the module docstring.

    Observation: ``pixels`` ``{image: agentview, image2: wrist}`` uint8 (256, 256, 3), rotated 180° as LeRobot's
    LIBERO pipeline feeds them; ``agent_pos`` float (8,); the instruction as text. Action: float32 (7,) in [-1, 1].
    ``load`` raises ``FileNotFoundError`` (:func:`weights_problem`) when the folders lack the weights.
    """

    workflow_edition = "2026.06"
    spec = rlmesh.NO_ADAPTER  # reads LeRobot's LIBERO observation keys itself

    def load(self, policy_dir: str = "", backbone_dir: str = "", device: str = "", threads: int = 0) -> None:
        """Load the checkpoint in ``policy_dir`` (default: ``$RLMESH_SMOLVLA_LIBERO_DIR``) with its backbone files
        from ``backbone_dir`` (default: ``$RLMESH_SMOLVLA_BACKBONE_DIR``), offline, on ``device`` (default: CUDA
        when ``torch.cuda.is_available()``, else CPU), on ``threads`` CPU threads (:func:`pin_threads`)."""
        policy_dir = policy_dir or os.environ.get(POLICY_SETTING, "")
        backbone_dir = backbone_dir or os.environ.get(BACKBONE_SETTING, "")
        problem = weights_problem(policy_dir, backbone_dir)
        if problem:
            raise FileNotFoundError(problem)
        os.environ.update(OFFLINE_ENV)
        import torch
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy
        from lerobot.processor import PolicyProcessorPipeline
        from lerobot.processor.converters import policy_action_to_transition, transition_to_policy_action

        self.torch = torch
        pin_threads(torch, threads)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        config = PreTrainedConfig.from_pretrained(policy_dir)
        # The checkpoint's weights include the VLM's: build the backbone from its local config, load nothing else.
        config.vlm_model_name, config.load_vlm_weights, config.device = str(backbone_dir), False, device
        self.policy = SmolVLAPolicy.from_pretrained(policy_dir, config=config).to(device).eval()
        self.preprocessor = PolicyProcessorPipeline.from_pretrained(
            policy_dir, "policy_preprocessor.json",
            overrides={"tokenizer_processor": {"tokenizer_name": str(backbone_dir)},
                       "device_processor": {"device": device}})
        self.postprocessor = PolicyProcessorPipeline.from_pretrained(
            policy_dir, "policy_postprocessor.json", to_transition=policy_action_to_transition,
            to_output=transition_to_policy_action)
        self.device = None  # numpy model: rlmesh moves nothing; the preprocessor's device step does
        self.torch_device = device
        self._lock = threading.Lock()  # one forward at a time: the policy's queue is swapped per episode

    def batch(self, observation) -> dict:
        """LeRobot's policy input for one observation, before the checkpoint's preprocessor: what
        ``lerobot_eval.rollout`` builds with ``preprocess_observation`` and the task (``KeyError`` without
        ``pixels`` or ``agent_pos``)."""
        from lerobot.envs.utils import preprocess_observation

        batch = preprocess_observation({
            "pixels": {k: np.ascontiguousarray(v, dtype=np.uint8) for k, v in observation["pixels"].items()},
            "agent_pos": np.asarray(observation["agent_pos"], dtype=np.float32)})
        batch["task"] = [instruction_of(observation)]
        return batch

    def predict(self, observation, context=None):
        """One action (float32 (7,), in [-1, 1]) for ``observation``: the next of the episode's queued chunk, or the
        first of a new chunk when the queue is empty. ``context`` is rlmesh's per-episode context (``episode_seed``,
        ``state``: where the queue lives); without one (an anonymous lane) every call plans afresh."""
        episode = context["state"] if context is not None else {}
        with self._lock, self.torch.inference_mode():
            if "queues" not in episode:
                self.policy.reset()
                episode["queues"] = self.policy._queues
                seed = context.get("episode_seed") if context is not None else None
                episode["noise"] = self.torch.Generator().manual_seed(int(seed) if seed is not None else 0)
            self.policy._queues = episode["queues"]
            noise = None
            if not self.policy._queues["action"]:
                cfg = self.policy.config
                noise = self.torch.randn((1, cfg.chunk_size, cfg.max_action_dim), generator=episode["noise"])
                noise = noise.to(self.torch_device)
            action = self.policy.select_action(self.preprocessor(self.batch(observation)), noise=noise)
            action = self.postprocessor(action)
        return np.clip(action.reshape(-1).float().cpu().numpy(), -1.0, 1.0).astype(np.float32)

    def on_episode_end(self, episode_id: str = "") -> None:
        """Nothing to do: the episode's queue lives in its rlmesh episode state, dropped with it."""
