"""The seed's own request — prebuilt/smolvla/libero on prebuilt/libero, libero_goal/0 — through the official CLI
against a live platform: refused at models[0].model where the weights are not installed; with the tiny SmolVLA
checkpoint installed, it runs to completion (the model served from .venv-lerobot, the env from .venv-libero)."""

from __future__ import annotations

import json
import os

import pytest

from tests.live.conftest import ROOT
from tests.support.live import LivePlatform
from tests.support.smolvla import LEROBOT_INSTALLED, build_tiny_checkpoint

pytestmark = [pytest.mark.live, pytest.mark.slow]

SEED = {"models": [{"model": "prebuilt/smolvla/libero"}],
        "tasks": [{"taskId": "libero_goal/0", "env": "prebuilt/libero", "episodes": 5}], "tags": {"team": "robotics"}}


def _needs(live) -> None:
    if not LEROBOT_INSTALLED:
        pytest.fail("the LeRobot venv is missing: run scripts/setup-lerobot.sh (make test does)")
    if not (ROOT / ".venv-libero" / "bin" / "python").exists():
        pytest.fail("the LIBERO venv is missing: run scripts/setup-libero.sh (make test does)")
    if not any(i["reference"] == "prebuilt/libero" for i in live.api("/v1/images?kind=env")["items"]):
        pytest.skip("prebuilt/libero is not in this catalog (it comes with the LIBERO env)")


def _write(tmp_path, body: dict) -> str:
    path = tmp_path / "seed.json"
    path.write_text(json.dumps(body))
    return str(path)


def test_the_seed_request_is_refused_where_the_weights_are_not_installed(live, tmp_path):
    assert not os.environ.get("RLMESH_SMOLVLA_LIBERO_DIR"), "this test needs a platform without the weights"
    before = {e["id"] for e in live.api("/v1/evaluations?limit=500")["items"]}
    for args in (("--preview",), ()):
        r = live.cli("eval", "submit", _write(tmp_path, SEED), *args)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "HTTP 400" in r.stderr and "the SmolVLA LIBERO weights are not installed" in r.stderr, r.stderr
        assert "RLMESH_SMOLVLA_LIBERO_DIR" in r.stderr
    # Nothing was written: the shared platform holds exactly the evaluations it held before (other tests' included).
    assert {e["id"] for e in live.api("/v1/evaluations?limit=500")["items"]} == before


@pytest.fixture(scope="module")
def with_weights(tmp_path_factory):
    """A live platform (SQLite, one worker) whose settings point at the tiny checkpoint's folders."""
    policy, backbone = build_tiny_checkpoint(tmp_path_factory.mktemp("smolvla-weights"))
    platform = LivePlatform(tmp_path_factory.mktemp("live-smolvla"), RLMESH_SMOLVLA_LIBERO_DIR=str(policy),
                            RLMESH_SMOLVLA_BACKBONE_DIR=str(backbone),
                            # LIBERO builds its scene before it listens: slower than 60 s on a loaded 2-core host
                            RLMESH_SERVER_READY_TIMEOUT="300")
    try:
        yield platform.start()
    finally:
        platform.stop()


def test_with_the_tiny_checkpoint_installed_the_seed_request_runs_to_completion(with_weights, tmp_path):
    _needs(with_weights)
    # The seed's body, kept short: 2 episodes of 12 policy steps (a SmolVLA chunk is 50; 12 steps cross no re-plan,
    # so the second episode proves the queue restarted: it would otherwise replay the first episode's chunk).
    body = {**SEED, "tasks": [{**SEED["tasks"][0], "episodes": 2, "maxSteps": 12}]}
    preview = with_weights.cli("eval", "submit", _write(tmp_path, body), "--preview", "--json")
    assert preview.returncode == 0, preview.stdout + preview.stderr
    r = with_weights.cli("eval", "submit", _write(tmp_path, body), "--wait", timeout=1500)
    assert r.returncode == 0, r.stdout + r.stderr
    eval_id = r.stdout.split("Submitted ")[1].split()[0]
    evaluation = with_weights.api(f"/v1/evaluations/{eval_id}")
    assert evaluation["status"] == "completed" and evaluation["progress"]["completedEpisodes"] == 2
    assert evaluation["tags"] == {"team": "robotics"}
    episodes = with_weights.episodes(eval_id)
    assert [e["status"] for e in episodes] == ["completed", "completed"], episodes
    assert all(e["steps"] == 12 and e["error"] in ("", None) for e in episodes), episodes
    model = evaluation["config"]["models"][0]
    assert model["source"] == "python+lerobot://evaluations.prebuilt.lerobot.smolvla:SmolVLALibero"
