"""A CI gate end to end with the unmodified official CLI: a nightly baseline, a candidate that is worse, `rlmesh eval
get` still printing the evaluation (it ignores the `regression` extension), and the manual's curl | jq one-liner (docs/using/comparisons.md)
failing the build on the regression."""

from __future__ import annotations

import json
import subprocess

import pytest

pytestmark = pytest.mark.live

#: The manual's gate (docs/using/comparisons.md), verbatim but for the id.
GATE = ('curl -fsS -H "Authorization: Bearer $RLMESH_API_KEY" "$RLMESH_PLATFORM_URL/v1/evaluations/$ID" '
        "| jq -e '.regression | .comparable and (.regressed | not)'")


def submit(live, model: str) -> str:
    body = {"model": model, "tags": {"suite": "ci-nightly"},
            "tasks": [{"env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "episodes": 20, "seed": 0}]}
    r = live.cli("eval", "submit", "-", "--wait", stdin=json.dumps(body))
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.split("Submitted ")[1].split()[0]


def gate(live, eval_id: str) -> subprocess.CompletedProcess:
    env = {"RLMESH_API_KEY": live.api_key, "RLMESH_PLATFORM_URL": live.url, "ID": eval_id, "PATH": "/usr/bin:/bin"}
    return subprocess.run(["bash", "-c", GATE], env=env, capture_output=True, text=True, timeout=60)


def test_a_ci_gate_fails_on_a_regression_and_passes_without(live):
    baseline = submit(live, "prebuilt/classic-control-heuristics")
    r = subprocess.run(
        ["curl", "-fsS", "-X", "PUT", "-H", f"Authorization: Bearer {live.api_key}", "-H", "Content-Type: application/json",
         "-d", json.dumps({"evaluation": baseline}), f"{live.url}/v1/baselines/suite:ci-nightly"],
        capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout)["evaluation"] == baseline, r.stderr

    same = submit(live, "prebuilt/classic-control-heuristics")
    assert gate(live, same).returncode == 0
    worse = submit(live, "prebuilt/random")
    failed = gate(live, worse)
    assert failed.returncode == 1 and failed.stdout.strip() == "false"

    r = live.cli("eval", "get", worse)  # the official CLI prints the body with the extension
    assert r.returncode == 0, r.stderr
    body = json.loads(r.stdout)
    assert body["status"] == "completed" and body["regression"]["regressed"] is True
    assert body["regression"]["baselines"][0]["regressions"][0]["difference"] < -0.5
    r = live.cli("eval", "get", baseline)
    assert json.loads(r.stdout)["baselineFor"] == ["suite:ci-nightly"]
