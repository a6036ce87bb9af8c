"""Seconds per action chunk of each LeRobot policy type at its published size, on this host (CPU here), in one run.
Runs in .venv-lerobot (lerobot 0.4.4)::

    .venv-lerobot/bin/python bench/bench_lerobot_chunks.py [types…] [--chunks N] [--dtype float32|bfloat16]

Each type is built from its config class's defaults (lerobot's published architecture: ACT's ResNet-18 and 4+1
transformer layers, Diffusion Policy's U-Net with 100 denoising steps, π0 / π0.5's PaliGemma Gemma-2B with the
Gemma-300M action expert and 10 flow steps, …) for LIBERO's features (two 256² cameras, state 8, action 7), with
random weights and no pretrained backbone (nothing is downloaded). A chunk is the first ``select_action`` after
``reset()`` (it plans ``n_action_steps`` actions), timed after one warm-up chunk; the language tokens π0 / π0.5
read are fed as random ids of a 48-token prompt (the tokenizer, hub-only, is not the cost). SmolVLA at its
published size is bench/bench_smolvla.py's ``published``. Prints one JSON line per type: parameters, chunk length,
seconds per chunk (median and each), actions per second, resident memory. Not a timed test.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "fixtures")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

#: Types built here at their defaults; the backbone's ImageNet initialisation is skipped (it downloads).
TYPES = ("act", "diffusion", "vqbet", "tdmpc", "pi0", "pi05")
NO_PRETRAINED = {"act": {"pretrained_backbone_weights": None}, "diffusion": {"pretrained_backbone_weights": None},
                 "vqbet": {"pretrained_backbone_weights": None}}
PROMPT_TOKENS = 48


def build(policy_type: str, dtype: str):
    """The policy of ``policy_type`` at its config's defaults for LIBERO's features (as the tests' checkpoints name
    them: tests/fixtures/build_tiny_lerobot.features), random weights, eval mode."""
    from build_tiny_lerobot import features
    from lerobot.policies.factory import get_policy_class, make_policy_config

    inputs, outputs = features(policy_type)
    extra = dict(NO_PRETRAINED.get(policy_type, {}))
    if policy_type in ("pi0", "pi05"):
        extra["dtype"] = dtype
    config = make_policy_config(policy_type, input_features=inputs, output_features=outputs, device="cpu", **extra)
    policy = get_policy_class(policy_type)(config)
    return policy.eval(), config


def batch_for(config, generator):
    import torch

    batch = {}
    for name, feature in config.input_features.items():
        shape = (1, *feature.shape)
        batch[name] = torch.rand(shape, generator=generator) if len(feature.shape) == 3 else torch.randn(shape, generator=generator)
    batch["observation.language.tokens"] = torch.randint(0, 1000, (1, PROMPT_TOKENS), generator=generator)
    batch["observation.language.attention_mask"] = torch.ones(1, PROMPT_TOKENS, dtype=torch.bool)
    batch["task"] = ["put the bowl on the plate"]
    return batch


def chunk_length(config) -> int:
    """Actions one chunk plans: ``n_action_steps`` (VQ-BeT: ``action_chunk_size``)."""
    return int(getattr(config, "n_action_steps", None) or getattr(config, "action_chunk_size", None) or 1)


def measure(policy_type: str, chunks: int, dtype: str) -> dict:
    import torch

    started = time.perf_counter()
    policy, config = build(policy_type, dtype)
    built = time.perf_counter() - started
    generator = torch.Generator().manual_seed(0)
    batch = batch_for(config, generator)
    seconds = []
    with torch.no_grad():
        for i in range(chunks + 1):  # the first is a warm-up
            policy.reset()
            t = time.perf_counter()
            policy.select_action(batch)
            if i:
                seconds.append(time.perf_counter() - t)
    median = statistics.median(seconds)
    return {"type": policy_type, "parameters": sum(p.numel() for p in policy.parameters()), "dtype": dtype,
            "chunk": chunk_length(config), "secondsPerChunk": round(median, 3), "each": [round(s, 3) for s in seconds],
            "actionsPerSecond": round(chunk_length(config) / median, 2), "buildSeconds": round(built, 1),
            "threads": torch.get_num_threads(), "maxRssMiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def main(argv: list[str]) -> None:
    chunks = int(argv[argv.index("--chunks") + 1]) if "--chunks" in argv else 3
    dtype = argv[argv.index("--dtype") + 1] if "--dtype" in argv else "float32"
    flags = {"--chunks", "--dtype", str(chunks), dtype}
    types = [a for a in argv if a not in flags] or list(TYPES)
    for policy_type in types:
        try:
            print(json.dumps(measure(policy_type, chunks, dtype)), flush=True)
        except Exception as exc:  # noqa: BLE001 - a type that cannot be built here is reported, not fatal
            print(json.dumps({"type": policy_type, "error": f"{type(exc).__name__}: {exc}"[:400]}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
