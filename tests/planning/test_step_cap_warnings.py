"""A ``maxSteps`` cap below the env's own horizon (or a ``survived`` criterion longer than it) changes a task's
success verdict: the preview and the submit say so for every criterion kind (planning.horizons)."""

from __future__ import annotations

import pytest

CLASSIC = "prebuilt/classic-control"


def preview_warnings(api, task_id: str, **task) -> list[str]:
    body = {"models": ["prebuilt/random"], "tasks": [{"env": CLASSIC, "taskId": task_id, "episodes": 2, **task}]}
    r = api.post("/v1/evaluation-previews", body, format="json")
    assert r.status_code == 200, r.content
    # only the step-cap warnings (a sample-size or no-worker warning may come along)
    return [w for w in r.json()["warnings"] if w.startswith(("tasks[0].maxSteps", "tasks[0].successCriterion"))]


def test_a_shortened_pendulum_is_a_free_success_and_the_preview_says_so(api):
    """Field case: random scored 20/20 on Pendulum with maxSteps 10 (return ≥ −163 > −200), with no warning."""
    (warning,) = preview_warnings(api, "classic/Pendulum-v1", maxSteps=10)
    assert warning.startswith("tasks[0].maxSteps: 10 is below the 200 steps")
    assert "not comparable with the full-length task" in warning
    assert "every episode will count as a success" in warning
    (warning,) = preview_warnings(api, "classic/Pendulum-v1", maxSteps=100)  # −1627 < −200: not certain, easier
    assert "never positive" in warning and "the threshold is easier" in warning


def test_a_shortened_positive_threshold_and_the_other_kinds_warn(api):
    (lander,) = preview_warnings(api, "classic/LunarLander-v3", maxSteps=5)
    assert "below the 1000 steps" in lander and "positive threshold" in lander and "harder" in lander
    (acrobot,) = preview_warnings(api, "classic/Acrobot-v1", maxSteps=50)  # terminated
    assert "below the 500 steps" in acrobot and "biased low" in acrobot
    (cartpole,) = preview_warnings(api, "classic/CartPole-v1", maxSteps=5)  # survived 500
    assert "every episode will count as a failure" in cartpole
    (loose,) = preview_warnings(api, "classic/CartPole-v1", maxSteps=50, successCriterion={"kind": "survived"})
    assert "surviving the cap counts as success" in loose


def test_a_survived_criterion_longer_than_the_env_runs_warns(api):
    """Field case: CartPole with {"kind": "survived", "steps": 1000} can never succeed (Gymnasium truncates at 500)."""
    (warning,) = preview_warnings(api, "classic/CartPole-v1", successCriterion={"kind": "survived", "steps": 1000})
    assert warning.startswith("tasks[0].successCriterion.steps: 1000 is above the 500 steps")
    assert "every episode will count as a failure" in warning


@pytest.mark.parametrize("task_id,task", [
    ("classic/Pendulum-v1", {}), ("classic/Pendulum-v1", {"maxSteps": 200}), ("classic/LunarLander-v3", {"maxSteps": 1000}),
    ("classic/CartPole-v1", {"successCriterion": {"kind": "survived", "steps": 500}}),
])
def test_a_full_length_task_has_no_step_cap_warning(api, task_id, task):
    assert preview_warnings(api, task_id, **task) == []


def test_the_submit_says_it_too(api):
    body = {"models": ["prebuilt/random"], "tasks": [{"env": CLASSIC, "taskId": "classic/Pendulum-v1", "episodes": 1,
                                                      "maxSteps": 10}]}
    r = api.post("/v1/evaluations", body, format="json")
    assert r.status_code == 201 and any("every episode will count as a success" in w for w in r.json()["warnings"])
