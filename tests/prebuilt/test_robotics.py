"""Prebuilt MuJoCo locomotion and gymnasium-robotics envs on real rlmesh servers: success sources, physics
perturbation, rendered videos."""

from __future__ import annotations

import pytest

from tests.support.execution import create, episodes, run_all

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path, monkeypatch):
    settings.MEDIA_ROOT = tmp_path / "media"
    from evaluations.runs import loop as execution

    monkeypatch.setattr(execution, "HEARTBEAT_SECONDS", 3600)


def _task(env: str, task_id: str, **extra) -> dict:
    return {"env": env, "taskId": task_id, "episodes": 2, "seed": 3, **extra}


def test_goal_reaching_success_comes_from_the_env_flag(tenant_a):
    body = {"models": ["prebuilt/random"], "tasks": [_task("prebuilt/gymnasium-robotics", "fetch/FetchReach-v4"),
                                                    _task("prebuilt/gymnasium-robotics", "maze/PointMaze_UMaze-v3", maxSteps=40)]}
    evaluation = create(tenant_a, body)
    run_all(evaluation)
    eps = episodes(evaluation)
    assert evaluation.status == "completed" and len(eps) == 4
    assert {e.success_source for e in eps} == {"env"}
    fetch = [e for e in eps if e.workload.task_id.startswith("fetch/")]
    assert all(e.steps == 50 and e.truncated for e in fetch)


def test_physics_perturbation_changes_locomotion_reproducibly_and_videos_render(tenant_a):
    tasks = [_task("prebuilt/mujoco", "locomotion/Hopper-v5", maxSteps=40, perturbation=p) for p in ("none", "physics:0.5")]
    tasks[1]["record"] = "first:1"
    body = {"models": ["prebuilt/random"], "tasks": tasks}
    first, second = create(tenant_a, body), create(tenant_a, body)
    assert first.workloads.get(index=1).env_kwargs == {"env_id": "Hopper-v5", "physics": 0.5}
    run_all(first)
    run_all(second)
    a, b = episodes(first), episodes(second)
    outcome = lambda eps: [(e.workload.perturbation, e.seed, e.steps, round(e.reward, 6)) for e in eps]  # noqa: E731
    assert outcome(a) == outcome(b)
    plain = [e.reward for e in a if e.workload.perturbation == "none"]
    shaken = [e.reward for e in a if e.workload.perturbation == "physics:0.5"]
    assert plain != shaken  # same seeds, same random actions: only the physics differs
    recorded = [e for e in a if e.video]
    assert len(recorded) == 1 and recorded[0].video_meta["width"] == 256 and recorded[0].video_meta["frames"] == recorded[0].steps + 1
