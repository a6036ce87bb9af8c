"""CPU (or GPU) cost of prebuilt/smolvla/libero's model per action chunk and per queued action, in one run (not a timed
test). Runs in .venv-lerobot::

    .venv-lerobot/bin/python bench/bench_smolvla.py tiny [chunks]
    .venv-lerobot/bin/python bench/bench_smolvla.py published [chunks]
    .venv-lerobot/bin/python bench/bench_smolvla.py <policy dir> <backbone dir> [chunks]
    .venv-lerobot/bin/python bench/bench_smolvla.py build-published <out dir>

``build-published`` only builds the published-shape checkpoint into ``<out dir>/policy`` and ``<out dir>/backbone``
(bench/bench_batching.py ``--model smolvla-published`` serves it through the platform).

``tiny`` builds the tests' random checkpoint (tests/fixtures/build_tiny_smolvla.py) in a temp dir; ``published`` builds
random weights at the published shape (SmolVLM2-500M's text and vision sizes, 16 VLM layers kept, chunk 50, 10
denoising steps; a word-level tokenizer: its vocabulary is small, which only shrinks the embedding table). Each chunk
is one episode's first predict (``select_action`` plans 50 actions), timed after one warm-up; then the 49 queued
actions of that chunk. Prints one JSON line: parameters, device, threads, seconds per chunk (each), ms per queued
action (mean), resident memory.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "fixtures")]


def _published(out: Path) -> tuple[Path, Path]:
    """Random weights at the published SmolVLA shape (SmolVLM2-500M-Video-Instruct: text hidden 960, 32 layers of
    which 16 are kept, 15 heads / 5 KV heads, head dim 64; SigLIP 512², patch 16, hidden 768, 12 layers)."""
    import build_tiny_smolvla as b
    from transformers import SmolVLMConfig

    b.build_backbone(out / "backbone")
    config = SmolVLMConfig.from_pretrained(out / "backbone")
    config.text_config.update(dict(hidden_size=960, intermediate_size=2560, num_hidden_layers=32,
                                   num_attention_heads=15, num_key_value_heads=5, head_dim=64))
    config.vision_config.update(dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                                     num_attention_heads=12))
    config.save_pretrained(out / "backbone")
    original = b.build_policy.__globals__

    def build(folder: Path, backbone: Path) -> int:
        from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig

        init = SmolVLAConfig.__init__

        def sixteen_layers(self, *args, **kwargs):
            init(self, *args, **{**kwargs, "num_vlm_layers": 16})

        SmolVLAConfig.__init__ = sixteen_layers
        try:
            return original["build_policy"](folder, backbone)
        finally:
            SmolVLAConfig.__init__ = init

    build(out / "policy", out / "backbone")
    return out / "policy", out / "backbone"


def main(argv: list[str]) -> None:
    import numpy as np
    import torch

    from evaluations.prebuilt.lerobot.smolvla import SmolVLALibero

    tmp = Path(tempfile.mkdtemp(prefix="bench-smolvla-"))
    if argv[1] == "tiny":
        import build_tiny_smolvla as b

        b.build_backbone(tmp / "backbone")
        b.build_policy(tmp / "policy", tmp / "backbone")
        policy, backbone, rest = tmp / "policy", tmp / "backbone", argv[2:]
    elif argv[1] == "published":
        (policy, backbone), rest = _published(tmp), argv[2:]
    else:
        policy, backbone, rest = Path(argv[1]), Path(argv[2]), argv[3:]
    chunks = int(rest[0]) if rest else 3
    model = SmolVLALibero.from_config(policy_dir=str(policy), backbone_dir=str(backbone))
    rng = np.random.default_rng(0)

    def observation():
        return {"pixels": {k: rng.integers(0, 256, (256, 256, 3), dtype=np.uint8) for k in ("image", "image2")},
                "agent_pos": rng.normal(size=8).astype(np.float32), "instruction": "put the bowl on the plate"}

    chunk_s, queued_ms = [], []
    for episode in range(chunks + 1):
        state = {}
        t0 = time.perf_counter()
        model.predict(observation(), {"episode_id": str(episode), "episode_seed": episode, "state": state})
        if episode:  # the first is a warm-up
            chunk_s.append(round(time.perf_counter() - t0, 3))
        for _ in range(model.policy.config.n_action_steps - 1):
            t0 = time.perf_counter()
            model.predict(observation(), {"episode_id": str(episode), "episode_seed": episode, "state": state})
            if episode:
                queued_ms.append((time.perf_counter() - t0) * 1000)
    print(json.dumps({
        "checkpoint": argv[1] if argv[1] in ("tiny", "published") else str(policy),
        "parameters": sum(p.numel() for p in model.policy.parameters()), "device": model.torch_device,
        "threads": torch.get_num_threads(), "chunkSize": model.policy.config.chunk_size,
        "secondsPerChunk": chunk_s, "msPerQueuedAction": round(sum(queued_ms) / len(queued_ms), 2),
        "maxRssMB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "build-published":
        print(json.dumps({k: str(v) for k, v in zip(("policy", "backbone"), _published(Path(sys.argv[2])))}))
    else:
        main(sys.argv)
