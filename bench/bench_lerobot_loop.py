"""LeRobot's own evaluation loop on LIBERO, timed: the baseline ``bench_batching.py`` divides by (issue 36 part 3).
Runs in the LIBERO venv with lerobot appended to the path (:mod:`tests.support.libero_parity` says why)::

    MUJOCO_GL=egl HOME=/tmp/libero-home PYTHONPATH=$PWD .venv-libero/bin/python bench/bench_lerobot_loop.py \\
        <checkpoint folder> [--task libero_object/0] [--episodes 8] [--max-steps 0] [--threads 0]

What ``lerobot-eval --policy.path=<folder> --env.type=libero --env.task=<suite> --eval.batch_size=1`` builds, by
LeRobot's own code: the policy from the checkpoint (``PreTrainedConfig.from_pretrained``, the type's class,
``make_pre_post_processors`` with the saved pipelines), LeRobot's ``LiberoEnv`` (both cameras at 256², as the
platform renders them) through ``make_env`` and ``make_env_pre_post_processors``, and ``lerobot_eval.rollout`` for
each episode ``i`` (seed ``i``, init state ``i``: the platform's episode ``i`` of seed 0). ``--max-steps`` caps an
episode as the platform's ``maxSteps`` does (0: the suite's own cap). Prints one JSON line: episodes, steps, wall
seconds (policy loaded and env built before the clock starts, as the platform's servers are started before its
first episode), episodes per hour, successes, torch's threads (``--threads``: as the platform's
``RLMESH_MODEL_THREADS``; 0, torch's default, is what ``lerobot-eval`` runs with).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--task", default="libero_object/0")
    p.add_argument("--episodes", type=int, default=8)
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from evaluations.prebuilt.libero import private_config_dir

    private_config_dir()
    from tests.support.libero_parity import import_lerobot

    import_lerobot()
    import torch

    if args.threads >= 1:
        torch.set_num_threads(args.threads)
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.envs.configs import LiberoEnv as LiberoEnvConfig
    from lerobot.envs.factory import make_env, make_env_pre_post_processors
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    from lerobot.scripts.lerobot_eval import rollout

    suite, _, task = args.task.partition("/")
    policy_config = PreTrainedConfig.from_pretrained(str(args.folder))
    policy_config.device = "cpu"
    policy = get_policy_class(policy_config.type).from_pretrained(str(args.folder), config=policy_config).eval()
    pre, post = make_pre_post_processors(policy_config, pretrained_path=str(args.folder),
                                         preprocessor_overrides={"device_processor": {"device": "cpu"}})
    env_config = LiberoEnvConfig(task=suite, task_ids=[int(task)], observation_height=256, observation_width=256,
                                 episode_length=args.max_steps or None)
    vec = make_env(env_config, n_envs=1)[suite][int(task)]
    env_pre, env_post = make_env_pre_post_processors(env_config, policy_config)
    steps = successes = 0
    started = time.monotonic()
    for i in range(args.episodes):
        vec.envs[0].init_state_id = i
        with torch.inference_mode():
            out = rollout(vec, policy, env_pre, env_post, pre, post, seeds=[i])
        done = out["done"][0]
        steps += int(done.float().argmax()) + 1 if bool(done.any()) else done.numel()
        successes += bool(out["success"][0].any())
    wall = time.monotonic() - started
    vec.close()
    print(json.dumps({"loop": "lerobot_eval.rollout", "task": args.task, "episodes": args.episodes, "steps": steps,
                      "wallSeconds": round(wall, 1), "episodesPerHour": round(args.episodes / wall * 3600, 1),
                      "successes": successes, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
