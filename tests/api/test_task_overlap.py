"""A task listed twice (same env, scenario, params, perturbation, overlapping seeds) runs the same episodes again and
its scores pool them: the preview and the submit warn, naming the repeated entry and the seeds it repeats."""

from __future__ import annotations

ACROBOT = {"env": "prebuilt/classic-control", "taskId": "classic/Acrobot-v1", "episodes": 3, "seed": 0}


def overlap(api, *tasks, url="/v1/evaluation-previews") -> list[str]:
    r = api.post(url, {"models": ["prebuilt/random"], "tasks": list(tasks)}, format="json")
    assert r.status_code in (200, 201), r.content
    return [w for w in r.json()["warnings"] if " repeats tasks[" in w]


def test_a_task_listed_twice_warns_with_its_path_and_the_interval_it_narrows(api):
    """Field case: Acrobot seeds 0–2 listed twice scored n=6 (interval [0.61, 1.0]) where n=3 gives [0.44, 1.0]."""
    (warning,) = overlap(api, ACROBOT, ACROBOT)
    assert warning.startswith("tasks[1]: repeats tasks[0] (classic/Acrobot-v1")
    assert "seeds 0–2" in warning and "those 3 episodes run again" in warning and "independent" in warning
    (warning,) = overlap(api, ACROBOT, dict(ACROBOT, seed=2, episodes=5), url="/v1/evaluations")
    assert "seeds 2–2" in warning and "that episode runs again" in warning
    # the scenario index names the same scenario
    assert len(overlap(api, ACROBOT, dict(ACROBOT, taskId="classic/2"))) == 1


def test_distinct_tasks_do_not_warn(api):
    assert overlap(api, ACROBOT, dict(ACROBOT, seed=3)) == []  # the next seeds
    assert overlap(api, ACROBOT, dict(ACROBOT, perturbation="obs_noise:0.1")) == []
    assert overlap(api, ACROBOT, dict(ACROBOT, taskId="classic/CartPole-v1")) == []
