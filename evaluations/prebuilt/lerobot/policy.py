"""Any LeRobot checkpoint as an rlmesh model on LIBERO (``python+lerobot://evaluations.prebuilt.lerobot.policy:
LeRobotPolicy``, the catalog's ``prebuilt/lerobot/<folder>``), loaded the way LeRobot loads it: the checkpoint
inspected first (:mod:`.checkpoints`: JSON and safetensors only, hub-only files refused), ``PreTrainedConfig.
from_pretrained``, the type's class (``get_policy_class``) and its ``from_pretrained``, then
``make_pre_post_processors`` with the saved pipelines. Runs in ``.venv-lerobot``; torch and lerobot are imported only
in :meth:`LeRobotPolicy.load`.

**Observation → batch**, as ``lerobot_eval.rollout`` builds it: ``preprocess_observation`` of ``pixels`` (``image``,
``image2``) and ``agent_pos`` gives ``observation.images.image``, ``observation.images.image2`` and
``observation.state``; the instruction is the ``task``. A checkpoint whose cameras are named otherwise takes LIBERO's
in order, agentview first (:func:`camera_map`), or as a ``rename_map`` (``{"observation.images.image":
"observation.images.top", …}``) says, applied to the batch.

**Per episode**: each rlmesh episode keeps the policy's action queues (``_queues`` / ``_action_queue``, refilled when
empty), and every new chunk is computed with torch's generator seeded from the episode's seed and the chunk's index,
so an episode's actions depend on its seed alone, whatever other episodes ran in between.

**Batched** (``batch=n`` ≥ 1, the platform's ``RLMESH_MODEL_BATCH``; types in :data:`.batching.BATCHED_TYPES`): an
episode keeps its own chunk of actions; one that needs a new chunk sends its preprocessed observation to a
:class:`~.batching.ChunkBatcher`, which runs ``predict_action_chunk`` on ``n`` rows at once (the free rows padded),
so concurrent episodes share forward passes and each episode's actions stay the same whatever it was batched with.
SmolVLA batches too, with two things held per row that its own ``select_action`` takes from the batch: its prompt
is tokenized to the fixed ``tokenizer_max_length`` (``padding="max_length"`` instead of the checkpoint's
``"longest"``, which pads a batch to its longest prompt and so would make a row depend on its neighbours' prompts),
and its flow-matching noise is drawn from a generator of (episode seed, chunk's first step) and passed in as the
row's ``noise`` (SmolVLA otherwise draws one noise tensor for the whole batch from torch's global generator).

**Through the host's inference process** (``inference="unix://…"``, :mod:`.inference`): the server loads no
checkpoint; each episode's calls go to the one process of the host that holds the weights (and the batcher), which
answers with the episode's next actions. rlmesh's model server runs one session's predict at a time, so the shards of
a host each run such a thin server, and their requests meet in the inference process's batcher.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import rlmesh

from .batching import BATCHED_TYPES, STATS_ENV, ChunkBatcher, batchable
from .checkpoints import HUB_FOLDERS, SETTING, inspect, patched_transformers_env
from .smolvla import OFFLINE_ENV, instruction_of, pin_threads

__all__ = ["LeRobotPolicy"]

#: Attributes in which lerobot 0.4.4's policies keep the state of an episode (action and observation queues).
QUEUE_ATTRS = ("_queues", "_action_queue")
#: The backbone weights ACT, Diffusion Policy and VQ-BeT would fetch from torchvision when built; a checkpoint
#: carries its trained backbone.
BACKBONE_INIT = "pretrained_backbone_weights"
#: Batched types whose chunk starts from noise (flow matching): each row gets its own, from its episode's seed.
NOISE_TYPES = frozenset({"smolvla"})
#: Where a batched row carries its noise to :meth:`LeRobotPolicy._chunks` (not a LeRobot batch key).
NOISE_KEY = "rlmesh.noise"


class LeRobotPolicy(rlmesh.numpy.Model):
    """A LeRobot checkpoint on LIBERO observations (the module docstring); action float32 (7,) in [-1, 1].

    ``load(folder, root="", device="", rename_map="", sha256="", batch=0, batch_wait_ms=10.0)``: the checkpoint
    ``root/folder`` (``root`` defaults to ``$RLMESH_LEROBOT_CHECKPOINTS``), whose files must hash to ``sha256`` when
    given (what the catalog read); FileNotFoundError naming what is missing, refused or changed. ``batch`` ≥ 1: the
    fixed number of rows of every forward pass of a batched type (0: the policy's own ``select_action``, one call
    at a time, as before batching existed); ``batch_wait_ms``: how long a chunk request waits for others;
    ``inference``: the address of the host's inference process to ask instead of loading anything (:mod:`.inference`);
    ``threads``: torch's CPU threads (:func:`~.smolvla.pin_threads`; 0: torch's default)."""

    workflow_edition = "2026.06"
    spec = rlmesh.NO_ADAPTER  # reads LeRobot's LIBERO observation keys itself

    def load(self, folder: str = "", root: str = "", device: str = "", rename_map: str = "", sha256: str = "",
             batch: int = 0, batch_wait_ms: float = 10.0, inference: str = "", threads: int = 0) -> None:
        self.policy, self.batcher, self.remote = None, None, None
        if inference:  # a thin server: the host's inference process holds the checkpoint
            from .remote import InferenceClient

            self.remote, self.device = InferenceClient(inference), None
            return
        if not folder:
            return  # built to be described: a checkpoint is named by the catalog's load kwargs
        root = root or os.environ.get(SETTING, "")
        path = Path(root) / folder
        if not root or Path(folder).name != folder:
            raise FileNotFoundError(f"no LeRobot checkpoint {folder!r} under {SETTING}")
        report = inspect(path, {**os.environ, **patched_transformers_env()})
        if report["problem"]:
            raise FileNotFoundError(f"the LeRobot checkpoint {folder}: {report['problem']}")
        if sha256 and report["sha256"] != sha256:
            raise FileNotFoundError(f"the LeRobot checkpoint {folder} changed since the catalog read it ({sha256}, now "
                                    f"{report['sha256']}): an operator runs `manage.py migrate` to read it again")
        os.environ.update(OFFLINE_ENV)
        import torch

        self.torch = torch
        pin_threads(torch, threads)
        self.torch_device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.rename = json.loads(rename_map) if rename_map else camera_map(report["inputs"])
        self.type = report["type"]
        batched = int(batch) >= 1 and self.type in BATCHED_TYPES
        self.policy, self.preprocessor, self.postprocessor = _build(path, self.type, self.torch_device, batched)
        self.device = None  # numpy model: rlmesh moves nothing; the preprocessor's device step does
        self._lock = threading.Lock()
        if int(batch) >= 1 and batchable(self.type, self.policy.config):
            self.batcher = ChunkBatcher(self._chunks, int(batch), float(batch_wait_ms) / 1000.0,
                                        os.environ.get(STATS_ENV) or None)

    def batch(self, observation) -> dict:
        """LeRobot's policy input for one observation, before the checkpoint's preprocessor."""
        from lerobot.envs.utils import preprocess_observation

        batch = preprocess_observation({
            "pixels": {k: np.ascontiguousarray(v, dtype=np.uint8) for k, v in observation["pixels"].items()},
            "agent_pos": np.asarray(observation["agent_pos"], dtype=np.float32)})
        batch = {self.rename.get(k, k): v for k, v in batch.items()}
        batch["task"] = [instruction_of(observation)]
        return batch

    def predict(self, observation, context=None):
        """The next action of the episode's queue, or the first of a new chunk (computed with the episode's seeded
        generator)."""
        episode = context["state"] if context is not None else {}
        if self.remote is not None:
            return self._remote_predict(observation, episode, context)
        if self.policy is None:
            raise RuntimeError("no checkpoint loaded: load(folder=…) names one")
        if self.batcher is not None:
            return self._batched_predict(observation, episode, context)
        with self._lock, self.torch.inference_mode():
            if "queues" not in episode:
                self.policy.reset()
                episode["queues"] = {a: getattr(self.policy, a) for a in QUEUE_ATTRS if hasattr(self.policy, a)}
                seed = context.get("episode_seed") if context is not None else None
                episode["seed"], episode["chunks"] = int(seed) if seed is not None else 0, 0
            for name, value in episode["queues"].items():
                setattr(self.policy, name, value)
            # Each call that may compute a chunk draws from a generator of (episode seed, call): the episode's
            # actions follow from its seed, whatever ran before.
            self.torch.manual_seed((episode["seed"] * 1_000_003 + episode["chunks"]) % 2**63)
            episode["chunks"] += 1
            action = self.postprocessor(self.policy.select_action(self.preprocessor(self.batch(observation))))
        return np.clip(action.reshape(-1).float().cpu().numpy(), -1.0, 1.0).astype(np.float32)

    def _batched_predict(self, observation, episode: dict, context=None):
        """The next action of the episode's own chunk; a new chunk from the batcher when it is used up. As
        ``select_action`` does: the first ``n_action_steps`` of the chunk, each postprocessed when it is taken."""
        from collections import deque

        actions = episode.setdefault("actions", deque())
        if not actions:
            actions.extend(self.next_chunk(observation, episode, context))
        return actions.popleft()

    def next_chunk(self, observation, episode: dict, context=None) -> list[np.ndarray]:
        """:meth:`chunk_actions` for the episode whose state is ``episode`` (its seed, from ``context``'s
        ``episode_seed`` on its first chunk, default 0; and the step its next chunk starts at, counted here)."""
        if "seed" not in episode:
            seed = context.get("episode_seed") if context is not None else None
            episode["seed"], episode["step"] = int(seed) if seed is not None else 0, 0
        actions = self.chunk_actions(observation, episode["seed"], episode["step"])
        episode["step"] += len(actions)
        return actions

    def chunk_actions(self, observation, seed: int = 0, step: int = 0) -> list[np.ndarray]:
        """The actions of a new chunk for ``observation``: its first ``n_action_steps`` rows from the batcher, each
        postprocessed on its own (as ``select_action`` postprocesses the action it takes), float32 (7,) in [-1, 1].
        ``seed`` and ``step`` (the episode's seed and the step this chunk starts at) fix the noise of a
        :data:`NOISE_TYPES` policy: a (1, chunk_size, max_action_dim) float32 standard normal from a generator seeded
        with ``seed * 1_000_003 + step`` (as the unbatched path seeds torch's)."""
        torch = self.torch
        with self._lock, torch.inference_mode():
            row = self.preprocessor(self.batch(observation))
        if self.type in NOISE_TYPES:
            config = self.policy.config
            generator = torch.Generator().manual_seed((int(seed) * 1_000_003 + int(step)) % 2**63)
            row[NOISE_KEY] = torch.normal(0.0, 1.0, size=(1, config.chunk_size, config.max_action_dim),
                                          generator=generator, dtype=torch.float32)
        chunk = self.batcher.submit(row)[: self.policy.config.n_action_steps]
        with self._lock, self.torch.inference_mode():
            return [np.clip(self.postprocessor(a.unsqueeze(0)).reshape(-1).float().cpu().numpy(), -1.0, 1.0)
                    .astype(np.float32) for a in chunk]

    def _remote_predict(self, observation, episode: dict, context):
        """The next action of the episode, from the host's inference process: a chunk's actions at a time for a
        batching type (the episode's seed and step go with each request, so the process keeps no state for it), one
        at a time for the others (the process keeps their episode's queues)."""
        from collections import deque

        actions = episode.setdefault("actions", deque())
        if not actions:
            if "id" not in episode:
                episode["id"], episode["step"] = os.urandom(8).hex(), 0
            seed = context.get("episode_seed") if context is not None else None
            actions.extend(self.remote.actions(episode["id"], seed, observation, episode["step"]))
        episode["step"] += 1  # the actions taken: where a batching type's next chunk starts
        return actions.popleft()

    def _chunks(self, rows: list[dict]) -> list:
        """``predict_action_chunk`` on ``rows`` (preprocessed single-observation batches, ``batch`` of them) stacked
        into one batch: each row's chunk, (chunk_size, action_dim)."""
        torch = self.torch
        merged, noise = {}, None
        if NOISE_KEY in rows[0]:
            rows = [dict(r) for r in rows]
            noise = torch.cat([r.pop(NOISE_KEY) for r in rows]).to(self.torch_device)
        for key, value in rows[0].items():
            if isinstance(value, torch.Tensor):
                merged[key] = torch.cat([r[key] for r in rows])
            elif isinstance(value, list):
                merged[key] = [item for r in rows for item in r[key]]
            else:
                merged[key] = value
        with torch.inference_mode():  # the one thread that calls the policy while batching
            chunk = self.policy.predict_action_chunk(merged, **({"noise": noise} if noise is not None else {}))
        return list(chunk.unbind(0))


#: LIBERO's cameras as ``preprocess_observation`` names them: agentview, then wrist.
LIBERO_CAMERAS = ("observation.images.image", "observation.images.image2")


def camera_map(inputs: dict) -> dict[str, str]:
    """The rename a checkpoint needs when its cameras are named otherwise than LIBERO's: its visual inputs (3-dim
    shapes) that are not LIBERO's names take LIBERO's cameras in order (agentview first); {} when they match."""
    cameras = [name for name, shape in inputs.items() if len(shape) == 3 and name not in LIBERO_CAMERAS]
    free = [c for c in LIBERO_CAMERAS if c not in inputs]
    return dict(zip(free, cameras))


def _build(path: Path, policy_type: str, device: str, batched: bool = False):
    """``(policy, preprocessor, postprocessor)`` of the checkpoint at ``path``, on ``device``, offline. ``batched``:
    built for fixed-shape forward passes (SmolVLA's prompt tokenized to ``tokenizer_max_length``; the module
    docstring)."""
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors

    config = PreTrainedConfig.from_pretrained(str(path))
    config.device = device
    if hasattr(config, BACKBONE_INIT):
        setattr(config, BACKBONE_INIT, None)
    overrides = {"device_processor": {"device": device}}
    hub = {setting: os.environ.get(setting, "") for setting, _ in HUB_FOLDERS.get(policy_type, []) if setting}
    if policy_type == "smolvla":
        config.vlm_model_name, config.load_vlm_weights = hub["RLMESH_SMOLVLA_BACKBONE_DIR"], False
        if batched:  # torch.compile(mode="max-autotune") picks kernels by timing them, per process: other bits
            config.compile_model = False
        overrides["tokenizer_processor"] = {"tokenizer_name": hub["RLMESH_SMOLVLA_BACKBONE_DIR"],
                                            **({"padding": "max_length"} if batched else {})}
    elif policy_type in ("pi0", "pi05", "pi0_fast"):
        overrides["tokenizer_processor"] = {"tokenizer_name": hub["RLMESH_PALIGEMMA_TOKENIZER_DIR"]}
    elif policy_type == "xvla":
        config.tokenizer_name = hub["RLMESH_BART_TOKENIZER_DIR"]
    policy = get_policy_class(policy_type).from_pretrained(str(path), config=config).to(device).eval()
    present = {step["registry_name"] for step in json.loads((path / "policy_preprocessor.json").read_text())["steps"]
               if isinstance(step, dict) and "registry_name" in step}
    pre, post = make_pre_post_processors(config, pretrained_path=str(path), preprocessor_overrides={
        k: v for k, v in overrides.items() if k in present})
    if batched and policy_type == "smolvla":
        _check_fixed_prompt(pre, config)
    return policy, pre, post


def _check_fixed_prompt(pre, config) -> None:
    """Raise ValueError unless ``pre`` tokenizes every prompt to ``config.tokenizer_max_length`` tokens (padding
    ``max_length``, truncation on): what makes a batched SmolVLA row independent of its neighbours' prompts. A
    checkpoint whose tokenizer step is saved under another name would otherwise keep ``"longest"`` silently."""
    steps = [s for s in getattr(pre, "steps", []) if type(s).__name__ == "TokenizerProcessorStep"]
    fixed = [s for s in steps if s.padding == "max_length" and s.truncation
             and s.max_length == config.tokenizer_max_length]
    if len(steps) != 1 or not fixed:
        found = [(s.padding, s.truncation, s.max_length) for s in steps]
        raise ValueError(f"cannot batch this SmolVLA checkpoint: its preprocessor must have one tokenizer step "
                         f"padding to max_length {config.tokenizer_max_length} with truncation; found {found or 'none'}")
